// What a SQL dialect supplies to SqlStore: a way to run compiled queries, its migrations and
// the few SQL fragments that differ between engines. Queries are built once, with Kysely,
// in sql-store.ts; executors never see domain records.

import type { CompiledQuery, Expression, Kysely, SqlBool } from 'kysely';
import type { Tables } from './tables.js';

export interface WriteOptions {
  /**
   * Run the statements under SERIALIZABLE isolation (retrying serialization failures), for
   * writes whose condition reads other rows, e.g. "insert only when the table is empty".
   */
  serializable?: boolean;
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
  ping(): Promise<void>;
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export interface SqlFlavor {
  /** True when the JSON array text in `column` contains the string `value`. */
  jsonArrayContains(column: 'users.roles' | 'users.scopes', value: string): Expression<SqlBool>;
}
