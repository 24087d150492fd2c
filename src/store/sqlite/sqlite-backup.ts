// Online backups of the SQLite database: a consistent copy while the service serves, verified,
// with the Tessera version and schema recorded inside it, written atomically.
//
// Consistent: the copy is made by SQLite's online backup API on a connection of its own that
// holds one read transaction (a WAL snapshot) from the first page to the last. Without it,
// every commit of the server restarts the copy from the beginning (SQLite resets the backup
// when another connection changes the source), and under steady writes it never finishes.
// Readers never block writers in WAL mode, so the server keeps committing meanwhile; the WAL
// grows instead, and is checkpointed by this connection once the copy is done, so the server's
// next commit does not inherit that work.
//
// Atomic: the copy is built in a hidden file beside the output, checked, fsynced, renamed over
// the output, and the directory is fsynced. A crash (kill -9, power loss) leaves the previous
// output or the new one, never a partial one; the next backup removes the hidden leftovers.

import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { createPrivateDirectory, fsyncDirectory, fsyncFile } from '../../files.js';

/** The table of a backup file that says what it is. */
export const BACKUP_TABLE = 'tessera_backup';

/** What a backup records about itself, inside the file. */
export interface BackupRecord {
  /** The Tessera that took it. */
  tesseraVersion: string;
  /** When the copy's snapshot was taken (RFC 3339). */
  createdAt: string;
  /** The migrations the database had: its schema. */
  migrations: string[];
}

export interface BackupSummary {
  /** The backup file. */
  path: string;
  bytes: number;
  durationMs: number;
  record: BackupRecord;
}

export interface SqliteBackupOptions {
  /** The live database. */
  source: string;
  /** Where the backup goes; replaced atomically if it exists. */
  output: string;
  tesseraVersion: string;
  /** How long one copy step should take; the pages per step follow it (default 5 ms). */
  stepMs?: number;
}

const DEFAULT_STEP_MS = 5;
const MIN_PAGES_PER_STEP = 16;
const MAX_PAGES_PER_STEP = 65_536;
/** SQLite's own files beside a database: leftovers of an interrupted copy go with it. */
const SIDE_FILES = ['', '-journal', '-wal', '-shm'];

/**
 * Copies `source` to `output` while other connections (the server) go on writing, checks the
 * copy (`integrity_check`), records the Tessera version and schema in it, and moves it into
 * place atomically. Resolves with what it wrote; rejects without leaving a file at `output`.
 */
export async function backupSqliteDatabase(options: SqliteBackupOptions): Promise<BackupSummary> {
  const started = performance.now();
  const source = resolve(options.source);
  const output = resolve(options.output);
  if (SIDE_FILES.some((suffix) => output === `${source}${suffix}`)) {
    throw new Error(`the backup cannot be written over the database itself (${output})`);
  }
  if (!existsSync(source)) throw new Error(`no database at ${source}`);
  createPrivateDirectory(dirname(output));
  removeStaleTemporaryFiles(output);
  const temporary = temporaryPathFor(output);
  removeWithSideFiles(temporary);

  const database = new Database(source, { fileMustExist: true, timeout: 1_000 });
  let record: BackupRecord;
  try {
    database.pragma('query_only = ON');
    // The snapshot: from this read on, this connection sees the database as it is now.
    database.exec('BEGIN');
    const migrations = appliedMigrations(database);
    if (migrations === null) {
      throw new Error(`${source} is not a Tessera database: it records no migration`);
    }
    record = {
      tesseraVersion: options.tesseraVersion,
      createdAt: new Date().toISOString(),
      migrations,
    };
    // Created private (0600) before SQLite writes to it: it holds what the database holds.
    closeSync(openSync(temporary, 'wx', 0o600));
    await database.backup(temporary, { progress: pacedSteps(options.stepMs ?? DEFAULT_STEP_MS) });
    database.exec('COMMIT');
    // The WAL grew while the snapshot was held; fold it back here, not in a server commit.
    database.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    removeWithSideFiles(temporary);
    throw error;
  } finally {
    database.close();
  }

  try {
    finishCopy(temporary, record);
    fsyncFile(temporary);
    renameOver(temporary, output);
    fsyncDirectory(dirname(output));
  } catch (error) {
    removeWithSideFiles(temporary);
    throw error;
  }
  return {
    path: output,
    bytes: statSync(output).size,
    durationMs: performance.now() - started,
    record,
  };
}

/**
 * Makes the copy a file of its own (rollback journal, not WAL: nothing beside it is needed),
 * records what it is, and checks it whole.
 */
function finishCopy(path: string, record: BackupRecord): void {
  const copy = new Database(path, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    copy.pragma('synchronous = FULL');
    copy.exec(
      `create table if not exists ${BACKUP_TABLE} (name text primary key, value text not null) strict`,
    );
    const put = copy.prepare(`insert or replace into ${BACKUP_TABLE} (name, value) values (?, ?)`);
    copy.transaction(() => {
      put.run('tessera_version', record.tesseraVersion);
      put.run('created_at', record.createdAt);
      put.run('migrations', JSON.stringify(record.migrations));
    })();
    const problems = integrityProblems(copy);
    if (problems.length > 0) {
      throw new Error(`the copy failed its integrity check: ${problems.slice(0, 3).join('; ')}`);
    }
  } finally {
    copy.close();
  }
}

