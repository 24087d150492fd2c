// Issue 3: the database going away. Tessera runs as its own process and reaches PostgreSQL
// through a TCP proxy the test breaks and mends (the shared PostgreSQL is never touched).
// While the database is away requests answer 503 (RFC 9457, Retry-After) within 2.5 s and
// /readyz turns 503; the process stays up; within 5 s of the database coming back, everything
// works again without a restart.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  POSTGRES_URL,
  createTestSchema,
  databaseUrlFor,
  dropSchema,
  skipWithoutPostgres,
} from './postgres.js';
import {
  type ServerProcess,
  callServer,
  serverEntry,
  startServerProcess,
} from './server-process.js';
import { type TcpProxy, startTcpProxy } from './tcp-proxy.js';

const skip = await skipWithoutPostgres();

const applicationPath = '/applications/outage-app';

function describeOutage(
  name: string,
  breakIt: (proxy: TcpProxy) => void,
  env: Record<string, string> = {},
  /** The bound on a 503's arrival: the 2.5 s of the issue, or less when timeouts are shorter. */
  answerWithinMs = 2500,
) {
  describe(name, { skip, timeout: 120_000 }, () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tessera-outage-'));
    let schema = '';
    let proxy: TcpProxy;
    let server: ServerProcess;
    let key = '';

    before(async () => {
      schema = await createTestSchema();
      const target = new URL(POSTGRES_URL);
      proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      const throughProxy = new URL(POSTGRES_URL);
      throughProxy.hostname = '127.0.0.1';
      throughProxy.port = String(proxy.port);
      server = await startServerProcess(process.execPath, serverEntry(), {
        DATABASE_URL: databaseUrlFor(schema, throughProxy.toString()),
        IAM_DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ...env,
      });
      key = readFileSync(join(dataDir, 'admin-api-key'), 'utf8').trim();
      const created = await callServer(server, key, 'POST', '/applications', {
        client_id: 'outage-app',
        display_name: 'Outage',
        description: '',
      });
      assert.equal(created.status, 201);
    });

    after(async () => {
      await server?.stop();
      await proxy?.close();
      await dropSchema(schema);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('answers 503 problems with Retry-After within 2.5 s while the database is away', async () => {
      breakIt(proxy);
      const calls = [
        () => callServer(server, key, 'GET', applicationPath),
        () =>
          callServer(server, key, 'POST', '/applications', {
            client_id: 'made-during-outage',
            display_name: 'Lost?',
            description: '',
          }),
        () => callServer(server, key, 'GET', '//readyz'),
      ];
      for (const call of calls) {
        const response = await call();
        assert.equal(response.status, 503, JSON.stringify(response.body));
        assert.ok(response.elapsed <= answerWithinMs, `answered after ${response.elapsed} ms`);
        assert.equal(response.headers.get('content-type'), 'application/problem+json');
        assert.ok(Number(response.headers.get('retry-after')) >= 1);
        assert.equal(response.body?.status, 503);
        assert.equal(response.body?.type, 'https://tessera.dev/problems/store-unavailable');
      }
      // The process itself is up and says so.
      assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200);
      assert.equal(server.process.exitCode, null);
    });

    it('works again within 5 s of the database coming back, without a restart', async () => {
      proxy.restore();
      const restoredAt = Date.now();
      let status = 0;
      while (Date.now() - restoredAt < 10_000) {
        status = (await callServer(server, key, 'GET', applicationPath)).status;
        if (status === 200) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const elapsed = Date.now() - restoredAt;
      assert.equal(status, 200);
      assert.ok(elapsed <= 5000, `recovered after ${elapsed} ms`);
      assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
      const write = await callServer(server, key, 'PUT', applicationPath, {
        client_id: 'outage-app',
        display_name: 'Outage, over',
        description: '',
      });
      assert.equal(write.status, 200);
      assert.equal(server.process.exitCode, null);
    });
  });
}

describeOutage('PostgreSQL goes away (connections reset, new ones refused)', (proxy) =>
  proxy.cut(),
);

// A partition: nothing is refused, nothing answers. Only timeouts notice. With the connect and
// statement timeouts at 1 s a 503 comes after about 1.25 s; the bound of 2 s is below what the
// 2 s defaults give (about 2.25 s), so it also shows that the variables reach the pool.
describeOutage(
  'the network to PostgreSQL goes silent',
  (proxy) => proxy.blackhole(),
  { IAM_DB_CONNECT_TIMEOUT_MS: '1000', IAM_DB_STATEMENT_TIMEOUT_MS: '1000' },
  2000,
);
