import type { Migration } from 'kysely';
import pg from 'pg';
import { SqlStore } from '../sql/sql-store.js';
import type { Store } from '../store.js';
import { PostgresExecutor } from './postgres-executor.js';
import { POSTGRES_DEFAULTS } from './postgres-defaults.js';

export interface PostgresStoreOptions {
  /**
   * False only in the bench's "without events" runs (bench/serve-without-events.mjs), to measure
   * what the audit trail costs: writes then record no event. Never off in service.
   */
  recordEvents?: boolean;
  /** postgres://… or postgresql://…; its query parameters (sslmode, options, …) are pg's. */
  url: string;
  /** The schema holding Tessera's tables; default: the connection's own search_path. */
  schema?: string;
  /** Connections per instance. */
  poolSize?: number;
  /** How long opening a connection may take. */
  connectTimeoutMs?: number;
  /** How long a query may wait for a free connection when all of them are busy. */
  poolWaitMs?: number;
  /** The server-side statement_timeout of every request's query. */
  statementTimeoutMs?: number;
  /** Told about errors of idle pooled connections (logged; the pool replaces them). */
  onIdleError?: (error: Error) => void;
  /** Told when the connection that listens for other instances' events fails (logged). */
  onListenerTrouble?: (message: string, error?: unknown) => void;
  /** For tests of the migration machinery only. */
  migrations?: Record<string, Migration>;
}

export { POSTGRES_DEFAULTS };

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
        // pg's defaults wait forever for a connection and a query; a request must not. pg-pool
        // bounds two waits with one setting: a free connection and a new one. They differ: a
        // busy pool is not an outage. With 50 concurrent writes on 10 connections on a loaded
        // machine, waits past the 2 s connect bound answered 503 to requests that only had to
        // queue. So the pool's bound is the longer queue wait, and each connection (pg.Client)
        // gets the short connect timeout of its own (connectingClient).
        connectionTimeoutMillis: Math.max(
          options.poolWaitMs ?? POSTGRES_DEFAULTS.poolWaitMs,
          options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
        ),
        Client: connectingClient(options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs),
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
      ...(options.onListenerTrouble === undefined
        ? {}
        : { onListenerTrouble: options.onListenerTrouble }),
      ...(options.migrations === undefined ? {} : { migrations: options.migrations }),
      recordEvents: options.recordEvents !== false,
    }),
  );
}

/** pg.Client whose connection attempt gives up after `connectTimeoutMs`, whatever the pool's wait. */
function connectingClient(connectTimeoutMs: number): typeof pg.Client {
  return class ConnectingClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  };
}
