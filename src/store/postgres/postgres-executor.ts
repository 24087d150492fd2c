import { setTimeout as sleep } from 'node:timers/promises';
import {
  CompiledQuery,
  type DatabaseIntrospector,
  DummyDriver,
  Kysely,
  type Migration,
  PostgresAdapter,
  type SchemaMetadata,
  type TableMetadata,
  PostgresDialect,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
} from 'kysely';
import pg from 'pg';
import { ConditionFailedError } from '../errors.js';
import { migrateToLatest, readAppliedMigrations, schemaStatusOf } from '../sql/migrate.js';
import { EVENT_COLUMNS, type EventRow } from '../sql/rows.js';
import {
  type SnapshotReader,
  type SqlExecutor,
  type SqlFlavor,
  type WriteOptions,
  writeHappened,
} from '../sql/sql-executor.js';
import type { Tables } from '../sql/tables.js';
import type { PoolStats, SchemaStatus } from '../store.js';
import {
  isPlanInvalidated,
  isRetryable,
  releaseFailedTransaction,
  translatePostgresError,
} from './postgres-errors.js';
import { PostgresEventNotifier } from './postgres-event-notifier.js';
import { EventSequencer } from './postgres-event-sequencer.js';
import { postgresMigrations } from './postgres-migrations.js';

const postgresFlavor: SqlFlavor = {
  // JSON arrays are stored as text (see sql/migrations.ts); containment on the parsed
  // value, with functions CockroachDB and YugabyteDB have too.
  jsonArrayContains: (column, value) =>
    sql<boolean>`(${sql.ref(column)})::jsonb @> jsonb_build_array(${value}::text)`,
  contains: (text, part) => sql<boolean>`strpos(${text}, ${part}::text) > 0`,
  // Under the "C" collation lower() folds ASCII letters only, as SQLite's does.
  asciiLower: (text) => sql<string>`lower((${text}) collate "C")`,
};

/** The statement timeout of an ANALYZE (analyze()), in place of a request's. */
const ANALYZE_TIMEOUT_MS = 60_000;

/** How long an export's snapshot may wait for its reader between two pages. */
const SNAPSHOT_IDLE_MS = 10 * 60_000;
/** How often a transaction that hit a serialization failure or deadlock is run again. */
const TRANSACTION_ATTEMPTS = 8;
/** How long a migrating process waits for another one to finish migrating. */
const MIGRATION_LOCK_WAIT_MS = 60_000;
/** How often a migration run that deadlocked with another instance's is started over. */
const MIGRATION_ATTEMPTS = 5;
// Distinct query texts get one prepared-statement name each; IN-lists of varying length make
// the set open-ended, so past this many the names start over (old ones age out with the
// connections that prepared them).
const STATEMENT_NAME_LIMIT = 2000;

export interface PostgresExecutorOptions {
  /** A pg connection config (connection string, pool size, timeouts, search_path). */
  connection: pg.PoolConfig;
  /** Told about errors of idle pooled connections (the pool discards them itself). */
  onIdleError?: (error: Error) => void;
  /** The migrations to apply; postgresMigrations unless a test says otherwise. */
  migrations?: Record<string, Migration>;
  /** False only for the bench's runs without events (see SqliteStoreOptions.recordEvents). */
  recordEvents?: boolean;
  /** Told when the connection that listens for other instances' events fails (logged). */
  onListenerTrouble?: (message: string, error?: unknown) => void;
}

// BIGINT (epoch milliseconds, counts) as a JavaScript number: every such value here is far
// below 2^53. Per pool, so other pg users in the process keep their parsers.
const INT8_OID = 20;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/**
 * Runs compiled queries on a pg pool. Reads and single-statement writes use the pool directly
 * (a lone statement is its own transaction); multi-statement and serializable writes take one
 * client for BEGIN … COMMIT and are retried on serialization failures and deadlocks.
 */