/** What `PRAGMA integrity_check` finds wrong; empty when it says "ok". */
export function integrityProblems(database: Database.Database): string[] {
  const rows = database.pragma('integrity_check') as { integrity_check: string }[];
  const lines = rows.map((row) => row.integrity_check);
  return lines.length === 1 && lines[0] === 'ok' ? [] : lines;
}

/** The migrations a database records, in name order; null when it records none. */
export function appliedMigrations(database: Database.Database): string[] | null {
  const table = database
    .prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'")
    .get();
  if (table === undefined) return null;
  return (
    database.prepare('select name from kysely_migration order by name').all() as {
      name: string;
    }[]
  ).map((row) => row.name);
}

/**
 * The progress callback of better-sqlite3's backup(): after each step it returns how many
 * pages the next one copies, so that a step takes about `stepMs`. Between steps the event loop
 * runs (better-sqlite3 waits a setImmediate), and the connection holds no lock a writer needs.
 */
function pacedSteps(stepMs: number): () => number {
  let pages = MIN_PAGES_PER_STEP * 4;
  let last = performance.now();
  return () => {
    const now = performance.now();
    const took = Math.max(now - last, 0.05);
    last = now;
    pages = Math.round(
      Math.min(MAX_PAGES_PER_STEP, Math.max(MIN_PAGES_PER_STEP, (pages * stepMs) / took)),
    );
    return pages;
  };
}

/** The hidden file a backup to `output` is built in, named for this process. */
export function temporaryPathFor(output: string): string {
  return join(dirname(output), `.${basename(output)}.${process.pid}.tmp`);
}

/**
 * Removes what interrupted backups to `output` left behind: hidden copies of processes that are
 * gone (a kill -9, a power cut), with their journals. Copies of live processes stay.
 */
export function removeStaleTemporaryFiles(output: string): void {
  const prefix = `.${basename(output)}.`;
  let names: string[];
  try {
    names = readdirSync(dirname(output));
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const match = /^(\d+)\.tmp(?:-journal|-wal|-shm)?$/.exec(name.slice(prefix.length));
    if (match === null || isAlive(Number(match[1]))) continue;
    rmSync(join(dirname(output), name), { force: true });
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function removeWithSideFiles(path: string): void {
  for (const suffix of SIDE_FILES) rmSync(`${path}${suffix}`, { force: true });
}

/** Moves the finished copy into place: rename(2) replaces `to` atomically. */
function renameOver(from: string, to: string): void {
  if (existsSync(to) && statSync(to).isDirectory()) {
    throw new Error(`the backup's path ${to} is a directory`);
  }
  renameSync(from, to);
}

/** How long stopping a backup waits for its worker to end. */
const STOP_WAIT_MS = 1_000;

/** A backup run in a worker thread: the server's event loop never waits for it. */
export interface BackupInWorker {
  /** Resolves with the backup, or rejects with why there is none. */
  done: Promise<BackupSummary>;
  /**
   * Stops the backup: resolves once the worker has exited (its hidden copy removed), or after a
   * second when it is inside a native call that cannot be cut short.
   */
  stop(): Promise<void>;
}

/**
 * Runs backupSqliteDatabase in a worker thread. The copy and its integrity check take seconds
 * on a large database and `integrity_check` cannot be cut into steps; on the main thread they
 * would hold up every request for as long.
 */
export function backupInWorker(options: SqliteBackupOptions): BackupInWorker {
  const worker = new Worker(new URL('./sqlite-backup-worker.js', import.meta.url), {
    workerData: options,
  });
  let stopped = false;
  const done = new Promise<BackupSummary>((resolveDone, rejectDone) => {
    worker.once('message', (message: WorkerAnswer) => {
      if (message.ok) resolveDone(message.summary);
      else rejectDone(new Error(message.reason));
    });
    worker.once('error', rejectDone);
    worker.once('exit', () => {
      if (stopped) {
        removeWithSideFiles(temporaryPathFor(resolve(options.output)));
        rejectDone(new Error('the backup was stopped'));
      } else {
        rejectDone(new Error('the backup worker exited without an answer'));
      }
    });
  });
  return {
    done,
    stop: async () => {
      stopped = true;
      // A worker inside integrity_check (native code, seconds on a large database) ends only
      // when that returns; a stopping server does not wait for it that long. Its hidden copy is
      // then removed by the next backup (its process is gone).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        worker.terminate(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, STOP_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

/** What the worker posts back: the backup, or why it failed. */
export type WorkerAnswer = { ok: true; summary: BackupSummary } | { ok: false; reason: string };
