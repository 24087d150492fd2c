// `tessera users import FILE` and `tessera users export`: bulk import and export on the
// database the server uses (DATABASE_URL), through the same services as the API's.

import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { CLI_ORIGIN } from '../modules/changes.js';
import { parseProviderMap } from '../modules/imports/imports.formats.js';
import { toExportLine } from '../modules/imports/imports.schemas.js';
import type { ImportOptions } from '../modules/imports/imports.service.js';
import type { ImportErrorPosition, ImportJobRecord, UserFilter } from '../store/store.js';
import { type CliContext, UsageError } from './context.js';

const FORMATS = ['tessera', 'auth0', 'keycloak'] as const;
const POLICIES = ['update', 'skip', 'fail'] as const;
/** How often progress is shown: a bar on a terminal, a line otherwise. */
const BAR_INTERVAL_MS = 200;
const LINE_INTERVAL_MS = 5000;

interface ImportCommandOptions {
  clientId?: string;
  format: string;
  dryRun?: boolean;
  onConflict: string;
  providerMap?: string;
  keycloakClient?: string;
}

interface ExportCommandOptions {
  clientId?: string;
  output?: string;
  provider?: string;
  email?: string;
  role?: string;
  scope?: string;
  active?: string;
}

export function registerUsersCommands(program: Command, cli: CliContext): void {
  const users = program.command('users').description("import and export an application's users");
  users
    .command('import')
    .description(
      'import users from FILE (NDJSON; for --format keycloak also a realm export .json); exit code 1 when lines were invalid, their errors written to FILE.errors.ndjson',
    )
    .argument('<file>', 'the file to import')
    .requiredOption('--client-id <client_id>', 'the application the users belong to')
    .option('--format <format>', 'tessera, auth0 or keycloak', 'tessera')
    .option('--dry-run', 'check and count every line; write nothing')
    .option(
      '--on-conflict <policy>',
      'update, skip or fail: what to do with a differing existing user',
      'update',
    )
    .option(
      '--provider-map <map>',
      'source provider names to Tessera labels: name:label,name:label',
    )
    .option(
      '--keycloak-client <client>',
      'Keycloak: whose clientRoles become roles (default: --client-id)',
    )
    .action((file: string, options: ImportCommandOptions) => importUsers(cli, file, options));
  users
    .command('export')
    .description('export users as NDJSON, one a line, from one consistent snapshot')
    .requiredOption('--client-id <client_id>', 'the application whose users to export')
    .option('--output <file>', 'write to this file (default: standard output)')
    .option('--provider <provider>', 'only users of this provider')
    .option('--email <email>', 'only users with this e-mail (ignoring case)')
    .option('--role <role>', 'only users holding this role')
    .option('--scope <scope>', 'only users holding this scope')
    .option('--active <boolean>', 'only active (true) or inactive (false) users')
    .action((options: ExportCommandOptions) => exportUsers(cli, options));
}

async function importUsers(
  cli: CliContext,
  file: string,
  options: ImportCommandOptions,
): Promise<void> {
  const format = options.format as ImportOptions['format'];
  if (!FORMATS.includes(format)) throw new UsageError(`--format takes ${FORMATS.join(', ')}`);
  const onConflict = options.onConflict as ImportOptions['onConflict'];
  if (!POLICIES.includes(onConflict)) {
    throw new UsageError(`--on-conflict takes ${POLICIES.join(', ')}`);
  }
  const providerMap = parseProviderMap(options.providerMap ?? '');
  if (!providerMap.ok) throw new UsageError(`--provider-map: ${providerMap.detail}`);
  const clientId = options.clientId!;
  // Opened before the job starts, so a missing file is a one-line error and no job.
  const source = await openFile(file);
  const size = (await stat(file)).size;
  // The bytes the job has read: how far through the file it is.
  let bytesRead = 0;
  const counted = source.pipe(
    new PassThrough({
      transform(chunk: Buffer, _encoding, callback) {
        bytesRead += chunk.length;
        callback(null, chunk);
      },
    }),
  );
  await cli.withStore(async (store) => {
    const services = cli.servicesFor(store);
    const { job, finished } = await services.imports.startImport(
      clientId,
      counted,
      {
        format,
        dryRun: options.dryRun === true,
        onConflict,
        providerMap: providerMap.map,
        keycloakClient: options.keycloakClient ?? null,
        layout:
          format === 'keycloak' && file.toLowerCase().endsWith('.json') ? 'document' : 'ndjson',
      },
      CLI_ORIGIN,
    );
    const progress = new Progress(cli, job.createdAt, () => (size === 0 ? 1 : bytesRead / size));
    let done: ImportJobRecord | undefined;
    void finished.then((ended) => (done = ended));
    while (done === undefined) {
      await Promise.race([finished, sleep(progress.interval)]);
      if (done === undefined) progress.show(await services.imports.findImport(job.id, null));
    }
    progress.end();
    const ended = done as ImportJobRecord;
    const { counts } = ended;
    const seconds = Math.max(0.001, ((ended.finishedAt ?? Date.now()) - ended.createdAt) / 1000);
    cli.print(
      `${options.dryRun === true ? 'dry run of ' : ''}import ${ended.id} ${ended.status}: read ${counts.read}, ` +
        `created ${counts.created}, updated ${counts.updated}, unchanged ${counts.unchanged}, ` +
        `skipped ${counts.skipped}, invalid ${counts.invalid} in ${seconds.toFixed(1)} s ` +
        `(${Math.round(counts.read / seconds)} lines/s)`,
    );
    if (ended.status === 'failed') throw new Error(ended.failure ?? 'the import failed');
    if (counts.invalid > 0) {
      const errorsFile = `${file}.errors.ndjson`;
      await writeErrors(errorsFile, (after) =>
        services.imports.listImportErrors(ended.id, null, after, 1000),
      );
      throw new Error(`${counts.invalid} line(s) invalid; their errors are in ${errorsFile}`);
    }
  });
}

