// Backups the service takes itself (IAM_BACKUP_DIR, IAM_BACKUP_INTERVAL, IAM_BACKUP_KEEP): the
// schedule with a controlled clock, then a server process that backs up, keeps the newest, says
// so in /metrics and its log, and backs up an older database before migrating it.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it, mock } from 'node:test';
import Database from 'better-sqlite3';
import { ConfigError, loadConfig } from '../src/config.js';
import {
  type ScheduledBackupsOptions,
  listScheduledBackups,
  scheduleBackups,
  scheduledBackupName,
} from '../src/scheduled-backups.js';
import type { BackupInWorker, SqliteBackupOptions } from '../src/store/sqlite/sqlite-backup.js';
import { MIGRATION_NAMES, olderDatabase } from './cli-runs.js';
import { startServerProcess, serverEntry } from './server-process.js';

const HOUR = 3_600_000;
const START = Date.parse('2026-11-26T12:00:00.000Z');

/** A backup that writes a small file at once (or fails, when told to). */
function fakeBackups(outcome: { fail: boolean }) {
  const taken: string[] = [];
  const take = (options: SqliteBackupOptions): BackupInWorker => {
    taken.push(options.output);
    const done = outcome.fail
      ? Promise.reject(new Error('disk full'))
      : Promise.resolve().then(() => {
          writeFileSync(options.output, 'backup');
          return {
            path: options.output,
            bytes: 6,
            durationMs: 12,
            record: { tesseraVersion: 'test', createdAt: '', migrations: [] },
          };
        });
    return { done, stop: () => Promise.resolve() };
  };
  return { taken, take };
}

