import type pg from 'pg';
import { DuplicateError, MissingParentError, StoreUnavailableError } from '../errors.js';

interface PgErrorLike {
  code?: unknown;
  constraint?: unknown;
}

// SQLSTATE classes that mean "the database cannot serve this now": connection exceptions (08),
// insufficient resources (53), operator intervention (57: shutdown, cancelled by the statement
// timeout), system errors (58), and serialization failures and deadlocks that outlived retries.
const UNAVAILABLE_CLASSES = ['08', '53', '57', '58'];
const RETRYABLE_STATES = new Set(['40001', '40P01']);
// Node's socket errors, and pg's own words for a connection that died or never came.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const NETWORK_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'timeout expired', // pg.Client's own connectionTimeoutMillis
  'Query read timeout',
  'Client has encountered a connection error',
  'Client was closed',
  'Cannot use a pool after calling end',
];

/**
 * True when the transaction may simply be run again: a serialization failure, a deadlock, or a
 * prepared plan that another instance's migration invalidated (see isPlanInvalidated).
 */
export function isRetryable(error: unknown): boolean {
  const code = (error as PgErrorLike | null)?.code;
  return typeof code === 'string' && (RETRYABLE_STATES.has(code) || isPlanInvalidated(error));
}

/** "cached plan must not change result type": a table changed under a prepared statement. */
export function isPlanInvalidated(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as PgErrorLike).code === '0A000' &&
    error.message.includes('cached plan must not change result type')
  );
}

/**
 * True when the connection itself failed (as opposed to the statement), so the client must be
 * discarded rather than returned to the pool.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as PgErrorLike).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    if (code.length === 5 && (code.startsWith('08') || code.startsWith('57P'))) return true;
  }
  return NETWORK_MESSAGES.some((words) => error.message.includes(words));
}

/**
 * Gives back the client of a transaction that failed with `error`: discarded when its connection
 * failed, otherwise rolled back and returned to the pool (discarded if even the rollback fails).
 */
export async function releaseFailedTransaction(
  client: pg.PoolClient,
  error: unknown,
): Promise<void> {
  if (isConnectionFailure(error)) {
    client.release(error as Error);
    return;
  }
  try {
    await client.query('rollback');
    client.release();
  } catch (rollbackError) {
    client.release(rollbackError as Error);
  }
}

/** Translates a pg error into a store error; other errors pass through. */
export function translatePostgresError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const options = { cause: error };
  const code = (error as PgErrorLike).code;
  if (code === '23505') {
    const constraint = (error as PgErrorLike).constraint;
    return new DuplicateError(
      'a row with this key exists',
      typeof constraint === 'string' ? constraint : null,
      options,
    );
  }
  if (code === '23503') {
    return new MissingParentError('the referenced row does not exist', options);
  }
  // read_only_sql_transaction (a standby, default_transaction_read_only) and disk_full.
  if (code === '25006' || code === '53100') {
    return new StoreUnavailableError('the database cannot accept writes', 'writes', options);
  }
  if (
    isConnectionFailure(error) ||
    (typeof code === 'string' &&
      (UNAVAILABLE_CLASSES.some((prefix) => code.startsWith(prefix)) || isRetryable(error)))
  ) {
    return new StoreUnavailableError('the database is unavailable', 'all', options);
  }
  return error;
}
