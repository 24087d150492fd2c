import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { allowedApplications } from '../../http/auth.js';
import { assertUncompressed } from '../../http/content-types.js';
import { type CursorCodec, invalidCursor, servePage } from '../../http/pagination.js';
import { JsonResponse, NoQuery, apiKeySecurity, problemResponses } from '../../http/schemas.js';
import { invalid, problem } from '../../problems.js';
import type { Clock } from '../../clock.js';
import type {
  ImportErrorPosition,
  ImportErrorRecord,
  UserFilter,
  UserRecord,
} from '../../store/store.js';
import { ApplicationParams } from '../applications/applications.schemas.js';
import { USER_EXAMPLE } from '../users/users.schemas.js';
import { requestOrigin } from '../request-origin.js';
import type { UsersService } from '../users/users.service.js';
import { parseProviderMap } from './imports.formats.js';
import {
  ExportQuery,
  ExportedUser,
  ImportErrorPage,
  ImportErrorsQuery,
  ImportJob,
  ImportParams,
  ImportQuery,
  NDJSON_MEDIA_TYPE,
  toExportLine,
  toImportErrorResource,
  toImportJobResource,
} from './imports.schemas.js';
import { type ImportsService, MAX_IMPORT_BYTES } from './imports.service.js';

const tags = ['imports'];
const API_BASE = '/iam/api/v1';
const JSON_MEDIA_TYPE = 'application/json';
/** Users an export reads from its snapshot at a time. */
const EXPORT_PAGE_SIZE = 1000;

/**
 * The bulk import and export of users. Import bodies stream: each is spooled to a private
 * temporary file as it arrives (the body never sits in memory), and once it is all there the job
 * is created and answered 202; the job then reads the file on its own, so it survives the client
 * going away. Export streams NDJSON from one snapshot, a page at a time.
 */
export function registerImportRoutes(
  app: FastifyInstance,
  deps: { imports: ImportsService; users: UsersService; cursors: CursorCodec; clock: Clock },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { imports, users, cursors, clock } = deps;

  // The body is handed over as the stream it is. Call with a scope of these routes alone: the
  // JSON parser of the others is replaced here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([NDJSON_MEDIA_TYPE], function passStream(_request, payload, done) {
    done(null, payload);
  });
  app.addContentTypeParser([JSON_MEDIA_TYPE], function passDocument(_request, payload, done) {
    done(null, payload);
  });

  api.post(
    '/applications/:client_id/users/import',
    {
      config: { role: 'users:write' },
      // Not read into memory: spooled to a file (spool() counts the bytes against it too).
      bodyLimit: MAX_IMPORT_BYTES,
      schema: {
        tags,
        operationId: 'importUsers',
        summary: 'Import users in bulk (a job)',
        description:
          'The body is NDJSON (`application/x-ndjson`), one user a line in the chosen format, or ' +
          'for `format=keycloak` also a realm export document (`application/json`). It is read as ' +
          'it streams in; once it is all received the job is created and answered `202` with its ' +
          '`Location`, and runs on its own (the client may go away). Each bad line is an error ' +
          'line of the job, never a stop.',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: ImportQuery,
        consumes: [NDJSON_MEDIA_TYPE, JSON_MEDIA_TYPE],
        // Described, not validated: the body is read line by line by the job, each line checked.
        body: {
          description:
            'NDJSON (one user a line, here one of a Tessera export), or a Keycloak realm export document.',
          examples: [USER_EXAMPLE],
        },
        response: {
          202: JsonResponse(ImportJob, 'The job, started', ['location']),
          ...problemResponses(403, 404, 413, 415),
        },
      },
    },
    async function importUsers(request, reply) {
      const { client_id: clientId } = request.params;
      const query = request.query;
      const format = query.format ?? 'tessera';
      const providerMap = parseProviderMap(query.provider_map ?? '');
      if (!providerMap.ok) {
        throw invalid([{ parameter: 'provider_map', detail: providerMap.detail }]);
      }
      assertUncompressed(request);
      const layout = layoutOf(request, format);
      const spooled = await spool(request);
      try {
        const { job, finished } = await imports.startImport(
          clientId,
          createReadStream(spooled.file),
          {
            format,
            dryRun: query.dry_run ?? false,
            onConflict: query.on_conflict ?? 'update',
            providerMap: providerMap.map,
            keycloakClient: query.keycloak_client ?? null,
            layout,
          },
          requestOrigin(request),
        );
        void finished.finally(() => spooled.remove());
        reply.header('location', `${API_BASE}/imports/${job.id}`);
        return reply.code(202).send(toImportJobResource(job, API_BASE, clock.now()));
      } catch (error) {
        await spooled.remove();
        throw error;
      }
    },
  );

  api.get(
    '/imports/:id',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'getImport',
        summary: 'Get an import job: status, counts, rate',
        security: apiKeySecurity,
        params: ImportParams,
        querystring: NoQuery,
        response: {
          200: JsonResponse(ImportJob, 'The job'),
          ...problemResponses(403, 404),
        },
      },
    },
    async function getImport(request) {
      const job = await imports.findImport(request.params.id, allowedApplications(request));
      return toImportJobResource(job, API_BASE, clock.now());
    },
  );

  api.get(
    '/imports/:id/errors',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'listImportErrors',
        summary: "List an import job's error lines, in line order",
        security: apiKeySecurity,
        params: ImportParams,
        querystring: ImportErrorsQuery,
        response: {
          200: JsonResponse(ImportErrorPage, 'A page of error lines', ['link']),
          ...problemResponses(403, 404),
        },
      },
    },
    async function listImportErrors(request, reply) {
      const { id } = request.params;
      const visible = allowedApplications(request);
      // Unknown or invisible jobs are 404 before any page is read.
      const job = await imports.findImport(id, visible);
      return servePage({
        request,
        reply,
        cursors,
        scope: JSON.stringify(['import-errors', id]),
        query: { ...request.query, include_total: false },
        toPosition: toErrorPosition,
        positionOf: (error: ImportErrorRecord & ImportErrorPosition) => [error.line, error.index],
        fetch: (after, limit) => imports.listImportErrors(id, visible, after, limit),
        count: () => Promise.resolve(job.counts.invalid),
        toResource: toImportErrorResource,
      });
    },
  );

  api.delete(
    '/imports/:id',
    {
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'cancelImport',
        summary: 'Cancel a running import job',
        description:
          'The job stops at its next line; what it wrote stays written (importing the same file ' +
          'again finishes it). `409` when the job has finished already.',
        security: apiKeySecurity,
        params: ImportParams,
        querystring: NoQuery,
        response: {
          200: JsonResponse(ImportJob, 'The job, cancelled'),
          ...problemResponses(403, 404, 409),
        },
      },
    },
    async function cancelImport(request) {
      const job = await imports.cancelImport(request.params.id, allowedApplications(request));
      return toImportJobResource(job, API_BASE, clock.now());
    },
  );

  api.get(
    '/applications/:client_id/users/export',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'exportUsers',
        summary: "Export an application's users as NDJSON",
        description:
          'Every user matching the filters (those of the list), one `ExportedUser` a line, in list ' +
          'order, all from one consistent snapshot, streamed. Import the file with ' +
          '`format=tessera` to move the users to another instance, ids included.',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: ExportQuery,
        produces: [NDJSON_MEDIA_TYPE],
        response: {
          200: {
            description: 'NDJSON: one user a line',
            content: { [NDJSON_MEDIA_TYPE]: { schema: ExportedUser } },
          },
          ...problemResponses(403, 404),
        },
      },
    },
    async function exportUsers(request, reply) {
      const filter: UserFilter = {
        clientId: request.params.client_id,
        provider: request.query.provider ?? null,
        email: request.query.email ?? null,
        role: request.query.role ?? null,
        scope: request.query.scope ?? null,
        active: request.query.active ?? null,
      };
      const pages = await users.exportUsers(filter, EXPORT_PAGE_SIZE);
      const body = Readable.from(exportLines(pages), { objectMode: false });
      // A stream is sent as it is: no serializer sees it.
      return reply.type(`${NDJSON_MEDIA_TYPE}; charset=utf-8`).send(body as never);
    },
  );
}

