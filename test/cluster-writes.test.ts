// IAM_WORKERS=2 on SQLite: the two workers write one file, taking SQLite's write lock in turns
// that the primary hands out (docs/decisions.md, "Several processes on one port"). Every call
// opens a connection of its own: node:cluster hands each new connection to the next worker.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { WriteTurnKeeper } from '../src/cluster/cluster-primary.js';
import { workerPids, workersOf } from './cluster-logs.js';
import { applicationBody, userBody } from './helpers.js';
import { type ServerProcess, serverEntry, startServerProcess } from './server-process.js';

const KEY = `tsr_writes_${'w'.repeat(40)}`;

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read members freely
  body: any;
  requestId: string;
}

/**
 * One call on a connection of its own; a connection the server dropped (or left unanswered for
 * 10 s) answers status 0.
 */
function send(server: ServerProcess, method: string, path: string, body?: unknown) {
  const requestId = randomUUID();
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<Answer>((resolve) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path: `/iam/api/v1${path}`,
        agent: false,
        headers: {
          'x-request-id': requestId,
          authorization: `apikey ${KEY}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: text === '' ? null : JSON.parse(text),
            requestId,
          }),
        );
        response.on('error', () => resolve({ status: 0, body: null, requestId }));
      },
    );
    outgoing.on('error', () => resolve({ status: 0, body: null, requestId }));
    // A connection handed to a worker as it was killed may never be answered nor closed.
    outgoing.setTimeout(10_000, () => outgoing.destroy());
    outgoing.end(payload);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const createUser = (server: ServerProcess, identifier: string) =>
  send(server, 'POST', '/applications/writers/users', userBody({ identifier }));

async function listedIdentifiers(server: ServerProcess): Promise<Set<string>> {
  const identifiers = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: Answer = await send(
      server,
      'GET',
      `/applications/writers/users?limit=200${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    assert.equal(page.status, 200);
    for (const user of page.body.items) identifiers.add(user.identifier);
    cursor = page.body.next_cursor ?? null;
  } while (cursor !== null);
  return identifiers;
}

describe('the write turn the primary hands out', () => {
  it('goes to one worker at a time, in the order they asked, and on from one that exits', () => {
    const granted: string[] = [];
    const turn = new WriteTurnKeeper<string>((worker) => granted.push(worker));
    turn.request('one');
    turn.request('two');
    turn.request('three');
    turn.request('two');
    assert.deepEqual(granted, ['one'], 'the others wait, each once');
    turn.release('two');
    assert.deepEqual(granted, ['one'], 'only the holder hands it on');
    turn.release('one');
    assert.deepEqual(granted, ['one', 'two']);
    // Killed while holding it: the next in line gets it, nobody waits on the dead one.
    turn.forget('two');
    assert.deepEqual(granted, ['one', 'two', 'three']);
    turn.request('one');
    turn.forget('one');
    turn.release('three');
    assert.deepEqual(granted, ['one', 'two', 'three'], 'a waiter that exited is not granted');
    turn.request('two');
    assert.deepEqual(granted, ['one', 'two', 'three', 'two']);
  });
});

describe('two workers writing one SQLite file', { timeout: 300_000 }, () => {
  let server: ServerProcess;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-cluster-writes-'));
  const file = join(directory, 'tessera.db');

  before(async () => {
    server = await startServerProcess(process.execPath, serverEntry(), {
      IAM_WORKERS: '2',
      DATABASE_URL: `sqlite:${file}`,
      IAM_DATA_DIR: directory,
      IAM_BOOTSTRAP_API_KEY: KEY,
      IAM_TRUST_PROXY: 'true',
      IAM_RATE_LIMIT_PER_MINUTE: '100000',
    });
    for (let waited = 0; workerPids(server).size < 2; waited += 50) {
      assert.ok(waited < 60_000, `the second worker never served:\n${server.output()}`);
      await sleep(50);
    }
    const application = await send(
      server,
      'POST',
      '/applications',
      applicationBody({ client_id: 'writers' }),
    );
    assert.equal(application.status, 201);
  });
  after(async () => {
    if (server.process.exitCode === null && server.process.signalCode === null) {
      await server.stop();
    }
    rmSync(directory, { recursive: true, force: true });
  });

  it('takes creates on both workers while another process holds the write lock a moment, refusing none', async () => {
    // Another process on the file (a CLI command, a backup): outside the workers' turns.
    const outsider = new Database(file, { timeout: 0 });
    try {
      outsider.exec('BEGIN IMMEDIATE');
      const answers = Promise.all(
        Array.from({ length: 160 }, (_, n) => createUser(server, `during-lock-${n}`)),
      );
      await sleep(300);
      // Reads go on while the lock is held.
      assert.equal((await send(server, 'GET', '/applications/writers')).status, 200);
      outsider.exec('COMMIT');
      const created = await answers;
      assert.deepEqual(
        created.map((answer) => answer.status),
        created.map(() => 201),
      );
      assert.equal((await workersOf(server, created)).size, 2);
      const listed = await listedIdentifiers(server);
      for (let n = 0; n < 160; n += 1) assert.ok(listed.has(`during-lock-${n}`));
    } finally {
      outsider.close();
    }
  });

  it('keeps taking creates after a worker is killed mid-write, losing none it acknowledged', async () => {
    const pids = workerPids(server);
    const acknowledged: string[] = [];
    let killed = false;
    let afterKill = 0;
    const stream = async (lane: number) => {
      for (let n = 0; n < 60; n += 1) {
        const identifier = `stream-${lane}-${n}`;
        const answer = await createUser(server, identifier);
        if (answer.status === 201) {
          acknowledged.push(identifier);
          if (killed) afterKill += 1;
        } else {
          // Only a call the dying worker had taken may go unanswered.
          assert.equal(answer.status, 0, JSON.stringify(answer.body));
        }
      }
    };
    const lanes = Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(stream));
    await sleep(150);
    process.kill(pids.get(2)!, 'SIGKILL');
    killed = true;
    await lanes;
    assert.ok(afterKill > 0, 'creates went on after the kill');
    // The survivor (and the replacement) still write: the dead worker's turn was taken back.
    const later = await Promise.all(
      Array.from({ length: 20 }, (_, n) => createUser(server, `after-kill-${n}`)),
    );
    assert.deepEqual(
      later.map((answer) => answer.status),
      later.map(() => 201),
    );
    const listed = await listedIdentifiers(server);
    for (const identifier of acknowledged) assert.ok(listed.has(identifier), identifier);
  });
});
