// The server as `npm start` runs it, with IAM_METRICS_PORT (README, Configuration): /metrics
// moves to a listener of its own and leaves the public port; health answers on both. Also what
// its log says at start and per request: one start-up line, one request id, the client's
// address. And IAM_BENCH_WITHOUT_EVENTS, once a switch that silently stopped the audit trail,
// is no longer read.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type ServerProcess,
  callServer,
  freePort,
  serverEntry,
  startServerProcess,
} from './server-process.js';

type LogLine = Record<string, unknown>;

describe('a server with IAM_METRICS_PORT', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-operations-'));
  const key = `tsr_${randomBytes(32).toString('base64url')}`;
  let server: ServerProcess;
  let metricsPort: number;
  const metricsUrl = (path: string) => `http://127.0.0.1:${metricsPort}${path}`;
  const logLines = (): LogLine[] =>
    server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  before(async () => {
    metricsPort = await freePort();
    server = await startServerProcess(process.execPath, serverEntry(), {
      DATABASE_URL: `sqlite:${join(dataDir, 'tessera.db')}`,
      IAM_BOOTSTRAP_API_KEY: key,
      IAM_METRICS_PORT: String(metricsPort),
      IAM_BENCH_WITHOUT_EVENTS: 'true',
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves /metrics, /healthz and /readyz on the metrics port', async () => {
    const metrics = await fetch(metricsUrl('/metrics'));
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type')!, /^text\/plain/);
    assert.match(await metrics.text(), /^tessera_build_info\{/m);
    assert.deepEqual(await (await fetch(metricsUrl('/healthz'))).json(), { status: 'ok' });
    assert.deepEqual(await (await fetch(metricsUrl('/readyz'))).json(), { status: 'ready' });
  });

  it('no longer serves /metrics on the public port; health stays there for load balancers', async () => {
    const metrics = await fetch(`${server.baseUrl}/metrics`);
    assert.equal(metrics.status, 404);
    assert.equal(metrics.headers.get('content-type'), 'application/problem+json');
    assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
  });

  it('serves nothing else on the metrics port: the API is not there', async () => {
    const api = await fetch(metricsUrl('/iam/api/v1/applications'), {
      headers: { authorization: `apikey ${key}` },
    });
    assert.equal(api.status, 404);
    assert.equal(api.headers.get('content-type'), 'application/problem+json');
  });

  it('logs one line when it starts serving, naming both addresses', () => {
    const lines = logLines();
    const serving = lines.filter((line) => line.msg === 'Tessera is serving');
    assert.equal(serving.length, 1, server.output());
    assert.equal(serving[0]!.address, server.baseUrl);
    assert.equal(serving[0]!.metrics_address, `http://127.0.0.1:${metricsPort}`);
    assert.ok(
      !lines.some((line) => /listening/i.test(String(line.msg))),
      `no other start-up line: ${server.output()}`,
    );
  });

  it('logs each request once, with one request id and the client address, refused ones too', async () => {
    const refused = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
      headers: { authorization: 'apikey tsr_wrong', 'x-request-id': 'refused-1' },
    });
    assert.equal(refused.status, 401);
    const served = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
      headers: { authorization: `apikey ${key}`, 'x-request-id': 'served-1' },
    });
    assert.equal(served.status, 200);
    // A line is written once its response has gone: it may reach the pipe a moment later.
    const logged = (id: string) =>
      logLines().find((line) => line.msg === 'request' && line.request_id === id);
    for (let waited = 0; logged('served-1') === undefined && waited < 5_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const refusedLine = logged('refused-1');
    const servedLine = logged('served-1');
    assert.ok(refusedLine && servedLine, server.output());
    assert.equal(refusedLine.status, 401);
    assert.equal(refusedLine.client_address, '127.0.0.1');
    assert.equal(refusedLine.api_key_id, null);
    assert.equal(servedLine.client_address, '127.0.0.1');
    assert.equal(typeof servedLine.api_key_id, 'string');
    for (const line of logLines()) {
      assert.ok(!('reqId' in line), `one name for the request id: ${JSON.stringify(line)}`);
    }
  });

  it('records every change although IAM_BENCH_WITHOUT_EVENTS=true was set', async () => {
    const created = await callServer(server, key, 'POST', '/applications', {
      client_id: 'audited',
      display_name: 'Audited',
      description: '',
    });
    assert.equal(created.status, 201);
    const events = await callServer(server, key, 'GET', '/events?client_id=audited');
    assert.deepEqual(
      events.body.items.map((event: { type: string }) => event.type),
      ['application.created'],
    );
  });
});
