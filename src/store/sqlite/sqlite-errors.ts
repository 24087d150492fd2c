import {
  DuplicateError,
  MissingParentError,
  StoreUnavailableError,
  USER_NAME_INDEX,
} from '../errors.js';

interface SqliteErrorLike {
  code?: unknown;
  message?: unknown;
}

/** True for SQLITE_BUSY and its extended codes: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  const code = (error as SqliteErrorLike | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

// SQLite names the columns of the unique key a row broke ("UNIQUE constraint failed:
// users.application, users.scim_user_name"), not the index: the indexes callers tell apart,
// by their columns.
const UNIQUE_INDEXES: Record<string, string> = {
  'users.application, users.scim_user_name': USER_NAME_INDEX,
};

function uniqueIndexOf(error: unknown): string | null {
  const message = (error as SqliteErrorLike | null)?.message;
  if (typeof message !== 'string') return null;
  const columns = /constraint failed: (.*)$/.exec(message)?.[1];
  return columns === undefined ? null : (UNIQUE_INDEXES[columns] ?? null);
}

/** Translates a better-sqlite3 error into a store error; other errors pass through. */
export function translateSqliteError(error: unknown): unknown {
  const code = (error as SqliteErrorLike | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  const options = { cause: error };
  if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') {
    return new DuplicateError('a row with this key exists', uniqueIndexOf(error), options);
  }
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
    return new MissingParentError('the referenced row does not exist', options);
  }
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_READONLY')) {
    return new StoreUnavailableError('the database cannot accept writes', 'writes', options);
  }
  if (
    code.startsWith('SQLITE_BUSY') ||
    code.startsWith('SQLITE_LOCKED') ||
    code.startsWith('SQLITE_IOERR') ||
    code.startsWith('SQLITE_CANTOPEN') ||
    code === 'SQLITE_NOMEM' ||
    code === 'SQLITE_PROTOCOL'
  ) {
    return new StoreUnavailableError('the database is unavailable', 'all', options);
  }
  return error;
}