export class PostgresExecutor implements SqlExecutor {
  readonly kind = 'postgres';
  readonly db: Kysely<Tables>;
  readonly flavor = postgresFlavor;
  readonly #pool: pg.Pool;
  readonly #connection: pg.PoolConfig;
  readonly #migrations: Record<string, Migration>;
  readonly #statementNames = new Map<string, string>();
  #nextStatement = 0;
  #inFlight = 0;
  #idle: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  readonly #recordEvents: boolean;
  readonly #sequencer: EventSequencer;
  readonly #notifier: PostgresEventNotifier;

  constructor(options: PostgresExecutorOptions) {
    this.#recordEvents = options.recordEvents !== false;
    this.#connection = { ...options.connection, types };
    this.#migrations = options.migrations ?? postgresMigrations;
    this.#pool = new pg.Pool(this.#connection);
    this.#notifier = new PostgresEventNotifier({
      connection: this.#connection,
      query: (text, values) => this.#track(() => this.#pool.query(text, values)),
      ...(options.onListenerTrouble === undefined ? {} : { onTrouble: options.onListenerTrouble }),
    });
    this.#sequencer = new EventSequencer({
      connect: () => this.#pool.connect(),
      query: (text) => this.#pool.query(text),
      track: (operation) => this.#track(operation),
      // Events an instance committed but never told of (it was killed first) are heard of
      // when they are numbered.
      moved: () => this.#notifier.sequenced(),
    });
    // An idle client whose connection dies emits here; without a listener the process would
    // crash. The pool has already dropped the client; the next query opens a new one.
    this.#pool.on('error', (error) => options.onIdleError?.(error));
    this.db = new Kysely<Tables>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new DummyDriver(),
        createIntrospector: (db) => new PostgresIntrospector(db),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    });
  }

  select<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    return this.#track(async () => (await this.#prepared(this.#pool, query)).rows as Row[]);
  }

  write(statements: readonly CompiledQuery[], options: WriteOptions = {}): Promise<number[]> {
    return this.#track(async () => {
      const [only] = statements;
      const events = this.#recordEvents ? (options.events ?? []) : [];
      if (statements.length === 1 && only !== undefined && options.serializable !== true) {
        // A lone statement is its own transaction; its events ride in it (one round trip).
        const combined = events.length === 0 ? only : withPendingEvents(only, events);
        if (combined !== undefined) {
          const result = await this.#prepared(this.#pool, combined);
          const changes =
            combined === only ? (result.rowCount ?? 0) : Number(result.rows[0]?.changed ?? 0);
          if (changes > 0 && events.length > 0) this.#eventsCommitted();
          if (changes === 0 && options.everyStatementChanges === true) {
            throw new ConditionFailedError('a conditional statement changed no row');
          }
          return [changes];
        }
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const changes = await this.#transaction(statements, options);
          if (events.length > 0) this.#eventsCommitted();
          return changes;
        } catch (error) {
          if (!isRetryable(error) || attempt === TRANSACTION_ATTEMPTS) throw error;
          await sleep(Math.random() * 5 * attempt);
        }
      }
    });
  }

  writeReturning<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    // A lone statement is its own transaction.
    return this.#track(async () => (await this.#prepared(this.#pool, query)).rows as Row[]);
  }

  /**
   * Gives every event committed so far its id (see EventSequencer); the event readers call it
   * before reading, so an acknowledged write's events are in the feed read after it.
   */
  sequenceEvents(): Promise<void> {
    return this.#sequencer.settle();
  }

  /**
   * A REPEATABLE READ, READ ONLY transaction on a pooled connection kept for the reader: every
   * query sees the snapshot its first one took. A reader may pause between pages as long as its
   * consumer does (a slow download), so this transaction may sit idle for up to
   * SNAPSHOT_IDLE_MS instead of the pool's 10 s.
   */
  async openSnapshot(): Promise<SnapshotReader> {
    const client = await this.#track(() => this.#pool.connect());
    try {
      await client.query('begin isolation level repeatable read read only');
      await client.query(`set local idle_in_transaction_session_timeout = ${SNAPSHOT_IDLE_MS}`);
      // A snapshot's reader walks an index range in its order, page after page (an export).
      // Right after a bulk import the table's statistics are stale (80 rows estimated for
      // 95,000): the planner then read every user after the page's start and sorted them, each
      // page, until the fifth (90 ms a page at 100,000 users; past the 2 s statement timeout at
      // 1,000,000, which ended the export). Sorting is made the last resort here, so the page
      // is read from the index in order, whatever the statistics say.
      await client.query('set local enable_sort = off');
      // The snapshot is taken by the first query that reads.
      await client.query('select 1');
    } catch (error) {
      client.release(error as Error);
      throw translatePostgresError(error);
    }
    let released = false;
    return {
      select: <Row>(query: CompiledQuery<Row>) =>
        this.#track(async () => (await this.#prepared(client, query)).rows as Row[]),
      close: async () => {
        if (released) return;
        released = true;
        try {
          await client.query('commit');
          client.release();
        } catch (error) {
          client.release(error as Error);
        }
      },
    };
  }

  async analyze(table: 'users'): Promise<number> {
    return this.#track(async () => {
      const client = await this.#pool.connect();
      try {
        await client.query('begin');
        // Sampling a large table on a busy machine may take longer than a request may.
        await client.query(`set local statement_timeout = ${ANALYZE_TIMEOUT_MS}`);
        await client.query(`analyze "${table}"`);
        const { rows } = await client.query<{ reltuples: number }>(
          `select reltuples::float8 as reltuples from pg_class where oid = '"${table}"'::regclass`,
        );
        await client.query('commit');
        client.release();
        return Math.max(0, rows[0]?.reltuples ?? 0);
      } catch (error) {
        client.release(error as Error);
        throw translatePostgresError(error);
      }
    });
  }

  /** LISTEN/NOTIFY on one connection of this process's own (PostgresEventNotifier). */
  watchEvents(onCommitted: () => void): () => void {
    return this.#notifier.watch(onCommitted);
  }

  #eventsCommitted(): void {
    this.#sequencer.committed();
    this.#notifier.committed();
  }

  ping(): Promise<void> {
    return this.#track(async () => {
      await this.#pool.query('select 1');
    });
  }

  /**
   * Applies pending migrations in one transaction on a connection of its own. Processes
   * serialise on a row lock (SELECT … FOR UPDATE on tessera_migration_lock), not an advisory
   * lock, so this holds on engines without advisory locks and behind transaction poolers.
   * PostgreSQL's DDL is transactional: a failed run leaves nothing behind.
   */
  async migrate(): Promise<void> {
    // The pool's Client, so the connect timeout is the one a pooled connection gets.
    const Client = (this.#connection.Client as typeof pg.Client | undefined) ?? pg.Client;
    const client = new Client({
      ...this.#connection,
      // DDL on a large table may take longer than a request's statement is allowed to.
      statement_timeout: 0,
      query_timeout: 0,
    });
    try {
      await client.connect();
    } catch (error) {
      throw translatePostgresError(error);
    }
    client.on('error', () => {
      // Reported through the failing query below.
    });
    try {
      await ensureMigrationLockRow(client);
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#migrateLocked(client);
          return;
        } catch (error) {
          await client.query('rollback').catch(() => undefined);
          // A deadlock with another instance's start-up (Kysely wraps the driver's error).
          const retryable = isRetryable(error) || isRetryable((error as Error).cause);
          if (!retryable || attempt === MIGRATION_ATTEMPTS) throw error;
          await sleep(Math.random() * 50 * attempt);
        }
      }
    } catch (error) {
      throw translatePostgresError(error);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async schemaStatus(): Promise<SchemaStatus> {
    return this.#track(async () => {
      const client = await this.#pool.connect();
      try {
        const schema = await client.query<{ schema: string | null }>(
          'select current_schema() as schema',
        );
        const migrationTableSchema = schema.rows[0]?.schema ?? undefined;
        const db = new Kysely<unknown>({
          dialect: new SingleClientDialect(client, migrationTableSchema),
        });
        return schemaStatusOf(
          this.#migrations,
          await readAppliedMigrations(db, migrationTableSchema),
        );
      } finally {
        client.release();
      }
    }).catch((error: unknown) => {
      throw translatePostgresError(error);
    });
  }

  /** One migration run: the lock row, then every pending migration, in one transaction. */
  async #migrateLocked(client: pg.Client): Promise<void> {
    await client.query('begin');
    await client.query(`set local lock_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
    await client.query('select id from tessera_migration_lock where id = 1 for update');
    const schema = await client.query<{ schema: string | null }>(
      'select current_schema() as schema',
    );
    const migrationTableSchema = schema.rows[0]?.schema ?? undefined;
    const db = new Kysely<unknown>({
      dialect: new SingleClientDialect(client, migrationTableSchema),
    });
    await migrateToLatest(db, this.#migrations, {
      disableTransactions: true,
      ...(migrationTableSchema === undefined ? {} : { migrationTableSchema }),
    });
    await client.query('commit');
    // Events pending from instances that stopped (or were killed) are sequenced from now on.
    if (this.#migrations === postgresMigrations) this.#sequencer.startPeriodic();
  }

  poolStats(): PoolStats {
    return {
      total: this.#pool.totalCount,
      idle: this.#pool.idleCount,
      waiting: this.#pool.waitingCount,
    };
  }

  /** Lets every started operation finish (including a read that follows a write), then ends the pool. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#notifier.stop();
      await this.#sequencer.stop();
      // An operation's continuation may start the next one (a read after a write) in a later
      // microtask; a macrotask turn with nothing in flight means nothing more is coming.
      do {
        if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
        await new Promise((resolve) => setImmediate(resolve));
      } while (this.#inFlight > 0);
      await this.#pool.end();
    })();
    return this.#closing;
  }

  async #transaction(statements: readonly CompiledQuery[], options: WriteOptions) {
    const client = await this.#pool.connect();
    try {
      await client.query(
        options.serializable === true ? 'begin isolation level serializable' : 'begin',
      );
      const changes: number[] = [];
      for (const statement of statements) {
        const changed = (await this.#prepared(client, statement)).rowCount ?? 0;
        if (changed === 0 && options.everyStatementChanges === true) {
          // Thrown inside the transaction: the catch below rolls it back.
          throw new ConditionFailedError('a conditional statement changed no row');
        }
        changes.push(changed);
      }
      const events = this.#recordEvents ? (options.events ?? []) : [];
      if (events.length > 0 && writeHappened(changes, options)) {
        await this.#prepared(client, insertPendingEvents(events));
      }
      await client.query('commit');
      client.release();
      return changes;
    } catch (error) {
      await releaseFailedTransaction(client, error);
      throw error;
    }
  }

  /**
   * Runs a query as a named prepared statement. When a migration run by another instance has
   * changed a table under it, PostgreSQL refuses the old plan ("cached plan must not change
   * result type", 0A000) on the connections that prepared it; the query is then prepared
   * again under a new name, once, and runs.
   */
  async #prepared(
    runner: pg.Pool | pg.PoolClient,
    query: CompiledQuery,
  ): Promise<pg.QueryResult<pg.QueryResultRow>> {
    try {
      return await runner.query(this.#config(query));
    } catch (error) {
      if (!isPlanInvalidated(error)) throw error;
      this.#statementNames.delete(query.sql);
      // Inside a transaction the failure has aborted it; the caller's retry starts it over.
      if (runner !== this.#pool) throw error;
      return runner.query(this.#config(query));
    }
  }

  #config(query: CompiledQuery): pg.QueryConfig {
    let name = this.#statementNames.get(query.sql);
    if (name === undefined) {
      if (this.#statementNames.size >= STATEMENT_NAME_LIMIT) this.#statementNames.clear();
      name = `tessera_${(this.#nextStatement++).toString(36)}`;
      this.#statementNames.set(query.sql, name);
    }
    return { name, text: query.sql, values: query.parameters as unknown[] };
  }

  /** Runs one store operation: counted for close(), its errors translated into store errors. */
  async #track<T>(operation: () => Promise<T>): Promise<T> {
    // Not refused while closing: close() waits for this; once the pool has ended, the pool
    // itself refuses, which translates to StoreUnavailableError.
    this.#inFlight++;
    try {
      return await operation();
    } catch (error) {
      throw translatePostgresError(error);
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) this.#idle?.();
    }
  }
}

