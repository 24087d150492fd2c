// The worker thread of backupInWorker (sqlite-backup.ts): takes one backup and posts the
// answer back.

import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import {
  type SqliteBackupOptions,
  type WorkerAnswer,
  backupSqliteDatabase,
} from './sqlite-backup.js';

/**
 * The backup yields the processor to the thread that serves requests: on Linux a thread has a
 * nice value of its own (setpriority on its thread id), and this one takes the lowest priority.
 * Elsewhere it runs at the process's priority.
 */
function yieldToTheServer(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, 19);
  } catch {
    // Not Linux, or /proc is not mounted: the backup runs at the process's priority.
  }
}

if (parentPort !== null) {
  const port = parentPort;
  yieldToTheServer();
  backupSqliteDatabase(workerData as SqliteBackupOptions).then(
    (summary) => port.postMessage({ ok: true, summary } satisfies WorkerAnswer),
    (error: unknown) =>
      port.postMessage({
        ok: false,
        reason: error instanceof Error ? error.message : String(error),
      } satisfies WorkerAnswer),
  );
}
