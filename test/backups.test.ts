// Backups and restores of the SQLite database, as an operator runs them: `tessera backup` while
// a server process takes writes, `tessera restore` into a fresh directory, a server started on
// the result; a backup killed with SIGKILL half way; and the restores that must be refused.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runCli } from '../src/cli/main.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { tesseraOn } from './cli-runs.js';
import { seedUsers, seededUser } from './seed-users.js';
import { callServer, repository, serverEntry, startServerProcess } from './server-process.js';

const BOOTSTRAP_KEY = `tsr_backup_test_${randomBytes(24).toString('hex')}`;

function startServer(databasePath: string) {
  return startServerProcess(process.execPath, serverEntry(), {
    DATABASE_URL: `sqlite:${databasePath}`,
    IAM_BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
    LOG_LEVEL: 'warn',
  });
}

function integrity(path: string): string {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return database.pragma('integrity_check', { simple: true }) as string;
  } finally {
    database.close();
  }
}

function identifiersIn(path: string, clientId: string): Set<string> {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = database
      .prepare('select identifier from users where application = ?')
      .all(clientId) as { identifier: string }[];
    return new Set(rows.map((row) => row.identifier));
  } finally {
    database.close();
  }
}

/** A migrated database at `path` holding `count` users of the application `seeded`. */
async function seededDatabase(path: string, count: number): Promise<void> {
  const store = openSqliteStore({ path });
  await store.migrate();
  await seedUsers(store, 'seeded', count);
  await store.close();
}

describe('restore drill: a backup taken under 16 writers, restored into a fresh directory', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-drill-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('holds every write acknowledged before the backup started; the server starts on it', async () => {
    const live = join(directory, 'live', 'tessera.db');
    const backup = join(directory, 'backups', 'drill.db');
    // Users already there, so that the copy takes long enough for the writers to write during it.
    await seededDatabase(live, 20_000);
    const server = await startServer(live);
    const acknowledged: string[] = [];
    let acknowledgedBeforeBackup: Set<string>;
    try {
      const created = await callServer(server, BOOTSTRAP_KEY, 'POST', '/applications', {
        client_id: 'drill',
        display_name: 'Drill',
        description: 'restore drill',
      });
      assert.equal(created.status, 201);
      let writing = true;
      const writers = Array.from({ length: 16 }, async (_, writer) => {
        for (let n = 0; writing; n++) {
          const identifier = `writer-${writer}-${n}`;
          const response = await callServer(
            server,
            BOOTSTRAP_KEY,
            'POST',
            '/applications/drill/users',
            {
              provider: 'drill_oidc',
              identifier,
              name: `Writer ${writer} user ${n}`,
              email: `w${writer}.${n}@example.com`,
              locale: 'en',
              roles: [],
              scopes: [],
            },
          );
          assert.equal(response.status, 201, JSON.stringify(response.body));
          acknowledged.push(identifier);
        }
      });
      // A writer that fails ends the wait at once (its assertion is the test's failure).
      const failed = Promise.race(writers).then(() => 'a writer stopped');
      while (acknowledged.length < 400) {
        const stopped = await Promise.race([
          failed,
          new Promise((resolve) => setTimeout(resolve, 20)),
        ]);
        if (stopped !== undefined) break;
      }
      assert.ok(acknowledged.length >= 400, 'the writers are writing');
      acknowledgedBeforeBackup = new Set(acknowledged);
      const taken = await tesseraOn(live, ['backup', '--output', backup]);
      const duringBackup = acknowledged.length - acknowledgedBeforeBackup.size;
      // The writers keep going a little after the backup, so the live database moves on.
      await new Promise((resolve) => setTimeout(resolve, 200));
      writing = false;
      await Promise.all(writers);
      assert.equal(taken.code, 0, taken.stderr);
      assert.match(taken.stdout, /^Backed up .* integrity ok, Tessera \d+\.\d+\.\d+, schema: /);
      assert.ok(duringBackup > 0, 'writes were acknowledged while the backup ran');
    } finally {
      assert.equal(await server.stop(), 0);
    }

    const fresh = join(directory, 'fresh', 'data', 'tessera.db');
    const restored = await tesseraOn(fresh, ['restore', backup]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, /^Checked .*drill\.db: integrity ok; taken \S+ by Tessera /);
    assert.match(restored.stdout, /\nThere was no database there before\.\n/);
    assert.equal(integrity(fresh), 'ok');
    assert.equal(statSync(fresh).mode & 0o777, 0o600);

    const inBackup = identifiersIn(fresh, 'drill');
    const missing = [...acknowledgedBeforeBackup].filter((id) => !inBackup.has(id));
    assert.deepEqual(missing, [], 'every write acknowledged before the backup is in it');
    // The backup is a snapshot: no more than the live database had, and no partial rows.
    assert.ok(inBackup.size <= acknowledged.length);
    for (const identifier of inBackup) assert.ok(acknowledged.includes(identifier), identifier);

    const restarted = await startServer(fresh);
    try {
      assert.equal((await fetch(`${restarted.baseUrl}/readyz`)).status, 200);
      const first = [...acknowledgedBeforeBackup][0]!;
      const read = await callServer(
        restarted,
        BOOTSTRAP_KEY,
        'GET',
        `/applications/drill/users/drill_oidc/${first}`,
      );
      assert.equal(read.status, 200);
      const write = await callServer(
        restarted,
        BOOTSTRAP_KEY,
        'POST',
        '/applications/drill/users',
        {
          provider: 'drill_oidc',
          identifier: 'after-restore',
          name: 'After Restore',
          email: 'after@example.com',
          locale: 'en',
          roles: [],
          scopes: [],
        },
      );
      assert.equal(write.status, 201);
    } finally {
      assert.equal(await restarted.stop(), 0);
    }
  });
});