async function* exportLines(pages: AsyncIterableIterator<UserRecord[]>): AsyncGenerator<string> {
  for await (const page of pages) {
    let text = '';
    for (const user of page) text += toExportLine(user);
    yield text;
  }
}

function toErrorPosition(value: unknown): ImportErrorPosition {
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    Number.isSafeInteger(value[0]) &&
    Number.isSafeInteger(value[1])
  ) {
    return { line: value[0] as number, index: value[1] as number };
  }
  throw invalidCursor();
}

/** How the body is laid out: JSON documents are Keycloak realm exports only. */
function layoutOf(request: FastifyRequest, format: string): 'ndjson' | 'document' {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === JSON_MEDIA_TYPE) {
    if (format !== 'keycloak') {
      throw problem(
        'unsupported-media-type',
        `Send the users as ${NDJSON_MEDIA_TYPE}, one a line (a JSON document is taken for format=keycloak only).`,
      );
    }
    return 'document';
  }
  return 'ndjson';
}

/**
 * Writes the request's body to a private temporary file (mode 0600: it holds personal data),
 * refusing one past MAX_IMPORT_BYTES (413). The file is removed on failure, and by the caller
 * once the job is done with it.
 */
async function spool(
  request: FastifyRequest,
): Promise<{ file: string; remove: () => Promise<void> }> {
  const directory = await mkdtemp(join(tmpdir(), 'tessera-import-'));
  const remove = () => rm(directory, { recursive: true, force: true });
  const file = join(directory, 'body');
  let size = 0;
  try {
    await pipeline(
      request.body as Readable,
      new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          if (size > MAX_IMPORT_BYTES) {
            callback(
              problem(
                'payload-too-large',
                `An import body may hold at most ${MAX_IMPORT_BYTES} bytes.`,
              ),
            );
          } else callback(null, chunk);
        },
      }),
      createWriteStream(file, { mode: 0o600 }),
    );
    return { file, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
