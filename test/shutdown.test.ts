// tessera-test: both-stores
// Stopping: requests in flight finish; requests that arrive on an open connection meanwhile
// get a 503 problem telling the client to retry, and the connection closes. A delivery stuck
// on a receiver that trickles does not hold the stop up.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { TEST_STORE, applicationBody, buildTestApp } from './helpers.js';
import { createTestSchema, databaseUrlFor, dropSchema } from './postgres.js';
import { callServer, serverEntry, startServerProcess } from './server-process.js';
import { TricklingReceiver } from './trickling-receiver.js';

const KEY = `tsr_stopping_${'s'.repeat(40)}`;

describe('stopping the server', () => {
  it('finishes the request in flight and answers the next one with a 503 problem', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-stop-'));
    const path = join(directory, 'tessera.db');
    const ctx = await buildTestApp({ store: openSqliteStore({ path, busyTimeoutMs: 30_000 }) });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = ctx.app.server.address() as { port: number };
    // Another process holds the write lock, so the POST below stays in flight.
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');
    // The stop begins once the POST has reached its write (a fixed wait let a loaded machine
    // begin it first, and the POST was then a request arriving during the stop).
    const applications = ctx.store.applications;
    const insert = applications.insertApplication.bind(applications);
    let reached!: () => void;
    const writing = new Promise<void>((resolve) => (reached = resolve));
    applications.insertApplication = (...args) => {
      reached();
      return insert(...args);
    };
    try {
      const body = JSON.stringify(applicationBody({ client_id: 'in-flight' }));
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      const closed = new Promise((resolve) => socket.on('close', resolve));
      socket.write(
        `POST /iam/api/v1/applications HTTP/1.1\r\nHost: x\r\nAuthorization: apikey ${ctx.adminKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await writing;
      const stopped = ctx.app.close();
      // The connection is busy, so it stays open; a client sends its next request on it.
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 50));
      blocker.exec('ROLLBACK');
      await stopped;
      await closed;
      const responses = answer.split(/(?=HTTP\/1\.1 )/);
      assert.match(responses[0]!, /^HTTP\/1\.1 201 /, 'the request in flight completed');
      assert.match(responses[1]!, /^HTTP\/1\.1 503 /);
      assert.match(responses[1]!, /content-type: application\/problem\+json/i);
      assert.match(responses[1]!, /retry-after: 1/i);
      assert.match(responses[1]!, /"type":"https:\/\/tessera\.dev\/problems\/shutting-down"/);
    } finally {
      blocker.close();
      await ctx.store.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('writes every access-log line before it exits on SIGTERM', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-stop-'));
    const schema = TEST_STORE === 'postgres' ? await createTestSchema() : null;
    try {
      const server = await startServerProcess(process.execPath, serverEntry(), {
        DATABASE_URL:
          schema === null ? `sqlite:${join(directory, 'tessera.db')}` : databaseUrlFor(schema),
        IAM_DATA_DIR: directory,
        IAM_BOOTSTRAP_API_KEY: KEY,
      });
      // The log is written in batches (4 KiB or 100 ms): the last ones are pending at the signal.
      const requests = 150;
      for (let n = 0; n < requests; n++) {
        assert.equal((await callServer(server, KEY, 'GET', '/applications')).status, 200);
      }
      assert.equal(await server.stop(), 0, server.output());
      const lines = server
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; route?: string });
      const logged = lines.filter(
        (line) => line.msg === 'request' && line.route === '/iam/api/v1/applications',
      );
      assert.equal(logged.length, requests);
      assert.equal(lines.at(-1)?.msg, 'stopped');
    } finally {
      if (schema !== null) await dropSchema(schema);
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('exits 0 within 10 s, without an error line, while a delivery trickles', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-stop-'));
    const schema = TEST_STORE === 'postgres' ? await createTestSchema() : null;
    const receiver = await TricklingReceiver.start(500);
    try {
      const server = await startServerProcess(process.execPath, serverEntry(), {
        DATABASE_URL:
          schema === null ? `sqlite:${join(directory, 'tessera.db')}` : databaseUrlFor(schema),
        IAM_DATA_DIR: directory,
        IAM_BOOTSTRAP_API_KEY: KEY,
        IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
      });
      receiver.trickle.add('/hook');
      const hook = await callServer(server, KEY, 'POST', '/webhooks', {
        url: receiver.url('/hook'),
        event_types: ['*'],
      });
      assert.equal(hook.status, 201);
      const created = await callServer(server, KEY, 'POST', '/applications', applicationBody());
      assert.equal(created.status, 201);
      for (let waited = 0; receiver.trickling === 0; waited += 20) {
        assert.ok(waited < 15_000, 'the delivery never started');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const started = Date.now();
      const code = await server.stop();
      const took = Date.now() - started;
      assert.equal(code, 0, server.output());
      // §1's bound; it takes about the dispatcher's 1 s grace.
      assert.ok(took < 10_000, `stopping took ${took} ms`);
      const errors = server
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg?: string })
        .filter((line) => line.level >= 50);
      assert.deepEqual(errors, []);
      assert.doesNotMatch(server.output(), /did not start in time/);
      assert.equal(receiver.trickling, 0, 'the trickling connection was closed');
    } finally {
      await receiver.close();
      if (schema !== null) await dropSchema(schema);
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
