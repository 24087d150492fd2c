import type { DatabaseConfig } from '../config.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

export interface OpenStoreOptions {
  /** Told when a pooled PostgreSQL connection fails while idle (the pool replaces it). */
  onConnectionError?: (error: Error) => void;
}

/** The Store for a configured database, opened but not yet migrated. */
export function openStore(database: DatabaseConfig, options: OpenStoreOptions = {}): Store {
  if (database.kind === 'sqlite') return openSqliteStore({ path: database.path });
  return openPostgresStore({
    url: database.url,
    poolSize: database.poolSize,
    connectTimeoutMs: database.connectTimeoutMs,
    statementTimeoutMs: database.statementTimeoutMs,
    ...(options.onConnectionError === undefined ? {} : { onIdleError: options.onConnectionError }),
  });
}
