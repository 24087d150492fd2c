// The CLI's side of the audit trail: its changes are recorded with actor `cli`, and
// `tessera events tail` follows the feed of the database the server writes.

import { strict as assert } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../src/cli/main.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';

let directory: string;
let databasePath: string;
before(async () => {
  directory = await mkdtemp(join(tmpdir(), 'tessera-events-cli-'));
  databasePath = join(directory, 'tessera.db');
  assert.equal((await tessera(['migrate'])).code, 0);
});
after(() => rm(directory, { recursive: true, force: true }));

async function tessera(args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { ...process.env, DATABASE_URL: `sqlite:${databasePath}` },
  });
  return { code, stdout, stderr };
}

async function withStore<T>(work: (store: Store) => Promise<T>): Promise<T> {
  const store = openSqliteStore({ path: databasePath });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const EVERYTHING = {
  types: null,
  clientId: null,
  actorId: null,
  resourceType: null,
  since: null,
  until: null,
  visibleClientIds: null,
};

describe('tessera keys and signing-keys commands', () => {
  it('record their changes with actor cli, never a secret', async () => {
    const created = await tessera([
      'keys',
      'create',
      '--name',
      'ops',
      '--roles',
      'users:read',
      '--json',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    assert.equal((await tessera(['keys', 'rotate', id, '--overlap', '0'])).code, 0);
    assert.equal((await tessera(['keys', 'revoke', id])).code, 0);
    assert.equal((await tessera(['signing-keys', 'rotate'])).code, 0);
    const events = await withStore((store) =>
      store.events.listEvents(EVERYTHING, { after: null, limit: 100 }),
    );
    const mine = events.filter((event) => event.actor.type === 'cli');
    assert.deepEqual(
      mine.map((event) => event.type),
      ['api_key.created', 'api_key.rotated', 'api_key.revoked', 'signing_key.rotated'],
    );
    assert.ok(mine.every((event) => event.actor.id === null && event.requestId === null));
    assert.ok(!JSON.stringify(events).includes(key));
  });
});

describe('tessera events tail', () => {
  it('prints the events that commit after it started, filtered, one JSON line each', async () => {
    const tail = tessera(['events', 'tail', '--type', 'api_key.created', '--count', '2']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const name of ['one', 'two', 'three']) {
      const made = await tessera(['keys', 'create', '--name', name, '--roles', 'users:read']);
      assert.equal(made.code, 0, made.stderr);
      if (name === 'one') assert.equal((await tessera(['signing-keys', 'rotate'])).code, 0);
    }
    const result = await tail;
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            type: string;
            id: string;
            changes: { member: string; after: unknown }[];
          },
      );
    assert.deepEqual(
      lines.map((line) => line.type),
      ['api_key.created', 'api_key.created'],
    );
    assert.deepEqual(
      lines.map((line) => line.changes.find((change) => change.member === 'name')!.after),
      ['one', 'two'],
    );
    assert.ok(lines[0]!.id < lines[1]!.id);
  });

  it('replays from --after', async () => {
    const all = await withStore((store) =>
      store.events.listEvents(EVERYTHING, { after: null, limit: 1000 }),
    );
    const result = await tessera(['events', 'tail', '--after', all.at(-3)!.id, '--count', '2']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      result.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { id: string }).id),
      [all.at(-2)!.id, all.at(-1)!.id],
    );
  });

  it('refuses a malformed filter in one line, exit code 2', async () => {
    for (const args of [
      ['--type', 'user'],
      ['--after', 'yesterday'],
      ['--count', '0'],
    ]) {
      const result = await tessera(['events', 'tail', ...args]);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stderr.trim().split('\n').length, 1);
    }
  });
});