/** The SQL type of each events column but seq, for the typed VALUES list below. */
const EVENT_COLUMN_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  type: 'text',
  occurred_at: 'bigint',
  actor_type: 'text',
  actor_id: 'text',
  client_id: 'text',
  resource_type: 'text',
  resource_id: 'text',
  changes: 'text',
  request_id: 'text',
};

/**
 * `INSERT INTO events_pending … SELECT … FROM (VALUES …)` of `count` events, its parameters
 * numbered from `first`; `where` (SQL) filters the rows. The pending keys follow the events'
 * order (ORDER BY n), which the sequencer keeps. No lock beyond the new rows': transactions
 * that record events commit together, sharing WAL flushes; ids come after the commit
 * (EventSequencer).
 */
function pendingEventsInsert(count: number, first: number, where: string): string {
  const rows = Array.from({ length: count }, (_, index) => {
    const slots = EVENT_COLUMNS.map(
      (column, offset) =>
        `$${first + index * EVENT_COLUMNS.length + offset}::${EVENT_COLUMN_TYPES[column]}`,
    );
    return `(${index + 1}, ${slots.join(', ')})`;
  });
  const columns = EVENT_COLUMNS.join(', ');
  return (
    `insert into events_pending (${columns}) ` +
    `select ${EVENT_COLUMNS.map((column) => `v.${column}`).join(', ')} ` +
    `from (values ${rows.join(', ')}) as v (n, ${columns}) ${where}order by v.n`
  );
}