/** `tessera backup` as a process of its own (the compiled command), to be killed. */
function spawnBackup(databasePath: string, output: string): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: `sqlite:${databasePath}` };
  delete env.NODE_TEST_CONTEXT;
  return spawn(process.execPath, [join(repository, 'bin/tessera.js'), 'backup', '-o', output], {
    cwd: repository,
    env,
    stdio: 'ignore',
  });
}

describe('a backup killed with SIGKILL', () => {
  let directory: string;
  let live: string;
  const USERS = 40_000;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-backup-kill-'));
    live = join(directory, 'tessera.db');
    await seededDatabase(live, USERS);
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('leaves no partial file and a working database, and the next backup cleans up', async () => {
    const output = join(directory, 'backups', 'nightly.db');
    let killedMidway = 0;
    for (const delayMs of [0, 10, 40, 120]) {
      const child = spawnBackup(live, output);
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const temporary = join(dirname(output), `.${basename(output)}.${child.pid}.tmp`);
      // Kill it once its hidden copy exists, at a different moment each time.
      while (!existsSync(temporary) && child.exitCode === null) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        killedMidway++;
      }
      await exited;
      // Either nothing at the output, or a whole, verified backup (the kill came after the rename).
      if (existsSync(output)) {
        assert.equal(integrity(output), 'ok');
        assert.equal(identifiersIn(output, 'seeded').size, USERS);
      }
      assert.equal(integrity(live), 'ok');
    }
    assert.ok(killedMidway >= 2, `killed ${killedMidway} backups before they finished`);
    assert.ok(
      readdirSync(dirname(output)).some((name) => name.endsWith('.tmp')),
      'the killed backups left their hidden copies',
    );

    // The database works: the store opens it and writes.
    const store = openSqliteStore({ path: live, mustExist: true });
    await store.migrate();
    await store.users.insertUsers([seededUser('seeded', USERS, Date.now())], []);
    await store.close();

    const taken = await tesseraOn(live, ['backup', '--output', output]);
    assert.equal(taken.code, 0, taken.stderr);
    assert.deepEqual(readdirSync(dirname(output)), ['nightly.db'], 'leftovers removed');
    assert.equal(identifiersIn(output, 'seeded').size, USERS + 1);
  });
});

