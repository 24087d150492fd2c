// Upgrades cannot silently downgrade: `tessera migrate --status` says which migrations a
// database has and lacks, and a database written by a newer Tessera is refused by start-up,
// `tessera migrate` and every other command, in one line that says what to do.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { MIGRATION_NAMES, olderDatabase, tesseraOn } from './cli-runs.js';
import { repository, serverEntry } from './server-process.js';

const NAMES = MIGRATION_NAMES;
const LATEST = NAMES.at(-1)!;
const FUTURE = '9999_from_a_newer_tessera';

/** Marks a migrated database as written by a newer build: a migration this one lacks. */
function addFutureMigration(path: string): void {
  const database = new Database(path);
  database
    .prepare('insert into kysely_migration (name, timestamp) values (?, ?)')
    .run(FUTURE, '2027-01-01T00:00:00.000Z');
  database.close();
}

/** `npm start`'s entry point on the database, as a process: its exit code and output. */
function startServer(path: string): Promise<{ code: number; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: `sqlite:${path}`,
    PORT: '0',
    LOG_LEVEL: 'warn',
  };
  delete env.NODE_TEST_CONTEXT;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      serverEntry(),
      { cwd: repository, env, encoding: 'utf8', timeout: 60_000 },
      (error, _stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stderr });
      },
    );
    // A server that did start is stopped: this only looks at refusals.
    setTimeout(() => child.kill('SIGTERM'), 30_000).unref();
  });
}

describe('tessera migrate --status', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-upgrades-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('lists applied migrations with their times and the pending one, changing nothing', async () => {
    const path = join(directory, 'older.db');
    await olderDatabase(path);
    const status = await tesseraOn(path, ['migrate', '--status']);
    assert.equal(status.code, 0, status.stderr);
    const lines = status.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^Tessera \d+\.\d+\.\d+; database .*older\.db$/);
    assert.deepEqual(
      lines.slice(1, -1).map((line) => line.split(/\s+/).slice(0, 2)),
      [...NAMES.slice(0, -1).map((name) => ['applied', name]), ['pending', LATEST]],
    );
    assert.match(lines[1]!, /^applied {2}0001_initial +\d{4}-\d\d-\d\dT[\d:.]+Z$/);
    assert.equal(
      lines.at(-1),
      '1 migration pending: tessera migrate, or the next start, applies it.',
    );
    // Nothing was applied by looking.
    const again = await tesseraOn(path, ['migrate', '--status', '--json']);
    const json = JSON.parse(again.stdout) as {
      tessera_version: string;
      applied: { name: string; applied_at: string }[];
      pending: string[];
      unknown: unknown[];
    };
    assert.deepEqual(json.pending, [LATEST]);
    assert.equal(json.applied.length, NAMES.length - 1);
    assert.deepEqual(json.unknown, []);
  });

  it('tessera migrate applies what was pending and says which', async () => {
    const path = join(directory, 'older.db');
    const migrated = await tesseraOn(path, ['migrate']);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.equal(
      migrated.stdout,
      `Applied 1 migration: ${LATEST}.\n` +
        `The database schema is up to date (${NAMES.length} migrations applied, the latest ${LATEST}).\n`,
    );
    const status = await tesseraOn(path, ['migrate', '--status']);
    assert.match(status.stdout, new RegExp(`\\nUp to date: ${NAMES.length} migrations applied`));
  });

  it('refuses a status run on a database that does not exist', async () => {
    const result = await tesseraOn(join(directory, 'missing.db'), ['migrate', '--status']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^tessera: no database at .*missing\.db/);
  });
});

describe('a database written by a newer Tessera', () => {
  let directory: string;
  let path: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-newer-'));
    path = join(directory, 'newer.db');
    assert.equal((await tesseraOn(path, ['migrate'])).code, 0);
    addFutureMigration(path);
  });
  after(() => rm(directory, { recursive: true, force: true }));

  const refusal =
    /the database was written by a newer Tessera: it has migration 9999_from_a_newer_tessera, which this version does not know; run that version or a later one, or restore a backup taken before the upgrade/;

  it('is refused by start-up, exit code 2, in one line', async () => {
    const started = await startServer(path);
    assert.equal(started.code, 2, started.stderr);
    assert.match(started.stderr, /^tessera: cannot start: /);
    assert.match(started.stderr, refusal);
    assert.equal(started.stderr.trimEnd().split('\n').length, 1, started.stderr);
  });

  it('is refused by tessera migrate and by the other commands, in one line', async () => {
    for (const args of [['migrate'], ['keys', 'list']]) {
      const result = await tesseraOn(path, args);
      assert.equal(result.code, 1, args.join(' '));
      assert.match(result.stderr, /^tessera: [^\n]+\n$/);
      assert.match(result.stderr, refusal);
    }
  });

  it('shows the unknown migration in the status, exit code 1', async () => {
    const result = await tesseraOn(path, ['migrate', '--status']);
    assert.equal(result.code, 1);
    assert.match(
      result.stdout,
      /\nunknown {2}9999_from_a_newer_tessera +2027-01-01T00:00:00\.000Z\n/,
    );
    assert.match(result.stderr, refusal);
  });
});