/**
 * `first` followed by the parameters of pendingEventsInsert: each event's columns, in order.
 * Plain loops: this runs on every write that records events.
 */
function withEventParameters(first: readonly unknown[], events: readonly EventRow[]): unknown[] {
  const values = first.slice();
  for (const event of events) {
    for (const column of EVENT_COLUMNS) values.push(event[column]);
  }
  return values;
}

/** The events of a transaction, as its last statement. */
function insertPendingEvents(events: readonly EventRow[]): CompiledQuery {
  let text = pendingTexts.get(events.length);
  if (text === undefined) {
    if (pendingTexts.size >= PENDING_TEXTS_KEPT) pendingTexts.clear();
    text = pendingEventsInsert(events.length, 1, '');
    pendingTexts.set(events.length, text);
  }
  return CompiledQuery.raw(text, withEventParameters([], events));
}

/**
 * insertPendingEvents' text per event count. An import's batch of 1,000 users built its 9,000
 * placeholders anew each time, and the statement cache hashed the new 200 KB string again.
 */
const pendingTexts = new Map<number, string>();
const PENDING_TEXTS_KEPT = 100;

/**
 * withPendingEvents' statement text per write text, then per event count (a few shapes in use).
 * Keyed by the write's text itself: precompiled writes hand over the same string each time,
 * whose hash V8 keeps, where a key built per call would be hashed anew.
 */
