// The worker thread of backupInWorker (sqlite-backup.ts): takes one backup and posts the
// answer back.

import { parentPort, workerData } from 'node:worker_threads';
import {
  type SqliteBackupOptions,
  type WorkerAnswer,
  backupSqliteDatabase,
} from './sqlite-backup.js';

if (parentPort !== null) {
  const port = parentPort;
  backupSqliteDatabase(workerData as SqliteBackupOptions).then(
    (summary) => port.postMessage({ ok: true, summary } satisfies WorkerAnswer),
    (error: unknown) =>
      port.postMessage({
        ok: false,
        reason: error instanceof Error ? error.message : String(error),
      } satisfies WorkerAnswer),
  );
}
