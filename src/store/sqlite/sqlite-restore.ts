// Restoring a backup over the SQLite database, with the service stopped: the backup is checked
// (integrity, schema), the database it replaces is kept beside it, and nothing is replaced while
// another process has the database open.
//
// How a running service is noticed: a connection in WAL mode holds a shared lock on the
// database's -shm file for as long as it is open, idle or not. Leaving WAL mode needs every
// other connection gone, so `PRAGMA journal_mode = DELETE` on the database answers SQLITE_BUSY
// while a server (or a `tessera` command) has it open, and succeeds, folding the WAL into the
// file, when none has. The restore then holds an exclusive lock until the new file is in place.
// (POSIX locks do not tell connections of one process apart: this guards against other
// processes, which is what a running service is.)

import { chownSync, copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  compactTimestamp,
  createPrivateDirectory,
  fsyncDirectory,
  fsyncFile,
} from '../../files.js';
import { NewerSchemaError } from '../errors.js';
import { isBusy } from './sqlite-errors.js';
import {
  BACKUP_TABLE,
  type BackupRecord,
  appliedMigrations,
  integrityProblems,
  removeWithSideFiles,
} from './sqlite-backup.js';

export interface RestoreOptions {
  /** The backup file. */
  backup: string;
  /** The database to replace (or create). */
  target: string;
  /** The migrations this build knows: a backup with any other is refused. */
  knownMigrations: readonly string[];
  /** Names the kept database (`<target>.replaced-<time>`). */
  now?: () => Date;
}

/** What a backup file is, as read before restoring it. */
export interface BackupDescription {
  /** What `tessera backup` recorded in it; null for a copy made another way. */
  record: BackupRecord | null;
  /** The migrations it has (its schema). */
  migrations: string[];
}

export interface RestoreResult {
  backup: BackupDescription;
  target: string;
  /** Where the replaced database was moved, or null when there was none. */
  replaced: string | null;
  /** Migrations this build will apply at the next start (the backup is of an older schema). */
  pending: string[];
}

/** The database is open in another process: restoring now would pull it from under it. */
export class DatabaseInUseError extends Error {
  override readonly name = 'DatabaseInUseError';
}

/**
 * Reads and checks a backup: a SQLite file whose pages are intact (`integrity_check`), with a
 * Tessera schema this build knows. Throws, saying what is wrong, otherwise.
 */
export function inspectBackup(path: string, knownMigrations: readonly string[]): BackupDescription {
  const file = resolve(path);
  if (!existsSync(file)) throw new Error(`no backup at ${file}`);
  let database: Database.Database;
  try {
    database = new Database(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new Error(`${file} cannot be opened as a SQLite database`, { cause: error });
  }
  try {
    let problems: string[];
    try {
      problems = integrityProblems(database);
    } catch (error) {
      // "file is not a database": not SQLite at all, or its first page is gone.
      throw new Error(`${file} is not a usable SQLite database`, { cause: error });
    }
    if (problems.length > 0) {
      throw new Error(
        `the backup ${file} is damaged (integrity check: ${problems.slice(0, 3).join('; ')})`,
      );
    }
    const migrations = appliedMigrations(database);
    if (migrations === null) {
      throw new Error(`${file} is not a Tessera backup: it records no migration`);
    }
    const unknown = migrations.filter((name) => !knownMigrations.includes(name));
    if (unknown.length > 0) throw new NewerSchemaError(unknown, 'backup');
    return { record: readRecord(database), migrations };
  } finally {
    database.close();
  }
}

/**
 * Replaces `target` with a copy of `backup`. The backup is checked first; the target must not be
 * open in another process (DatabaseInUseError); the replaced database (with any WAL folded in)
 * is moved to `<target>.replaced-<time>`, beside it. The new file is in place atomically.
 */
export function restoreSqliteDatabase(options: RestoreOptions): RestoreResult {
  const target = resolve(options.target);
  const described = inspectBackup(options.backup, options.knownMigrations);
  if (resolve(options.backup) === target) {
    throw new Error('the backup is the database itself; nothing to restore');
  }
  createPrivateDirectory(dirname(target));
  const temporary = join(dirname(target), `.${basename(target)}.restore.${process.pid}.tmp`);
  removeWithSideFiles(temporary);
  const current = existsSync(target) ? lockForReplacement(target) : null;
  let replaced: string | null = null;
  try {
    copyFileSync(resolve(options.backup), temporary);
    prepareRestoredFile(temporary);
    if (current !== null) {
      // Owned as the database was, when run as root for a service running as its own user.
      const owner = statSync(target);
      if (process.getuid?.() === 0) chownSync(temporary, owner.uid, owner.gid);
      replaced = `${target}.replaced-${compactTimestamp((options.now ?? (() => new Date()))())}`;
      renameSync(target, replaced);
      // The WAL was folded in above; a -shm (or a stray -wal) must not meet the new file.
      for (const suffix of ['-wal', '-shm', '-journal']) {
        if (existsSync(`${target}${suffix}`))
          renameSync(`${target}${suffix}`, `${replaced}${suffix}`);
      }
    }
    renameSync(temporary, target);
    fsyncDirectory(dirname(target));
  } catch (error) {
    removeWithSideFiles(temporary);
    throw error;
  } finally {
    current?.close();
  }
  return {
    backup: described,
    target,
    replaced,
    pending: options.knownMigrations.filter((name) => !described.migrations.includes(name)),
  };
}

/**
 * Opens the database to be replaced and takes it over: out of WAL mode (refused while another
 * process has it open), then an exclusive lock, held until the caller closes the connection.
 */
function lockForReplacement(target: string): Database.Database {
  const database = new Database(target, { fileMustExist: true, timeout: 0 });
  try {
    const mode = database.pragma('journal_mode = DELETE', { simple: true });
    if (mode !== 'delete') throw new DatabaseInUseError(inUse(target));
    database.exec('BEGIN EXCLUSIVE');
    return database;
  } catch (error) {
    database.close();
    if (isBusy(error) || (error as { code?: string }).code === 'SQLITE_LOCKED') {
      throw new DatabaseInUseError(inUse(target), { cause: error });
    }
    throw error;
  }
}

function inUse(target: string): string {
  return `the database ${target} is in use by another process: stop Tessera (and any tessera command on it) before restoring`;
}

/** The copy loses the backup's own record (it is a database again) and is made durable. */
function prepareRestoredFile(path: string): void {
  const database = new Database(path, { fileMustExist: true });
  try {
    database.exec(`drop table if exists ${BACKUP_TABLE}`);
  } finally {
    database.close();
  }
  rmSync(`${path}-journal`, { force: true });
  fsyncFile(path);
}

function readRecord(database: Database.Database): BackupRecord | null {
  const table = database
    .prepare(`select 1 from sqlite_master where type = 'table' and name = ?`)
    .get(BACKUP_TABLE);
  if (table === undefined) return null;
  const rows = database.prepare(`select name, value from ${BACKUP_TABLE}`).all() as {
    name: string;
    value: string;
  }[];
  const values = new Map(rows.map((row) => [row.name, row.value]));
  return {
    tesseraVersion: values.get('tessera_version') ?? 'unknown',
    createdAt: values.get('created_at') ?? 'unknown',
    migrations: JSON.parse(values.get('migrations') ?? '[]') as string[],
  };
}
