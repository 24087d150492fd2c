import Database from 'better-sqlite3';
import { type CompiledQuery, Kysely, SqliteDialect, sql } from 'kysely';
import {
  type SnapshotReader,
  type SqlExecutor,
  type SqlFlavor,
  type WriteOptions,
  writeHappened,
} from '../sql/sql-executor.js';
import { migrateToLatest, readAppliedMigrations, schemaStatusOf } from '../sql/migrate.js';
import { EVENT_COLUMNS } from '../sql/rows.js';
import type { Tables } from '../sql/tables.js';
import type { SchemaStatus, StoreObserver } from '../store.js';
import { ConditionFailedError, StoreUnavailableError } from '../errors.js';
import { isBusy, translateSqliteError } from './sqlite-errors.js';
import { sqliteMigrations } from './sqlite-migrations.js';
import { SqliteWriteBatcher } from './sqlite-write-batcher.js';
import { type CommitRelay, CommitListeners } from '../sql/commit-listeners.js';

const sqliteFlavor: SqlFlavor = {
  jsonArrayContains: (column, value) =>
    sql<boolean>`exists (select 1 from json_each(${sql.ref(column)}) where json_each.value = ${value})`,
  contains: (text, part) => sql<boolean>`instr(${text}, ${part}) > 0`,
  // SQLite's lower() folds ASCII letters only.
  asciiLower: (text) => sql<string>`lower(${text})`,
};

// Query shapes are few (filters combine in at most 16 ways) but IN-lists vary in length;
// past this many distinct statements the cache starts over rather than growing.
const STATEMENT_CACHE_LIMIT = 2000;

/** How long a migrating process waits for another one to finish migrating the same file. */
const MIGRATION_LOCK_WAIT_MS = 60_000;

/** Makes a row's object from better-sqlite3's raw array of its values. */
type RowMaker = (values: unknown[]) => Record<string, unknown>;

/**
 * Rows as objects, made here from better-sqlite3's raw arrays: building them in C++ through
 * V8's API costs about twice as much (a page of 100 users: ~300 µs against ~200 µs). Each
 * statement gets a function that writes its columns as one object literal: assigning them one
 * by one by name (`row[column] = value`) took ~1 µs a row of 17 columns in the server, where
 * so many shapes of row pass through one assignment that V8 looks each name up generically;
 * the literal makes every row of a statement the same shape at once. The names are the
 * statement's own column names (the SQL's, never a request's), written as JSON string
 * literals. Like better-sqlite3's own objects, a later column of the same name wins.
 */
function rowMaker(columns: readonly string[]): RowMaker {
  const members = columns.map((column, index) => `${JSON.stringify(column)}: values[${index}]`);
  return new Function('values', `return { ${members.join(', ')} };`) as RowMaker;
}

export class SqliteExecutor implements SqlExecutor {
  readonly kind = 'sqlite';
  readonly db: Kysely<Tables>;
  readonly flavor = sqliteFlavor;
  readonly #database: Database.Database;
  readonly #batcher: SqliteWriteBatcher;
  readonly #statements = new Map<string, Database.Statement>();
  /** The row makers of the statements select() runs in raw mode (rowMaker). */
  readonly #rowMakers = new WeakMap<Database.Statement, RowMaker>();
  readonly #ping: Database.Statement;
  #insertEventStatement: Database.Statement | undefined;
  readonly #committed = new CommitListeners();

  readonly #recordEvents: boolean;
  readonly #relay: CommitRelay | undefined;
  readonly #stopRelaying: (() => void) | undefined;

