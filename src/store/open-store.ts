import { ConfigError, type DatabaseConfig } from '../config.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** The Store for a configured database, opened but not yet migrated. */
export function openStore(database: DatabaseConfig): Store {
  if (database.kind === 'sqlite') return openSqliteStore({ path: database.path });
  throw new ConfigError(
    'DATABASE_URL names PostgreSQL, which this build does not support yet; use sqlite:<path>',
  );
}
