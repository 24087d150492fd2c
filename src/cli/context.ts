// What every command of the CLI shares: where it writes, the environment it reads, and the
// store it works on. Nothing here is global: runCli builds one context per run, so tests run
// the CLI in-process with their own output and environment.

import { existsSync } from 'node:fs';
import pino from 'pino';
import { systemClock } from '../clock.js';
import { type Config, loadConfig } from '../config.js';
import { describeFailure } from '../failures.js';
import { createServices } from '../services.js';
import { StoreUnavailableError } from '../store/errors.js';
import { type DatabaseConfig, openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';

/** Where the CLI writes and what it reads; process.stdout, process.stderr, process.env when run. */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

/** A mistake in the command line: reported in one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface CliContext {
  io: CliIo;
  /** Prints a line (or lines) on standard output. */
  print(text: string): void;
  /** Prints a value as indented JSON on standard output. */
  printJson(value: unknown): void;
  /** Prints rows under a header, each column as wide as its widest cell. */
  printTable(header: readonly string[], rows: readonly (readonly string[])[]): void;
  /** Runs `work` on the configured database (see withStore). */
  withStore<T>(work: (store: Store) => Promise<T>, options?: WithStoreOptions): Promise<T>;
  /** The configuration the environment gives (ConfigError when it is invalid). */
  config(): Config;
  servicesFor(store: Store): ReturnType<typeof createServices>;
}

export interface WithStoreOptions {
  /** Create the database when it does not exist (serve and migrate only). */
  create?: boolean;
  /** Apply pending migrations first (default); false leaves the database as it is. */
  migrate?: boolean;
}

export function createCliContext(io: CliIo): CliContext {
  const config = () => loadConfig(io.env);
  return {
    io,
    config,
    print: (text) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    printJson: (value) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    printTable: (header, rows) => {
      const widths = header.map((title, column) =>
        Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
      );
      for (const row of [header, ...rows]) {
        const cells = row.map((cell, column) => cell.padEnd(widths[column] ?? 0));
        io.stdout.write(`${cells.join('  ').trimEnd()}\n`);
      }
    },
    withStore: (work, options) => withStore(config(), work, options),
    servicesFor: (store) =>
      createServices({
        store,
        clock: systemClock,
        log: pino({ level: 'silent' }),
        tokens: config().tokens,
      }),
  };
}

/**
 * Runs `work` on the configured database. Only serve and migrate may create one: a key
 * minted in a database the server never reads (another directory, a typo) would be a key
 * that silently does not work, so the other commands refuse a SQLite file that is not there.
 */
async function withStore<T>(
  { database }: ReturnType<typeof loadConfig>,
  work: (store: Store) => Promise<T>,
  options: WithStoreOptions = {},
): Promise<T> {
  if (database.kind === 'sqlite' && options.create !== true) {
    if (database.path === ':memory:') {
      throw new Error('DATABASE_URL is sqlite::memory:, a database that ends with this command');
    }
    if (!existsSync(database.path)) {
      throw new Error(
        `no database at ${database.path}; set DATABASE_URL to the server's, or create it with tessera migrate`,
      );
    }
  }
  const store = await openStore(database, { mustExist: options.create !== true });
  try {
    if (options.migrate !== false) await store.migrate();
    return await work(store);
  } catch (error) {
    if (database.kind === 'postgres' && isConnectionRefusal(error)) {
      throw new Error(
        `cannot use PostgreSQL at ${serverOf(database.url)}: ${causeOf(error as Error)}`,
        {
          cause: error,
        },
      );
    }
    throw error;
  } finally {
    await store.close();
  }
}

/** The server could not be reached, or refused us: a wrong URL, user, password or database. */
function isConnectionRefusal(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  // 28: invalid authorization; 3D000: no such database.
  return typeof code === 'string' && (code.startsWith('28') || code === '3D000');
}

/** The database for an operator's eyes: the SQLite path, or PostgreSQL's host, port and name. */
export function describeDatabase(database: DatabaseConfig): string {
  if (database.kind === 'sqlite') return database.path;
  const name = new URL(database.url).pathname.slice(1);
  return `PostgreSQL at ${serverOf(database.url)}${name === '' ? '' : `/${decodeURIComponent(name)}`}`;
}

/** host:port of a postgres:// URL, never its user or password. */
function serverOf(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname === '' ? 'localhost' : hostname}:${port === '' ? '5432' : port}`;
}

/** The driver's reason, with the socket error's code when it has one. */
function causeOf(error: Error): string {
  const cause = (error instanceof StoreUnavailableError ? error.cause : error) as
    { code?: unknown; message?: unknown } | undefined;
  // Node's socket codes (ECONNREFUSED, ETIMEDOUT, …); PostgreSQL's own messages say enough.
  const code =
    typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code) ? cause.code : undefined;
  const text = cause === undefined ? error.message : describeFailure(cause);
  if (code === undefined) return text || error.message;
  return text === '' || text.includes(code) ? text || code : `${code}: ${text}`;
}

const DURATION = /^([1-9][0-9]{0,8})([smhdw])$/;
export const UNIT_MS = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
} as const;

export function parseDuration(text: string, option: string, example: string): number {
  const match = DURATION.exec(text);
  if (match === null) {
    throw new UsageError(
      `${option} must be a number and a unit (s, m, h, d, w), e.g. ${example}; got "${text}"`,
    );
  }
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
