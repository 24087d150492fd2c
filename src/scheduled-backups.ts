// Backups the service takes of its own SQLite database (IAM_BACKUP_DIR, IAM_BACKUP_INTERVAL,
// IAM_BACKUP_KEEP): one every interval, in a worker thread, named by the time it was taken; the
// newest `keep` are kept. The schedule follows the newest backup in the directory, so a restart
// neither skips one nor takes an extra one; a failed backup is tried again sooner.

import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { compactTimestamp, createPrivateDirectory } from './files.js';
import {
  type BackupInWorker,
  type BackupSummary,
  type SqliteBackupOptions,
  backupInWorker,
} from './store/sqlite/sqlite-backup.js';

/** tessera-20261126T120000Z.db: what the schedule writes, and all it ever deletes. */
const SCHEDULED_NAME = /^tessera-(\d{8}T\d{6}Z)\.db$/;
/** A failed backup is tried again after this long (or the interval, if shorter). */
const RETRY_AFTER_MS = 10 * 60_000;
/** setTimeout's longest delay; longer waits are taken in several. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export interface ScheduledBackupsOptions {
  /** The live database. */
  source: string;
  directory: string;
  intervalMs: number;
  keep: number;
  tesseraVersion: string;
  /** Told of each backup taken, and at start of the newest one already there. */
  onBackup: (backup: {
    path: string;
    takenAt: number;
    bytes: number;
    durationMs: number | null;
  }) => void;
  onFailure: (reason: string, retryAt: number) => void;
  /** Told after each backup, with the files retention removed. */
  onRemoved?: (files: string[]) => void;
  now?: () => number;
  /** Runs one backup; the default runs it in a worker thread. */
  takeBackup?: (options: SqliteBackupOptions) => BackupInWorker;
}

export interface ScheduledBackups {
  /** Stops the schedule; a backup in progress is stopped and its hidden copy removed. */
  stop(): Promise<void>;
}

/** A scheduled backup's file name for a time. */
export function scheduledBackupName(at: number): string {
  return `tessera-${compactTimestamp(new Date(at))}.db`;
}

/** The directory's scheduled backups, oldest first, with their times. */
export function listScheduledBackups(directory: string): { name: string; takenAt: number }[] {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, match: SCHEDULED_NAME.exec(name) }))
    .filter((entry) => entry.match !== null)
    .map(({ name, match }) => ({ name, takenAt: Date.parse(expand(match![1]!)) }))
    .sort((a, b) => a.takenAt - b.takenAt);
}

/** 20261126T120000Z → 2026-11-26T12:00:00Z */
function expand(stamp: string): string {
  return stamp.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z');
}

/**
 * Starts the schedule. The first backup is due one interval after the newest one in the
 * directory (at once when there is none, or it is older than that).
 */
export function scheduleBackups(options: ScheduledBackupsOptions): ScheduledBackups {
  const now = options.now ?? Date.now;
  const take = options.takeBackup ?? backupInWorker;
  createPrivateDirectory(options.directory);
  let timer: NodeJS.Timeout | undefined;
  let running: BackupInWorker | undefined;
  let stopped = false;

  const newest = listScheduledBackups(options.directory).at(-1);
  if (newest !== undefined) {
    const path = join(options.directory, newest.name);
    options.onBackup({
      path,
      takenAt: newest.takenAt,
      bytes: statSync(path).size,
      durationMs: null,
    });
  }
  wakeAt(newest === undefined ? now() : newest.takenAt + options.intervalMs);

  function wakeAt(at: number): void {
    if (stopped) return;
    const delay = Math.max(0, at - now());
    timer = setTimeout(
      () => (delay > LONGEST_TIMER_MS ? wakeAt(at) : void runOnce()),
      Math.min(delay, LONGEST_TIMER_MS),
    );
    timer.unref();
  }

  async function runOnce(): Promise<void> {
    const startedAt = now();
    const output = join(options.directory, scheduledBackupName(startedAt));
    running = take({ source: options.source, output, tesseraVersion: options.tesseraVersion });
    let summary: BackupSummary;
    try {
      summary = await running.done;
    } catch (error) {
      running = undefined;
      if (stopped) return;
      const retryAt = now() + Math.min(options.intervalMs, RETRY_AFTER_MS);
      options.onFailure(error instanceof Error ? error.message : String(error), retryAt);
      wakeAt(retryAt);
      return;
    }
    running = undefined;
    options.onBackup({
      path: summary.path,
      takenAt: startedAt,
      bytes: summary.bytes,
      durationMs: summary.durationMs,
    });
    options.onRemoved?.(removeBeyond(options.directory, options.keep));
    wakeAt(startedAt + options.intervalMs);
  }

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.stop();
    },
  };
}

/** Deletes the oldest scheduled backups beyond the newest `keep`; returns their names. */
function removeBeyond(directory: string, keep: number): string[] {
  const backups = listScheduledBackups(directory);
  const removed = backups.slice(0, Math.max(0, backups.length - keep)).map((entry) => entry.name);
  for (const name of removed) rmSync(join(directory, name), { force: true });
  return removed;
}