const combinedTexts = new Map<string, (string | undefined)[]>();
const COMBINED_TEXTS_KEPT = 500;

/**
 * One statement doing a lone write and inserting its events when it changed a row:
 * `WITH w AS (<write> RETURNING 1), e AS (INSERT INTO events_pending … WHERE EXISTS (SELECT
 * FROM w)) SELECT count(*) AS changed FROM w`. Undefined when the write cannot be nested so
 * (it is not a plain INSERT, UPDATE or DELETE, or returns rows of its own).
 */
function withPendingEvents(
  write: CompiledQuery,
  events: readonly EventRow[],
): CompiledQuery | undefined {
  let texts = combinedTexts.get(write.sql);
  let text = texts?.[events.length];
  if (text === undefined) {
    if (!/^(insert|update|delete) /i.test(write.sql) || /\breturning\b/i.test(write.sql)) {
      return undefined;
    }
    const pending = pendingEventsInsert(
      events.length,
      write.parameters.length + 1,
      'where exists (select 1 from w) ',
    );
    text =
      `with w as (${write.sql} returning 1), e as (${pending}) ` +
      'select count(*)::integer as changed from w';
    if (texts === undefined) {
      if (combinedTexts.size >= COMBINED_TEXTS_KEPT) combinedTexts.clear();
      texts = [];
      combinedTexts.set(write.sql, texts);
    }
    texts[events.length] = text;
  }
  return CompiledQuery.raw(text, withEventParameters(write.parameters, events));
}

