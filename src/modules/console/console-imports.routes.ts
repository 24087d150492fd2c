// Importing users in the console: upload a file, which is checked by a dry run first; the
// operator sees its counts and error lines and confirms; the import then runs from the same
// file, kept on this server meanwhile (ConsoleUploads), and its page follows its progress.
// The pages call the imports service as the API's routes do, with the session as the caller.

import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Busboy, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../../clock.js';
import { DomainError } from '../../domain-error.js';
import { ProblemError, problem } from '../../problems.js';
import type { ImportErrorPosition } from '../../store/store.js';
import { ImportParams, ImportQuery, toImportJobResource } from '../imports/imports.schemas.js';
import {
  type ImportOptions,
  MAX_IMPORT_BYTES,
  parseProviderMap,
} from '../imports/imports.service.js';
import {
  type ConsoleServices,
  consoleOrigin,
  formProblem,
  noticeOf,
  redirectAfterPost,
  sendPage,
  sessionOf,
  viewerOf,
} from './console-kit.js';
import type { FieldErrors } from './console-layout.view.js';
import {
  type ImportFormValues,
  importFormPage,
  importJobPage,
  importJobSection,
} from './console-imports.view.js';
import type { ConsoleUploads, SpooledFile } from './console-uploads.js';
import { assertBody } from './console.schemas.js';
import { csrfTokenMatches } from './console.service.js';

/** Error lines a job's page shows at a time. */
const ERRORS_PAGE_SIZE = 100;
const API_BASE = '/iam/api/v1';
const MULTIPART = 'multipart/form-data';

const NOTICES: Record<string, string> = {
  started: 'The import started.',
  cancelled: 'It was cancelled.',
  finished: 'It had finished already; nothing was cancelled.',
};

/** What the upload form sent: its fields (first value of each) and its file. */
interface Upload {
  fields: Map<string, string>;
  file: SpooledFile | null;
  fileName: string;
  mimeType: string;
}

const forbiddenForm = () =>
  problem(
    'forbidden',
    'This form did not come from this console page (its CSRF token is missing or wrong). Reload the page and try again.',
  );

