import { chmodSync, closeSync, existsSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { createPrivateDirectory } from '../../files.js';
import type { CommitRelay } from '../sql/commit-listeners.js';
import { SqlStore } from '../sql/sql-store.js';
import type { Store } from '../store.js';
import { SqliteExecutor } from './sqlite-executor.js';
import { DEFAULT_LOCK_WAIT_MS } from './sqlite-write-batcher.js';
import { translateSqliteError } from './sqlite-errors.js';

export interface SqliteStoreOptions {
  /**
   * False only in the bench's "without events" runs (bench/serve-without-events.mjs), to measure
   * what the audit trail costs: writes then record no event. Never off in service.
   */
  recordEvents?: boolean;
  /** A file path, or ':memory:'. */
  path: string;
  /**
   * How long a write waits for another process's write lock (a CLI command, a backup) before
   * failing with StoreUnavailableError. The wait happens between attempts, on a timer; SQLite's
   * own busy handler, which blocks the event loop, spins at most SQLITE_BUSY_SPIN_MS.
   */
  busyTimeoutMs?: number;
  /**
   * Called once with the store's own connection after its pragmas are set. For tests that
   * simulate the outside world on that connection (a full disk: max_page_count; a read-only
   * medium: query_only) and check its settings.
   */
  onConnection?: (database: Database.Database) => void;
  /** Open an existing file only: never create it, nor its directory. */
  mustExist?: boolean;
  /** The other processes serving the same file (IAM_WORKERS), told of commits and telling. */
  commitRelay?: CommitRelay;
}

/** The longest SQLite's busy handler may block the event loop in one go. */
export const SQLITE_BUSY_SPIN_MS = 10;

/**
 * The database and its -wal and -shm files are private to this user, whatever the directory's
 * mode or the umask: they hold key digests and, unless IAM_SECRET_KEY is set, the private
 * signing keys. A new file is created 0600 before SQLite opens it (SQLite gives -wal and -shm
 * the database's mode); files left readable by others (an older Tessera) are narrowed.
 */
function keepPrivate(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    } catch (error) {
      // Absent (no -wal yet), or owned by someone else: nothing this process may narrow.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'EPERM') throw error;
    }
  }
}

/** Opens (creating if needed) a SQLite database and returns the Store over it, unmigrated. */
export function openSqliteStore(options: SqliteStoreOptions): Store {
  const inMemory = options.path === ':memory:';
  if (!inMemory && options.mustExist !== true) {
    createPrivateDirectory(dirname(options.path));
    keepPrivate(options.path);
  }
  let database: Database.Database | undefined;
  try {
    database = new Database(options.path, {
      timeout: Math.min(options.busyTimeoutMs ?? DEFAULT_LOCK_WAIT_MS, SQLITE_BUSY_SPIN_MS),
      fileMustExist: options.mustExist === true,
    });
    if (!inMemory) {
      database.pragma('journal_mode = WAL');
      keepPrivate(options.path);
    }
    // FULL: an acknowledged commit survives power loss, not only a process crash.
    database.pragma('synchronous = FULL');
    database.pragma('foreign_keys = ON');
    // 8 MB of pages (SQLite's default is 2): the B-trees' upper levels stay cached, and the
    // leaves come from the OS's page cache. 32 MB held 20 MB more resident under random GETs of
    // 100,000 users at no CPU measurably saved (bench/README.md, "Memory: where each MB goes").
    database.pragma('cache_size = -8192');
    options.onConnection?.(database);
  } catch (error) {
    database?.close();
    throw translateSqliteError(error);
  }
  return new SqlStore(
    new SqliteExecutor(database, {
      lockWaitMs: options.busyTimeoutMs ?? DEFAULT_LOCK_WAIT_MS,
      recordEvents: options.recordEvents !== false,
      ...(options.commitRelay === undefined ? {} : { commitRelay: options.commitRelay }),
    }),
  );
}
