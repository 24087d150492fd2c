// What a SQL dialect supplies to SqlStore: a way to run compiled queries, its migrations and
// the few SQL fragments that differ between engines. The repositories (sql-*.ts) build every
// query with Kysely and compile it for the dialect; executors never see domain records.

import type { CompiledQuery, Expression, Kysely, SqlBool } from 'kysely';
import type { PoolStats, SchemaStatus, StoreObserver } from '../store.js';
import type { EventRow } from './rows.js';
import type { Tables } from './tables.js';

export interface WriteOptions {
  /**
   * Run the statements under SERIALIZABLE isolation (retrying serialization failures), for
   * writes whose condition reads other rows, e.g. "insert only when the table is empty".
   */
  serializable?: boolean;
  /**
   * Every statement must change at least one row (conditional writes on versions): when one
   * changes none, the whole transaction is rolled back and write() rejects with
   * ConditionFailedError.
   */
  everyStatementChanges?: boolean;
  /**
   * Events recording this write, inserted last in the same transaction (ids in commit order,
   * see sequenceEvents), and only when every statement changed at least one row (a conditional write whose
   * version moved on changed nothing, so it records nothing).
   */
  events?: readonly EventRow[];
  /**
   * The index of the statement that decides whether the write happened: the events are recorded
   * when it changed a row, whatever the others changed. Unset: every statement must change one.
   */
  decisive?: number;
}

/** Whether a write's statements, having changed these many rows each, made it happen. */
export function writeHappened(changes: readonly number[], options: WriteOptions): boolean {
  return options.decisive === undefined
    ? changes.every((changed) => changed > 0)
    : (changes[options.decisive] ?? 0) > 0;
}

export interface SqlExecutor {
  readonly kind: 'sqlite' | 'postgres';
  /** A query builder bound to this dialect; used only to build and compile queries. */
  readonly db: Kysely<Tables>;
  readonly flavor: SqlFlavor;
  /** Runs a read-only query. */
  select<Row>(query: CompiledQuery<Row>): Promise<Row[]>;
  /**
   * Runs the statements in one transaction and resolves, once the transaction is durable,
   * with the number of rows each statement changed. Rejects with a store error
   * (DuplicateError, MissingParentError, StoreUnavailableError) and then nothing changed.
   */
  write(statements: readonly CompiledQuery[], options?: WriteOptions): Promise<number[]>;
  /**
   * Runs one statement that changes rows and returns some (RETURNING), as a write of its own,
   * and resolves once it is durable with the rows. Errors as write().
   */
  writeReturning<Row>(query: CompiledQuery<Row>): Promise<Row[]>;
  /**
   * Gives every event committed so far its id, where ids are handed out after the commit
   * (PostgreSQL's sequencer); absent where a commit numbers its events itself (SQLite). The
   * event readers call it first, so a write's events are readable once it is acknowledged.
   */
  sequenceEvents?(): Promise<void>;
  /**
   * A read-only view of the database as it is now, for reads that must agree with each other
   * however long they take (an export): every select through it sees the same snapshot, and
   * writes go on meanwhile. close() releases it; call it whatever happens.
   */
  openSnapshot(): Promise<SnapshotReader>;
  /** See EventRepository.watchEvents. */
  watchEvents(onCommitted: () => void): () => void;
  /** Resolves when the database answers; StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /** Applies pending migrations, serialised against other processes doing the same. */
  migrate(): Promise<void>;
  /** See Store.schemaStatus. */
  schemaStatus(): Promise<SchemaStatus>;
  /** Waits for acknowledged writes, then releases the database. */
  close(): Promise<void>;
  /**
   * Brings the planner's statistics of a table up to date (PostgreSQL's ANALYZE) and resolves
   * with the number of rows they now count; absent where the planner keeps none (SQLite).
   */
  analyze?(table: 'users'): Promise<number>;
  /** See Store.poolStats. */
  poolStats?(): PoolStats;
  /** See Store.observe. */
  observe?(observer: StoreObserver): void;
}

export interface SnapshotReader {
  /** Runs a read-only query on the snapshot. */
  select<Row>(query: CompiledQuery<Row>): Promise<Row[]>;
  /** Ends the snapshot and gives its connection back. Safe to call twice. */
  close(): Promise<void>;
}

export interface SqlFlavor {
  /** True when the JSON array text in `column` contains the string `value`. */
  jsonArrayContains(column: 'users.roles' | 'users.scopes', value: string): Expression<SqlBool>;
  /** True when `text` contains `part` (both non-null), comparing code points exactly. */
  contains(text: Expression<string>, part: unknown): Expression<SqlBool>;
  /** `text` with A–Z folded to a–z and nothing else, ordered by bytes. */
  asciiLower(text: Expression<string>): Expression<string>;
}
