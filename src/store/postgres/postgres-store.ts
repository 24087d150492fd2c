import type { Migration } from 'kysely';
import { SqlStore } from '../sql/sql-store.js';
import type { Store } from '../store.js';
import { PostgresExecutor } from './postgres-executor.js';

export interface PostgresStoreOptions {
  /** postgres://… or postgresql://…; its query parameters (sslmode, options, …) are pg's. */
  url: string;
  /** The schema holding Tessera's tables; default: the connection's own search_path. */
  schema?: string;
  /** Connections per instance. */
  poolSize?: number;
  /** How long opening a connection (or waiting for a free one) may take. */
  connectTimeoutMs?: number;
  /** The server-side statement_timeout of every request's query. */
  statementTimeoutMs?: number;
  /** Told about errors of idle pooled connections (logged; the pool replaces them). */
  onIdleError?: (error: Error) => void;
  /** For tests of the migration machinery only. */
  migrations?: Record<string, Migration>;
}

export const POSTGRES_DEFAULTS = {
  poolSize: 10,
  connectTimeoutMs: 2000,
  statementTimeoutMs: 2000,
} as const;

/**
 * The Store over a PostgreSQL database, unmigrated. No connection is opened until the first
 * query: an unreachable database surfaces as StoreUnavailableError from that query.
 */
export function openPostgresStore(options: PostgresStoreOptions): Store {
  const statementTimeoutMs = options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs;
  return new SqlStore(
    new PostgresExecutor({
      connection: {
        connectionString: options.url,
        max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
        // pg's defaults wait forever for a connection and a query; a request must not.
        connectionTimeoutMillis: options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
        statement_timeout: statementTimeoutMs,
        // The client-side bound covers what statement_timeout cannot: a server that stopped
        // answering (a network partition) rather than a slow statement.
        query_timeout: statementTimeoutMs + 250,
        idle_in_transaction_session_timeout: 10_000,
        keepAlive: true,
        application_name: 'tessera',
        ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
      },
      ...(options.onIdleError === undefined ? {} : { onIdleError: options.onIdleError }),
      ...(options.migrations === undefined ? {} : { migrations: options.migrations }),
    }),
  );
}