export function registerConsoleImportRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
  deps: { clock: Clock; uploads: ConsoleUploads },
): void {
  const { imports, applications } = services;
  const { clock, uploads } = deps;
  const base = (clientId: string) => `/console/applications/${clientId}/users`;
  const clientIdOf = (request: FastifyRequest) =>
    (request.params as { client_id: string }).client_id;
  /** The session that owns an upload: the digest of its id (never the id itself). */
  const ownerOf = (request: FastifyRequest) => sessionOf(request).record.idDigest;

  /** The job, when it is one of this application's and the key may see it; else 404. */
  async function findJob(request: FastifyRequest) {
    const { id } = request.params as { id: string };
    // Checked as the API checks it: a job id is never sent to the store unchecked.
    try {
      assertBody(ImportParams, { id });
    } catch {
      throw problem('not-found', `There is no import "${id}".`);
    }
    const job = await imports.findImport(id, viewerOf(request).applications);
    if (job.clientId !== clientIdOf(request)) {
      throw problem('not-found', `There is no import "${id}" of this application.`);
    }
    return job;
  }

  async function jobView(request: FastifyRequest, message: string | null = null) {
    const job = await findJob(request);
    const query = request.query as { errors_after?: string };
    const after = query.errors_after === undefined ? null : decodeErrorCursor(query.errors_after);
    const rows = await imports.listImportErrors(
      job.id,
      viewerOf(request).applications,
      after,
      ERRORS_PAGE_SIZE + 1,
    );
    const errors = rows.slice(0, ERRORS_PAGE_SIZE);
    return {
      job,
      resource: toImportJobResource(job, API_BASE, clock.now()),
      errors,
      nextErrors: rows.length > ERRORS_PAGE_SIZE ? encodeErrorCursor(errors.at(-1)!) : null,
      uploadKept: job.dryRun && uploads.has(job.id, ownerOf(request)),
      message,
    };
  }

  app.get(
    '/applications/:client_id/users/import',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function newImport(request, reply) {
      const clientId = clientIdOf(request);
      await applications.findApplication(clientId);
      return sendPage(
        reply,
        200,
        importFormPage(viewerOf(request), clientId, emptyValues(), new Map(), null),
      );
    },
  );

  // A scope of its own: only this route takes multipart bodies, handed over as the stream.
  void app.register(async function uploadScope(scope) {
    scope.addContentTypeParser(MULTIPART, function passUpload(_request, payload, done) {
      done(null, payload);
    });

    scope.post(
      '/applications/:client_id/users/import',
      {
        config: { role: 'users:write', consoleUpload: true },
        // Not read into memory: spooled to a file, its bytes counted against this.
        bodyLimit: MAX_IMPORT_BYTES,
        schema: { hide: true },
      },
      async function startDryRun(request, reply) {
        const clientId = clientIdOf(request);
        if (!isMultipart(request)) {
          throw problem('unsupported-media-type', 'Send the import form with its file.');
        }
        const upload = await readUpload(request, uploads);
        const values = valuesOf(upload.fields);
        const checked = checkOptions(values, upload);
        if (!checked.ok) {
          await upload.file?.remove();
          return sendPage(
            reply,
            400,
            importFormPage(viewerOf(request), clientId, values, checked.errors, null),
          );
        }
        const file = upload.file!;
        try {
          const { job } = await imports.startImport(
            clientId,
            createReadStream(file.path),
            { ...checked.options, dryRun: true },
            consoleOrigin(request),
          );
          uploads.keep(job.id, {
            file,
            clientId,
            options: checked.options,
            owner: ownerOf(request),
          });
          return redirectAfterPost(reply, `${base(clientId)}/imports/${job.id}`);
        } catch (error) {
          await file.remove();
          throw error;
        }
      },
    );
  });

  app.get(
    '/applications/:client_id/users/imports/:id',
    { config: { role: 'users:read' }, schema: { hide: true } },
    async function showImport(request, reply) {
      const view = await jobView(request);
      return sendPage(
        reply,
        200,
        importJobPage(viewerOf(request), view, noticeOf(request, NOTICES)),
      );
    },
  );

  app.get(
    '/applications/:client_id/users/imports/:id/progress',
    // The page asks by itself while the job runs: not the operator's activity.
    { config: { role: 'users:read', consolePassive: true }, schema: { hide: true } },
    async function followImport(request, reply) {
      return sendPage(reply, 200, importJobSection(viewerOf(request), await jobView(request)));
    },
  );

  app.post(
    '/applications/:client_id/users/imports/:id/run',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function runImport(request, reply) {
      const clientId = clientIdOf(request);
      const dryRun = await findJob(request);
      const refuse = async (message: string) =>
        sendPage(
          reply,
          409,
          importJobPage(viewerOf(request), await jobView(request, message), null),
        );
      if (!dryRun.dryRun || dryRun.status !== 'succeeded') {
        return refuse('Only a dry run that finished leads to an import.');
      }
      const kept = uploads.take(dryRun.id, ownerOf(request));
      if (kept === undefined) {
        return refuse(
          'The file of this dry run is no longer kept here (or was imported already); upload it again.',
        );
      }
      try {
        const { job, finished } = await imports.startImport(
          clientId,
          createReadStream(kept.file.path),
          { ...kept.options, dryRun: false },
          consoleOrigin(request),
        );
        void finished.finally(() => kept.file.remove());
        return redirectAfterPost(reply, `${base(clientId)}/imports/${job.id}?notice=started`);
      } catch (error) {
        await kept.file.remove();
        throw error;
      }
    },
  );

  app.post(
    '/applications/:client_id/users/imports/:id/cancel',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function cancelImport(request, reply) {
      const clientId = clientIdOf(request);
      const job = await findJob(request);
      let notice = 'cancelled';
      try {
        await imports.cancelImport(job.id, viewerOf(request).applications);
        // A cancelled dry run leads to no import: its file goes.
        if (job.dryRun) uploads.discard(job.id);
      } catch (error) {
        if (!(error instanceof DomainError && error.code === 'conflict')) throw error;
        notice = 'finished';
      }
      return redirectAfterPost(reply, `${base(clientId)}/imports/${job.id}?notice=${notice}`);
    },
  );
}

function emptyValues(): ImportFormValues {
  return { format: 'tessera', keycloak_client: '', on_conflict: 'update', provider_map: '' };
}

function valuesOf(fields: Map<string, string>): ImportFormValues {
  const text = (name: string) => (fields.get(name) ?? '').trim();
  return {
    format: text('format') || 'tessera',
    keycloak_client: text('keycloak_client'),
    on_conflict: text('on_conflict') || 'update',
    provider_map: text('provider_map'),
  };
}

