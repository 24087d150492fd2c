// tessera-test: both-stores
// Stopping: requests in flight finish; requests that arrive on an open connection meanwhile
// get a 503 problem telling the client to retry, and the connection closes.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { applicationBody, buildTestApp } from './helpers.js';

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
      await new Promise((resolve) => setTimeout(resolve, 100));
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
});