/** Lets the schedule's promises settle between clock ticks. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('the backup schedule', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-schedule-'));
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
  });
  afterEach(async () => {
    mock.timers.reset();
    await rm(directory, { recursive: true, force: true });
  });

  function start(
    options: Partial<ScheduledBackupsOptions> & { take: ScheduledBackupsOptions['takeBackup'] },
  ) {
    const events: string[] = [];
    const schedule = scheduleBackups({
      source: join(directory, 'tessera.db'),
      directory,
      intervalMs: 6 * HOUR,
      keep: 3,
      tesseraVersion: 'test',
      onBackup: (backup) =>
        events.push(
          `backup ${new Date(backup.takenAt).toISOString()} ${backup.durationMs ?? 'found'}`,
        ),
      onFailure: (reason, retryAt) =>
        events.push(`failed: ${reason}; retry ${new Date(retryAt).toISOString()}`),
      onRemoved: (files) => files.length > 0 && events.push(`removed ${files.join(',')}`),
      takeBackup: options.take,
      ...options,
    });
    return { schedule, events };
  }

  it('takes the first backup at once in an empty directory, then one per interval, keeping the newest', async () => {
    const backups = fakeBackups({ fail: false });
    writeFileSync(join(directory, 'notes.txt'), 'not a backup');
    writeFileSync(join(directory, 'tessera-pre-upgrade-20261101T000000Z.db'), 'kept');
    const { schedule, events } = start({ take: backups.take });
    mock.timers.tick(0);
    await settle();
    assert.deepEqual(events, ['backup 2026-11-26T12:00:00.000Z 12']);
    for (let i = 0; i < 4; i++) {
      mock.timers.tick(6 * HOUR);
      await settle();
    }
    await schedule.stop();
    assert.deepEqual(
      backups.taken,
      Array.from({ length: 5 }, (_, i) =>
        join(directory, scheduledBackupName(START + i * 6 * HOUR)),
      ),
    );
    assert.equal(
      events.filter((event) => event.startsWith('removed')).length,
      2,
      'the fourth and fifth backups each removed the oldest',
    );
    assert.deepEqual(readdirSync(directory).sort(), [
      'notes.txt',
      scheduledBackupName(START + 12 * HOUR),
      scheduledBackupName(START + 18 * HOUR),
      scheduledBackupName(START + 24 * HOUR),
      'tessera-pre-upgrade-20261101T000000Z.db',
    ]);
  });

  it('follows the newest backup in the directory across a restart', async () => {
    const backups = fakeBackups({ fail: false });
    writeFileSync(join(directory, scheduledBackupName(START - 2 * HOUR)), 'earlier');
    const { schedule, events } = start({ take: backups.take });
    assert.deepEqual(
      events,
      ['backup 2026-11-26T10:00:00.000Z found'],
      'the newest is reported at once',
    );
    mock.timers.tick(4 * HOUR - 1);
    await settle();
    assert.deepEqual(backups.taken, [], 'not due before the interval has passed since it');
    mock.timers.tick(1);
    await settle();
    await schedule.stop();
    assert.deepEqual(backups.taken, [join(directory, scheduledBackupName(START + 4 * HOUR))]);
  });

  it('reports a failure and tries again after 10 minutes, not an interval', async () => {
    const outcome = { fail: true };
    const backups = fakeBackups(outcome);
    const { schedule, events } = start({ take: backups.take });
    mock.timers.tick(0);
    await settle();
    assert.deepEqual(events, ['failed: disk full; retry 2026-11-26T12:10:00.000Z']);
    outcome.fail = false;
    mock.timers.tick(10 * 60_000);
    await settle();
    await schedule.stop();
    assert.equal(events.at(-1), 'backup 2026-11-26T12:10:00.000Z 12');
    assert.deepEqual(
      listScheduledBackups(directory).map((entry) => entry.name),
      [scheduledBackupName(START + 10 * 60_000)],
    );
  });
});

describe('IAM_BACKUP_* configuration', () => {
  it('defaults to a backup a day, seven kept', () => {
    const config = loadConfig({
      DATABASE_URL: 'sqlite:/var/lib/tessera/t.db',
      IAM_BACKUP_DIR: '/b',
    });
    assert.deepEqual(config.backups, { directory: '/b', intervalMs: 24 * HOUR, keep: 7 });
    assert.equal(loadConfig({}).backups, null);
    assert.deepEqual(
      loadConfig({ IAM_BACKUP_DIR: '/b', IAM_BACKUP_INTERVAL: '30m', IAM_BACKUP_KEEP: '48' })
        .backups,
      { directory: '/b', intervalMs: 30 * 60_000, keep: 48 },
    );
  });

  for (const [label, env, message] of [
    [
      'an interval without a unit',
      { IAM_BACKUP_DIR: '/b', IAM_BACKUP_INTERVAL: '6' },
      /IAM_BACKUP_INTERVAL must be a whole number and a unit/,
    ],
    [
      'keeping none',
      { IAM_BACKUP_DIR: '/b', IAM_BACKUP_KEEP: '0' },
      /IAM_BACKUP_KEEP must be a whole number from 1 to 9999/,
    ],
    [
      'an interval without a directory',
      { IAM_BACKUP_INTERVAL: '6h' },
      /IAM_BACKUP_INTERVAL is set but IAM_BACKUP_DIR is not/,
    ],
    [
      'a directory on PostgreSQL',
      { IAM_BACKUP_DIR: '/b', DATABASE_URL: 'postgres://db/tessera' },
      /on PostgreSQL back up with pg_dump/,
    ],
    [
      'a directory for a database in memory',
      { IAM_BACKUP_DIR: '/b', DATABASE_URL: 'sqlite::memory:' },
      /sqlite::memory:, which has no file to back up/,
    ],
  ] as const) {
    it(`refuses ${label}, in one line`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, message);
          assert.ok(!error.message.includes('\n'));
          return true;
        },
      );
    });
  }
});

describe('a server with IAM_BACKUP_DIR', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-scheduled-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('backs up an older database before migrating it, then on schedule, and says so', async () => {
    const path = join(directory, 'data', 'tessera.db');
    const backups = join(directory, 'backups');
    mkdirSync(join(directory, 'data'));
    await olderDatabase(path);
    // Three old scheduled backups, one file of the operator's.
    mkdirSync(backups);
    for (const days of [3, 2, 1]) {
      writeFileSync(join(backups, scheduledBackupName(Date.now() - days * 24 * HOUR)), 'old');
    }
    writeFileSync(join(backups, 'keep-me.txt'), 'mine');

    const server = await startServerProcess(process.execPath, serverEntry(), {
      DATABASE_URL: `sqlite:${path}`,
      IAM_BACKUP_DIR: backups,
      IAM_BACKUP_INTERVAL: '6h',
      IAM_BACKUP_KEEP: '2',
      LOG_LEVEL: 'info',
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!server.output().includes('"msg":"backup written"') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const files = readdirSync(backups).sort();
      const preUpgrade = files.find((name) => name.startsWith('tessera-pre-upgrade-'));
      assert.ok(preUpgrade !== undefined, files.join(' '));
      const scheduled = listScheduledBackups(backups).map((entry) => entry.name);
      assert.equal(scheduled.length, 2, 'the newest two scheduled backups are kept');
      assert.ok(existsSync(join(backups, 'keep-me.txt')), "the operator's file stays");

      const migrationsIn = (file: string) => {
        const copy = new Database(join(backups, file), { readonly: true });
        try {
          assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
          return (
            copy.prepare('select name from kysely_migration order by name').all() as {
              name: string;
            }[]
          ).map((row) => row.name);
        } finally {
          copy.close();
        }
      };
      assert.deepEqual(
        migrationsIn(preUpgrade),
        MIGRATION_NAMES.slice(0, -1),
        'taken before migrating',
      );
      assert.deepEqual(migrationsIn(scheduled.at(-1)!), MIGRATION_NAMES, 'taken after');

      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      const value = (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
      assert.equal(value('tessera_backup_interval_seconds'), 6 * 3600);
      assert.ok(
        Math.abs(value('tessera_backup_last_success_timestamp_seconds') - Date.now() / 1000) < 60,
      );
      assert.ok(value('tessera_backup_last_size_bytes') > 100_000);
      assert.ok(value('tessera_backup_last_duration_seconds') > 0);
      assert.equal(value('tessera_backup_failures_total'), 0);
      assert.match(server.output(), /"msg":"backed up the database before migrating it"/);
      assert.match(server.output(), /"msg":"removed old backups"/);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