const LOCK_TABLE_RACES = new Set(['23505', '42P07', '42710', '40P01']);

/** Creates the lock table and its one row; safe when several processes do it at once. */
async function ensureMigrationLockRow(client: pg.Client): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query(
        'create table if not exists tessera_migration_lock (id integer primary key)',
      );
      await client.query(
        'insert into tessera_migration_lock (id) values (1) on conflict do nothing',
      );
      return;
    } catch (error) {
      // Concurrent CREATE TABLE IF NOT EXISTS may collide in the catalog (23505, 42P07, 42710
      // for its row type) or deadlock (40P01); the loser finds the table on its next attempt.
      const code = (error as { code?: string }).code ?? '';
      if (!LOCK_TABLE_RACES.has(code) || attempt === MIGRATION_ATTEMPTS) throw error;
      await sleep(10 * attempt);
    }
  }
}

/** Kysely over one already-connected client, for the migration run's own transaction. */
class SingleClientDialect extends PostgresDialect {
  constructor(
    client: pg.Client | pg.PoolClient,
    private readonly schema: string | undefined,
  ) {
    super({
      pool: {
        connect: () =>
          Promise.resolve({
            query: client.query.bind(client) as never,
            release: () => undefined,
          }),
        end: () => Promise.resolve(),
      },
    });
  }

  // Kysely's own introspector reads every schema of the database, naming each in
  // has_schema_privilege() and pg_get_serial_sequence(): when another session drops a schema or
  // table meanwhile, the query fails with "schema … does not exist" and so did the migration.
  // The migrator only asks whether its schema and tables exist, so it is asked of one schema.
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    if (this.schema === undefined) return super.createIntrospector(db);
    return new OneSchemaIntrospector(db, this.schema);
  }

  // The row lock taken in migrate() serialises runs; Kysely's advisory lock is not needed.
  override createAdapter(): PostgresAdapter {
    return new (class extends PostgresAdapter {
      override async acquireMigrationLock(): Promise<void> {}
      override async releaseMigrationLock(): Promise<void> {}
    })();
  }
}

/** Schemas and tables of one schema, from plain catalog reads (no lookups by name). */
class OneSchemaIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<unknown>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`
      select nspname as name from pg_catalog.pg_namespace where nspname = ${this.schema}
    `.execute(this.db);
    return rows;
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; kind: string }>`
      select c.relname as name, c.relkind as kind
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      where ns.nspname = ${this.schema} and c.relkind in ('r', 'p', 'v')
    `.execute(this.db);
    return rows.map((row) => ({
      name: row.name,
      schema: this.schema,
      isView: row.kind === 'v',
      columns: [],
    }));
  }

  async getMetadata() {
    return { tables: await this.getTables() };
  }
}