/** The form's choices as the API's query checks them, and the file's presence and layout. */
function checkOptions(
  values: ImportFormValues,
  upload: Upload,
): { ok: true; options: Omit<ImportOptions, 'dryRun'> } | { ok: false; errors: FieldErrors } {
  let errors: FieldErrors = new Map();
  try {
    assertBody(ImportQuery, {
      format: values.format,
      on_conflict: values.on_conflict,
      ...(values.keycloak_client === '' ? {} : { keycloak_client: values.keycloak_client }),
      ...(values.provider_map === '' ? {} : { provider_map: values.provider_map }),
    });
  } catch (error) {
    errors = formProblem(error).errors;
  }
  const providerMap = parseProviderMap(values.provider_map);
  if (!providerMap.ok && !errors.has('provider_map')) {
    errors.set('provider_map', [providerMap.detail]);
  }
  if (upload.file === null || upload.file.bytes === 0) {
    errors.set('file', [upload.file === null ? 'is required: choose a file' : 'is empty']);
  }
  if (errors.size > 0 || !providerMap.ok) return { ok: false, errors };
  const format = values.format as ImportOptions['format'];
  // A JSON document is a Keycloak realm export; any other file is read a line at a time.
  const document =
    format === 'keycloak' &&
    (upload.mimeType === 'application/json' || upload.fileName.toLowerCase().endsWith('.json'));
  return {
    ok: true,
    options: {
      format,
      onConflict: values.on_conflict as ImportOptions['onConflict'],
      providerMap: providerMap.map,
      keycloakClient: values.keycloak_client === '' ? null : values.keycloak_client,
      layout: document ? 'document' : 'ndjson',
    },
  };
}

function isMultipart(request: FastifyRequest): boolean {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === MULTIPART;
}

/**
 * Reads the upload form as it streams in: its fields into memory (small, limited), its one file
 * to a private temporary file. Without an X-CSRF-Token header (a form posted without script),
 * the session hook could not see the form's token: it is checked here, and it must come before
 * the file (the form puts it first), so no byte of a forged upload is written.
 */
async function readUpload(request: FastifyRequest, uploads: ConsoleUploads): Promise<Upload> {
  // The session hook checked a header token; a wrong one never reaches this.
  const tokenChecked = request.headers['x-csrf-token'] !== undefined;
  const session = sessionOf(request).record;
  let busboy: BusboyInstance;
  try {
    busboy = Busboy({
      headers: request.headers as BusboyHeaders,
      limits: { fields: 20, fieldSize: 8 * 1024, files: 1, parts: 30, headerPairs: 20 },
    });
  } catch {
    throw problem('validation-failed', 'The form could not be read; send it again.');
  }
  const fields = new Map<string, string>();
  // Set by the file's part, if any (a holder: assigned in a callback).
  const spool: { file: Promise<SpooledFile> | null } = { file: null };
  let fileName = '';
  let mimeType = '';
  busboy.on('field', (name: string, value: string) => {
    if (!fields.has(name)) fields.set(name, value);
  });
  const refused = new Promise<never>((_resolve, reject) => {
    busboy.on(
      'file',
      (name: string, stream: Readable, filename: string, _encoding: string, type: string) => {
        if (name !== 'file' || spool.file !== null) {
          stream.resume();
          return;
        }
        if (!tokenChecked && !csrfTokenMatches(session, fields.get('_csrf'))) {
          stream.resume();
          reject(forbiddenForm());
          return;
        }
        fileName = filename;
        mimeType = type.toLowerCase();
        spool.file = uploads.spool(stream);
        spool.file.catch(reject);
      },
    );
  });
  const body = request.body as Readable;
  try {
    await Promise.race([pipeline(body, busboy), refused]);
    const file = spool.file === null ? null : await spool.file;
    if (!tokenChecked && !csrfTokenMatches(session, fields.get('_csrf'))) {
      await file?.remove();
      throw forbiddenForm();
    }
    // A form sent without choosing a file has a part with no name and no bytes.
    if (file !== null && file.bytes === 0 && fileName === '') {
      await file.remove();
      return { fields, file: null, fileName, mimeType };
    }
    return { fields, file, fileName, mimeType };
  } catch (error) {
    body.unpipe(busboy);
    busboy.destroy();
    if (spool.file !== null) {
      await spool.file.then(
        (file) => file.remove(),
        () => undefined,
      );
    }
    // A broken or cut-off form is the client's; a failing disk (a system call's error) is not.
    if (!(error instanceof ProblemError) && !(error instanceof Error && 'syscall' in error)) {
      throw problem('validation-failed', 'The form could not be read; send it again.');
    }
    throw error;
  }
}

function encodeErrorCursor(position: ImportErrorPosition): string {
  return `${position.line}.${position.index}`;
}

function decodeErrorCursor(cursor: string): ImportErrorPosition {
  const match = /^(\d{1,15})\.(\d{1,15})$/.exec(cursor);
  if (match === null) {
    throw problem('validation-failed', 'This page link is damaged; start from the first page.');
  }
  return { line: Number(match[1]), index: Number(match[2]) };
}
