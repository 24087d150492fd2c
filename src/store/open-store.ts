import type { CommitRelay } from './sql/commit-listeners.js';
import type { Store } from './store.js';

/** Which database holds Tessera's tables, and how to reach it (DATABASE_URL and IAM_DB_*). */
export type DatabaseConfig =
  | { kind: 'sqlite'; path: string }
  | {
      kind: 'postgres';
      url: string;
      poolSize: number;
      connectTimeoutMs: number;
      poolWaitMs: number;
      statementTimeoutMs: number;
    };

export interface OpenStoreOptions {
  /** Told when a pooled PostgreSQL connection fails while idle (the pool replaces it). */
  onIdleError?: (error: Error) => void;
  /** Told when PostgreSQL's connection listening for other instances' events fails. */
  onListenerTrouble?: (message: string, error?: unknown) => void;
  /** Open an existing SQLite file only; never create it or its directory. */
  mustExist?: boolean;
  /** False only for the bench's runs without events (bench/serve-without-events.mjs). */
  recordEvents?: boolean;
  /** SQLite: the other worker processes on the same file (IAM_WORKERS), told of commits. */
  commitRelay?: CommitRelay;
}

/**
 * The Store for a configured database, opened but not yet migrated. Only the configured
 * database's store (and its driver, `pg` or better-sqlite3) is loaded: a process on SQLite
 * never loads `pg`.
 */
export async function openStore(
  database: DatabaseConfig,
  options: OpenStoreOptions = {},
): Promise<Store> {
  if (database.kind === 'sqlite') {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.js');
    return openSqliteStore({
      path: database.path,
      mustExist: options.mustExist === true,
      recordEvents: options.recordEvents !== false,
      ...(options.commitRelay === undefined ? {} : { commitRelay: options.commitRelay }),
    });
  }
  const { kind: _kind, ...postgres } = database;
  const { mustExist: _mustExist, commitRelay: _commitRelay, ...postgresOptions } = options;
  const { openPostgresStore } = await import('./postgres/postgres-store.js');
  return openPostgresStore({ ...postgres, ...postgresOptions });
}