  constructor(
    database: Database.Database,
    options: { lockWaitMs?: number; recordEvents?: boolean; commitRelay?: CommitRelay } = {},
  ) {
    this.#recordEvents = options.recordEvents !== false;
    this.#relay = options.commitRelay;
    this.#stopRelaying = this.#relay?.listen(() => this.#committed.notify());
    this.#database = database;
    this.db = new Kysely<Tables>({ dialect: new SqliteDialect({ database }) });
    this.#batcher = new SqliteWriteBatcher(database, {
      ...(options.lockWaitMs === undefined ? {} : { lockWaitMs: options.lockWaitMs }),
      ...(options.commitRelay?.writeTurn === undefined
        ? {}
        : { writeTurn: options.commitRelay.writeTurn }),
    });
    this.#ping = database.prepare('select 1');
  }

  select<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    if (!this.#database.open) {
      return Promise.reject(new StoreUnavailableError('the database is closed', 'all'));
    }
    try {
      const statement = this.#prepare(query.sql);
      let makeRow = this.#rowMakers.get(statement);
      if (makeRow === undefined) {
        makeRow = rowMaker(statement.columns().map((column) => column.name));
        statement.raw(true);
        this.#rowMakers.set(statement, makeRow);
      }
      return Promise.resolve(
        (statement.all(...query.parameters) as unknown[][]).map(makeRow) as Row[],
      );
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  }

  write(statements: readonly CompiledQuery[], options: WriteOptions = {}): Promise<number[]> {
    // WriteOptions.serializable needs nothing here: with one writer connection, SQLite
    // transactions are serializable already. A throw inside the work rolls back its savepoint.
    // Events go in the write's transaction, after the batch's savepoints (the batcher says
    // why): with their write, or not at all. One writer at a time holds the database, so
    // AUTOINCREMENT hands out ids in commit order.
    const events = this.#recordEvents ? (options.events ?? []) : [];
    let recorded = false;
    const written = this.#batcher.run(
      () =>
        statements.map((query) => {
          const changes = this.#prepare(query.sql).run(...query.parameters).changes;
          if (changes === 0 && options.everyStatementChanges === true) {
            throw new ConditionFailedError('a conditional statement changed no row');
          }
          return changes;
        }),
      events.length === 0
        ? undefined
        : (changed) => {
            if (!writeHappened(changed, options)) return;
            const insert = this.#insertEvent;
            for (const event of events) insert.run(EVENT_COLUMNS.map((column) => event[column]));
            recorded = true;
          },
    );
    if (events.length === 0) return written;
    // Watchers hear of the events once their transaction has committed.
    return written.then((changes) => {
      if (recorded) {
        this.#committed.notify();
        this.#relay?.announce();
      }
      return changes;
    });
  }

  /**
   * A read transaction on a connection of its own: in WAL mode it keeps seeing the database as
   * it was when it began while this connection goes on writing, and holds back only the
   * checkpoint past that point. An in-memory database has no file another connection could
   * open: its snapshot is a copy (serialize), which costs what the database weighs, already in
   * memory.
   */
  openSnapshot(): Promise<SnapshotReader> {
    if (!this.#database.open) {
      return Promise.reject(new StoreUnavailableError('the database is closed', 'all'));
    }
    try {
      const reader = this.#database.memory
        ? new Database(this.#database.serialize())
        : new Database(this.#database.name, { readonly: true, fileMustExist: true });
      reader.exec('BEGIN');
      // The snapshot starts at the first read, not at BEGIN: read now.
      reader.prepare('select count(*) from sqlite_schema').get();
      return Promise.resolve(new SqliteSnapshot(reader));
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  }

  /**
   * In-process, and from the other workers through the commit relay when several share the
   * file. Writes of other processes (the CLI) are not heard of; watchers find them when they
   * look.
   */
  watchEvents(onCommitted: () => void): () => void {
    return this.#committed.add(onCommitted);
  }

  async writeReturning<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    let rows: Row[] = [];
    // In the group commit like any write: acknowledged once its batch is durable.
    await this.#batcher.run(() => {
      rows = this.#prepare(query.sql).all(...query.parameters) as Row[];
      return [rows.length];
    });
    return rows;
  }

  ping(): Promise<void> {
    try {
      this.#ping.get();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  }

  /**
   * Kysely's SQLite adapter neither locks nor wraps migrations in a transaction. Here the
   * whole run is one IMMEDIATE transaction: a second process migrating the same file waits
   * for the write lock, then finds everything applied; a failure leaves nothing half-done.
   * Call before the store takes writes.
   */
  async migrate(): Promise<void> {
    const database = this.#database;
    try {
      await this.#beginImmediateWithoutBlocking(MIGRATION_LOCK_WAIT_MS);
      try {
        await migrateToLatest(this.db as Kysely<unknown>, sqliteMigrations, {
          disableTransactions: true,
        });
        database.exec('COMMIT');
      } catch (error) {
        if (database.inTransaction) database.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      throw translateSqliteError(error);
    }
  }

  async schemaStatus(): Promise<SchemaStatus> {
    try {
      return schemaStatusOf(
        sqliteMigrations,
        await readAppliedMigrations(this.db as Kysely<unknown>),
      );
    } catch (error) {
      throw translateSqliteError(error);
    }
  }

  /**
   * BEGIN IMMEDIATE, waiting for the write lock between attempts rather than in SQLite's
   * busy handler, which would block the event loop (and deadlock against a holder in this
   * same process).
   */
  async #beginImmediateWithoutBlocking(waitMs: number): Promise<void> {
    const database = this.#database;
    const busyTimeout = database.pragma('busy_timeout', { simple: true }) as number;
    const deadline = Date.now() + waitMs;
    database.pragma('busy_timeout = 0');
    try {
      for (;;) {
        try {
          database.exec('BEGIN IMMEDIATE');
          return;
        } catch (error) {
          if (!isBusy(error) || Date.now() >= deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    } finally {
      database.pragma(`busy_timeout = ${busyTimeout}`);
    }
  }

  observe(observer: StoreObserver): void {
    this.#batcher.observers.push(observer);
  }

  async close(): Promise<void> {
    this.#stopRelaying?.();
    await this.#batcher.drain();
    if (this.#database.open) this.#database.close();
  }

  get #insertEvent(): Database.Statement {
    this.#insertEventStatement ??= this.#database.prepare(
      `insert into events (${EVENT_COLUMNS.join(', ')}) values (${EVENT_COLUMNS.map(() => '?').join(', ')})`,
    );
    return this.#insertEventStatement;
  }

  #prepare(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (statement === undefined) {
      if (this.#statements.size >= STATEMENT_CACHE_LIMIT) this.#statements.clear();
      statement = this.#database.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }
}

/** A read transaction on its own connection (SqliteExecutor.openSnapshot). */
class SqliteSnapshot implements SnapshotReader {
  readonly #statements = new Map<string, Database.Statement>();

  constructor(private readonly database: Database.Database) {}

  select<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    if (!this.database.open) {
      return Promise.reject(new StoreUnavailableError('the snapshot is closed', 'all'));
    }
    try {
      let statement = this.#statements.get(query.sql);
      if (statement === undefined) {
        statement = this.database.prepare(query.sql);
        this.#statements.set(query.sql, statement);
      }
      return Promise.resolve(statement.all(...query.parameters) as Row[]);
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  }

  close(): Promise<void> {
    if (this.database.open) this.database.close();
    return Promise.resolve();
  }
}