describe('tessera restore refuses', () => {
  let directory: string;
  let live: string;
  let backup: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-restore-refusals-'));
    live = join(directory, 'live', 'tessera.db');
    backup = join(directory, 'good.db');
    assert.equal((await tesseraOn(live, ['migrate'])).code, 0);
    assert.equal((await tesseraOn(live, ['backup', '-o', backup])).code, 0);
  });
  after(() => rm(directory, { recursive: true, force: true }));

  /** Restores `file` over the live database and checks that it was left alone. */
  async function refused(file: string, pattern: RegExp): Promise<void> {
    const before = readFileSync(live);
    const result = await tesseraOn(live, ['restore', file]);
    assert.equal(result.code, 1, result.stdout);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^tessera: [^\n]+\n$/);
    assert.match(result.stderr, pattern);
    assert.deepEqual(readFileSync(live), before, 'the database is untouched');
    assert.deepEqual(
      readdirSync(dirname(live)).filter((name) => name.includes('replaced')),
      [],
      'nothing was moved aside',
    );
  }

  it('a backup from a newer schema, naming the migration', async () => {
    const newer = join(directory, 'newer.db');
    writeFileSync(newer, readFileSync(backup));
    const database = new Database(newer);
    database
      .prepare('insert into kysely_migration (name, timestamp) values (?, ?)')
      .run('9999_from_a_newer_tessera', '2027-01-01T00:00:00.000Z');
    database.close();
    await refused(
      newer,
      /the backup was written by a newer Tessera: it has migration 9999_from_a_newer_tessera, which this version does not know; restore it with that version or a later one/,
    );
  });

  it('a damaged backup', async () => {
    const damaged = join(directory, 'damaged.db');
    const database = new Database(backup, { readonly: true });
    const { rootpage, size } = database
      .prepare(
        "select rootpage, (select page_size from pragma_page_size) as size from sqlite_master where name = 'kysely_migration'",
      )
      .get() as { rootpage: number; size: number };
    database.close();
    // Scribble over the b-tree page of a table (the file stays a SQLite file).
    const bytes = readFileSync(backup);
    bytes.fill(0x5a, (rootpage - 1) * size, rootpage * size);
    writeFileSync(damaged, bytes);
    await refused(damaged, /damaged|not a usable SQLite database/);
  });

  it('a file that is not a Tessera backup', async () => {
    const other = join(directory, 'other.db');
    const database = new Database(other);
    database.exec('create table notes (text text)');
    database.close();
    await refused(other, /is not a Tessera backup: it records no migration/);
    const text = join(directory, 'notes.txt');
    writeFileSync(text, 'not a database at all, just some words\n'.repeat(200));
    await refused(text, /not a usable SQLite database|cannot be opened/);
    await refused(join(directory, 'missing.db'), /no backup at .*missing\.db/);
  });

  it('while a server has the database open', async () => {
    const server = await startServer(live);
    try {
      await refused(
        backup,
        /the database .*tessera\.db is in use by another process: stop Tessera/,
      );
      assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200, 'it keeps serving');
    } finally {
      assert.equal(await server.stop(), 0);
    }
    // Stopped, the same restore goes through and keeps what it replaced.
    const result = await tesseraOn(live, ['restore', backup]);
    assert.equal(result.code, 0, result.stderr);
    const replaced = /The database it replaced is at (\S+)\.\n/.exec(result.stdout)?.[1];
    assert.ok(replaced !== undefined && existsSync(replaced), result.stdout);
    assert.match(basename(replaced), /^tessera\.db\.replaced-\d{8}T\d{6}Z$/);
    assert.equal(integrity(replaced), 'ok');
  });

  it('and names the migrations an older backup lacks', async () => {
    const older = join(directory, 'older.db');
    writeFileSync(older, readFileSync(backup));
    const database = new Database(older);
    const latest = (
      database.prepare('select max(name) as name from kysely_migration').get() as { name: string }
    ).name;
    // Its rows only: what an older build's backup would list (the tables stay, unused here).
    database.prepare('delete from kysely_migration where name = ?').run(latest);
    database.close();
    const target = join(directory, 'older-restored', 'tessera.db');
    const result = await tesseraOn(target, ['restore', older]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      new RegExp(
        `Its schema is older: the next start \\(or tessera migrate\\) applies migration ${latest}\\.\n$`,
      ),
    );
  });
});

describe('tessera backup and restore elsewhere', () => {
  it('say to use pg_dump and pg_restore on PostgreSQL, in one line, exit code 1', async () => {
    for (const [args, tool] of [
      [['backup', '-o', 'x.db'], 'pg_dump'],
      [['restore', 'x.db'], 'pg_restore'],
    ] as const) {
      let stderr = '';
      const code = await runCli(args, {
        stdout: { write: () => true },
        stderr: { write: (text: string) => (stderr += text) },
        env: { ...process.env, DATABASE_URL: 'postgres://user:secret@127.0.0.1:1/tessera' },
      });
      assert.equal(code, 1);
      assert.match(
        stderr,
        new RegExp(`^tessera: [^\\n]*SQLite only; on PostgreSQL [^\\n]*${tool}[^\\n]*\\n$`),
      );
      assert.ok(!stderr.includes('secret'));
    }
  });

  it('refuse to write the backup over the database itself', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tessera-backup-self-'));
    try {
      const live = join(directory, 'tessera.db');
      assert.equal((await tesseraOn(live, ['migrate'])).code, 0);
      for (const output of [live, `${live}-wal`]) {
        const result = await tesseraOn(live, ['backup', '-o', output]);
        assert.equal(result.code, 1);
        assert.match(result.stderr, /cannot be written over the database itself/);
      }
      assert.equal(integrity(live), 'ok');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
