// Store-level failures, independent of any driver. Each backend translates its driver's
// errors into these so the layers above never see SQLSTATEs or SQLite result codes.

/** A unique key already exists. */
export class DuplicateError extends Error {
  override readonly name = 'DuplicateError';
  constructor(
    message: string,
    /** The unique index or constraint that refused the row, when the driver names it. */
    readonly index: string | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The unique index of users that keeps SCIM userNames apart regardless of ASCII case. */
export const USER_NAME_INDEX = 'users_scim_user_name';

/** The row this write refers to (a user's application) does not exist. */
export class MissingParentError extends Error {
  override readonly name = 'MissingParentError';
}

/**
 * The database cannot serve the request right now: unreachable, busy past the timeout,
 * out of space, or read-only. The operation did not take effect and may be retried.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(
    message: string,
    /** Which operations are affected: writes only (disk full, read-only) or everything. */
    readonly scope: 'writes' | 'all' = 'all',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A conditional write found a version other than the one it expected: nothing was written. */
export class ConditionFailedError extends Error {
  override readonly name = 'ConditionFailedError';
}

/**
 * The database holds migrations this build does not know: a newer Tessera wrote it. Running on
 * it could misread or damage what the newer schema means, so start-up, migrate and restore
 * refuse; the message names the migrations and says what to do, in one line.
 */
export class NewerSchemaError extends Error {
  override readonly name = 'NewerSchemaError';
  constructor(
    readonly unknownMigrations: readonly string[],
    /** What holds them: the database, or a backup about to be restored. */
    subject: 'database' | 'backup' = 'database',
  ) {
    const listed = `${unknownMigrations.length === 1 ? 'migration' : 'migrations'} ${unknownMigrations.join(', ')}`;
    super(
      subject === 'database'
        ? `the database was written by a newer Tessera: it has ${listed}, which this version does not know; ` +
            'run that version or a later one, or restore a backup taken before the upgrade (docs/operations.md)'
        : `the backup was written by a newer Tessera: it has ${listed}, which this version does not know; ` +
            'restore it with that version or a later one',
    );
  }
}