/** The error lines of a job, one JSON object a line, written whole or not at all. */
async function writeErrors(
  file: string,
  page: (
    after: ImportErrorPosition | null,
  ) => Promise<(ImportErrorPosition & { pointer: string; detail: string })[]>,
): Promise<void> {
  const partial = `${file}.partial`;
  async function* lines() {
    let after: ImportErrorPosition | null = null;
    for (;;) {
      const errors = await page(after);
      if (errors.length === 0) return;
      yield errors
        .map(
          (error) =>
            `${JSON.stringify({ line: error.line, pointer: error.pointer, detail: error.detail })}\n`,
        )
        .join('');
      const last = errors.at(-1)!;
      after = { line: last.line, index: last.index };
    }
  }
  await pipeline(Readable.from(lines()), createWriteStream(partial, { mode: 0o600 }));
  await rename(partial, file);
}

async function exportUsers(cli: CliContext, options: ExportCommandOptions): Promise<void> {
  if (options.active !== undefined && options.active !== 'true' && options.active !== 'false') {
    throw new UsageError('--active takes true or false');
  }
  const filter: UserFilter = {
    clientId: options.clientId!,
    provider: options.provider ?? null,
    email: options.email ?? null,
    role: options.role ?? null,
    scope: options.scope ?? null,
    active: options.active === undefined ? null : options.active === 'true',
  };
  await cli.withStore(async (store) => {
    const pages = await cli.servicesFor(store).users.exportUsers(filter, 1000);
    async function* lines() {
      for await (const users of pages) {
        let text = '';
        for (const user of users) text += toExportLine(user);
        yield text;
      }
    }
    if (options.output === undefined) {
      for await (const text of lines()) cli.io.stdout.write(text);
      return;
    }
    // Written beside the target and renamed: an export cut short leaves no partial file.
    const partial = `${options.output}.partial`;
    try {
      await pipeline(Readable.from(lines()), createWriteStream(partial, { mode: 0o600 }));
      await rename(partial, options.output);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  });
}

function openFile(file: string): Promise<Readable> {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(file);
    stream.once('open', () => resolve(stream));
    stream.once('error', (error: NodeJS.ErrnoException) =>
      reject(new UsageError(`cannot read ${file}: ${error.code ?? error.message}`)),
    );
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Progress on standard error: a bar redrawn in place on a terminal, a line now and then otherwise. */
class Progress {
  readonly #tty: boolean;
  readonly interval: number;
  #drawn = false;

  constructor(
    private readonly cli: CliContext,
    private readonly startedAt: number,
    /** How much of the file has been read, from 0 to 1. */
    private readonly fraction: () => number,
  ) {
    this.#tty = (cli.io.stderr as { isTTY?: boolean }).isTTY === true;
    this.interval = this.#tty ? BAR_INTERVAL_MS : LINE_INTERVAL_MS;
  }

  show(job: ImportJobRecord): void {
    const seconds = Math.max(0.001, (Date.now() - this.startedAt) / 1000);
    const { counts } = job;
    const written = counts.created + counts.updated + counts.unchanged + counts.skipped;
    const text =
      `read ${counts.read} lines, ${Math.round(counts.read / seconds)}/s, ` +
      `${written} done, ${counts.invalid} invalid`;
    if (this.#tty) {
      const filled = Math.min(20, Math.round(this.fraction() * 20));
      const percent = Math.min(100, Math.floor(this.fraction() * 100));
      const bar = `[${'#'.repeat(filled)}${'.'.repeat(20 - filled)}] ${String(percent).padStart(3)}%`;
      this.cli.io.stderr.write(`\r${bar} ${text}\u001b[K`);
      this.#drawn = true;
    } else {
      this.cli.io.stderr.write(`${text}\n`);
    }
  }

  end(): void {
    if (this.#drawn) this.cli.io.stderr.write('\n');
  }
}
