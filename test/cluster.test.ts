// IAM_WORKERS=2: two worker processes serve one port, on each store, as operators run them.
// Which worker answered is read from the access log (each line names its worker), by the
// request id the test sent. Every call that must be spread over the workers opens a
// connection of its own: node:cluster hands each new connection to the next worker.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { logLines, servedBy, workerPids, workersOf } from './cluster-logs.js';
import { applicationBody, userBody } from './helpers.js';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { type ServerProcess, serverEntry, startServerProcess } from './server-process.js';

const KEY = `tsr_cluster_${'c'.repeat(40)}`;
const FAILURES_PER_MINUTE = 10;
const REQUESTS_PER_MINUTE = 600;
// TESSERA_TEST_POSTGRES_PASS=skip (CI's second Node.js line) leaves out the HTTP suite on
// PostgreSQL: the workers on PostgreSQL with it, saying so; the workers on SQLite still run.
const skipPostgres =
  process.env.TESSERA_TEST_POSTGRES_PASS === 'skip'
    ? 'two workers on PostgreSQL skipped: TESSERA_TEST_POSTGRES_PASS=skip (the HTTP suite on PostgreSQL is not run on this Node.js line)'
    : await skipWithoutPostgres();

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read members freely
  body: any;
  requestId: string;
  reusedSocket: boolean;
}

/**
 * One HTTP call: on a connection of its own (no agent) unless one is given. `from` sets
 * X-Forwarded-For (the server trusts it here), so limits can be tried from another address.
 */
function send(
  server: ServerProcess,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; agent?: Agent; from?: string } = {},
): Promise<Answer> {
  const requestId = randomUUID();
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path: path.startsWith('/iam') || path.startsWith('/.well') ? path : `/iam/api/v1${path}`,
        agent: options.agent ?? false,
        headers: {
          'x-request-id': requestId,
          ...(options.key === undefined ? {} : { authorization: `apikey ${options.key}` }),
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...(options.from === undefined ? {} : { 'x-forwarded-for': options.from }),
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
            reusedSocket: outgoing.reusedSocket,
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** Calls on new connections until both workers have answered one (caches warmed on both). */
async function untilBothWorkersAnswer(
  server: ServerProcess,
  call: () => Promise<Answer>,
  expectedStatus: number,
): Promise<void> {
  const seen = new Set<number>();
  for (let attempt = 0; seen.size < 2; attempt += 1) {
    assert.ok(attempt < 40, 'the calls never reached both workers');
    const answer = await call();
    assert.equal(answer.status, expectedStatus);
    seen.add(await servedBy(server, answer.requestId));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

for (const store of ['sqlite', 'postgres'] as const) {
  describe(
    `two workers on ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    {
      skip: store === 'postgres' ? skipPostgres : false,
      timeout: 300_000,
    },
    () => {
      let server: ServerProcess;
      const directory = mkdtempSync(join(tmpdir(), 'tessera-cluster-'));
      let schema: string | null = null;

      before(async () => {
        schema = store === 'postgres' ? await createTestSchema() : null;
        server = await startServerProcess(process.execPath, serverEntry(), {
          IAM_WORKERS: '2',
          DATABASE_URL:
            schema === null ? `sqlite:${join(directory, 'tessera.db')}` : databaseUrlFor(schema),
          IAM_DATA_DIR: directory,
          IAM_BOOTSTRAP_API_KEY: KEY,
          IAM_TRUST_PROXY: 'true',
          IAM_AUTH_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE),
          IAM_RATE_LIMIT_PER_MINUTE: String(REQUESTS_PER_MINUTE),
        });
        // Both workers serve before the tests begin (/healthz answered as soon as one did).
        for (let waited = 0; workerPids(server).size < 2; waited += 50) {
          assert.ok(waited < 60_000, `the second worker never served:\n${server.output()}`);
          await sleep(50);
        }
      });
      after(async () => {
        if (server.process.exitCode === null && server.process.signalCode === null) {
          await server.stop();
        }
        if (schema !== null) await dropSchema(schema);
        rmSync(directory, { recursive: true, force: true });
      });

      it('serves one port from both workers, the primary preparing the database once', async () => {
        const answers: Answer[] = [];
        for (let n = 0; n < 12; n += 1)
          answers.push(await send(server, 'GET', '/applications', { key: KEY }));
        assert.deepEqual(
          answers.map((answer) => answer.status),
          answers.map(() => 200),
        );
        assert.deepEqual([...(await workersOf(server, answers))].sort(), [1, 2]);
        const lines = logLines(server);
        assert.equal(lines.filter((line) => line.msg === 'bootstrap API key ready').length, 1);
        assert.equal(lines.filter((line) => line.msg === 'created a token signing key').length, 1);
      });

      it('takes concurrent writes on both workers, refusing none', async () => {
        const application = await send(server, 'POST', '/applications', {
          key: KEY,
          body: applicationBody({ client_id: 'busy-app' }),
        });
        assert.equal(application.status, 201);
        const answers = await Promise.all(
          Array.from({ length: 120 }, (_, n) =>
            send(server, 'POST', '/applications/busy-app/users', {
              key: KEY,
              body: userBody({ identifier: `writer-${n}` }),
            }),
          ),
        );
        assert.deepEqual(
          answers.map((answer) => answer.status),
          answers.map(() => 201),
        );
        assert.equal((await workersOf(server, answers)).size, 2);
        const listed = await send(server, 'GET', '/applications/busy-app/users?limit=200', {
          key: KEY,
        });
        assert.equal(listed.body.items.length, 120);
      });

      it('refuses a revoked API key on every worker within 1 s', async () => {
        const created = await send(server, 'POST', '/api-keys', {
          key: KEY,
          body: { name: 'soon revoked', roles: ['applications:read'] },
        });
        assert.equal(created.status, 201);
        const secret = created.body.key as string;
        await untilBothWorkersAnswer(
          server,
          () => send(server, 'GET', '/applications', { key: secret }),
          200,
        );
        const revoked = await send(server, 'DELETE', `/api-keys/${created.body.id}`, { key: KEY });
        assert.ok(revoked.status === 200 || revoked.status === 204, `revoke: ${revoked.status}`);
        await sleep(1_000);
        const answers: Answer[] = [];
        for (let n = 0; n < 10; n += 1)
          // From an address of their own: these refusals count as failed authentications.
          answers.push(
            await send(server, 'GET', '/applications', { key: secret, from: '198.51.100.1' }),
          );
        assert.deepEqual(
          answers.map((answer) => answer.status),
          answers.map(() => 401),
        );
        assert.equal((await workersOf(server, answers)).size, 2, 'both workers refused it');
      });

      it("drops a revoked signing key from every worker's JWKS within 1 s", async () => {
        const jwks = () => send(server, 'GET', '/.well-known/jwks.json');
        await untilBothWorkersAnswer(server, jwks, 200);
        const kid = ((await jwks()).body.keys as { kid: string }[])[0]!.kid;
        const revoked = await send(server, 'POST', `/signing-keys/${kid}/revoke`, { key: KEY });
        assert.equal(revoked.status, 200);
        await sleep(1_000);
        const answers: Answer[] = [];
        for (let n = 0; n < 10; n += 1) answers.push(await jwks());
        for (const answer of answers) {
          const kids = (answer.body.keys as { kid: string }[]).map((key) => key.kid);
          assert.ok(!kids.includes(kid), 'a worker still publishes the revoked key');
          assert.ok(kids.length > 0, 'a new key is published');
        }
        assert.equal((await workersOf(server, answers)).size, 2);
      });

      it('holds the failed-authentication limit for the whole cluster, not per worker', async () => {
        const answers: Answer[] = [];
        for (let n = 0; n < FAILURES_PER_MINUTE * 2; n += 1) {
          answers.push(
            await send(server, 'GET', '/applications', {
              key: `tsr_${'x'.repeat(43)}`,
              from: '203.0.113.7',
            }),
          );
        }
        const statuses = answers.map((answer) => answer.status);
        assert.equal(statuses.filter((status) => status === 401).length, FAILURES_PER_MINUTE);
        assert.equal(statuses.filter((status) => status === 429).length, FAILURES_PER_MINUTE);
        assert.equal((await workersOf(server, answers)).size, 2);
      });

      it('holds the rate limit of a key for the whole cluster, not per worker', async () => {
        const created = await send(server, 'POST', '/api-keys', {
          key: KEY,
          body: { name: 'busy', roles: ['applications:read'] },
        });
        assert.equal(created.status, 201);
        const answers: Answer[] = [];
        for (let n = 0; n < REQUESTS_PER_MINUTE * 1.5; n += 1) {
          answers.push(await send(server, 'GET', '/applications', { key: created.body.key }));
        }
        const served = answers.filter((answer) => answer.status === 200).length;
        const limited = answers.filter((answer) => answer.status === 429).length;
        assert.equal(served + limited, answers.length);
        // Counted in shares (a worker may refuse a little early), never past the limit.
        assert.ok(served <= REQUESTS_PER_MINUTE, `${served} served`);
        assert.ok(served >= REQUESTS_PER_MINUTE * 0.75, `only ${served} served`);
        assert.equal((await workersOf(server, answers.slice(0, 10))).size, 2);
      });

      it('wakes a long poll on one worker within 150 ms of a commit on the other', async () => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const first = await send(server, 'GET', '/events?limit=1', { key: KEY, agent });
          const poller = await servedBy(server, first.requestId);
          const times: number[] = [];
          for (let attempt = 0; times.length < 5; attempt += 1) {
            assert.ok(attempt < 40, 'the creates never reached the other worker');
            // after= the newest event: the poll waits for the next one.
            let after = '';
            for (;;) {
              const page = await send(
                server,
                'GET',
                `/events?limit=1000${after === '' ? '' : `&after=${after}`}`,
                { key: KEY },
              );
              after = (page.body.next_after as string | null) ?? after;
              if (page.body.items.length < 1000) break;
            }
            let wokeAt = 0;
            const polling = send(server, 'GET', `/events?after=${after}&wait=10`, {
              key: KEY,
              agent,
            }).then((answer) => {
              wokeAt = performance.now();
              return answer;
            });
            await sleep(200);
            const created = await send(server, 'POST', '/applications', {
              key: KEY,
              body: applicationBody({ client_id: `woken-${attempt}` }),
            });
            const answeredAt = performance.now();
            assert.equal(created.status, 201);
            const polled = await polling;
            assert.equal(polled.status, 200);
            assert.equal(await servedBy(server, polled.requestId), poller);
            assert.ok(polled.body.items.length > 0);
            // Only a commit on the other worker says anything about the relay.
            if ((await servedBy(server, created.requestId)) !== poller) {
              times.push(Math.max(0, wokeAt - answeredAt));
            } else {
              // Connections go to the workers in turn: one more moves the next create along.
              await send(server, 'GET', '/healthz');
            }
          }
          times.sort((a, b) => a - b);
          // Without news of the commit the poll would wake at the next safety poll, within 1 s.
          assert.ok(
            times[2]! < 150,
            `woke after ${times.map((time) => time.toFixed(1)).join(', ')} ms`,
          );
        } finally {
          agent.destroy();
        }
      });

      it("replaces a killed worker without dropping the other's connection or request", async () => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const first = await send(server, 'GET', '/applications', { key: KEY, agent });
          const survivor = await servedBy(server, first.requestId);
          const pidsBefore = workerPids(server);
          const victim = survivor === 1 ? 2 : 1;
          // A long poll in flight on the survivor's connection while the other worker dies.
          const polling = send(server, 'GET', '/events?since=2099-01-01T00:00:00Z&wait=2', {
            key: KEY,
            agent,
          });
          await sleep(300);
          process.kill(pidsBefore.get(victim)!, 'SIGKILL');
          const polled = await polling;
          assert.equal(polled.status, 200);
          assert.ok(polled.reusedSocket, 'the long poll went over the same connection');
          assert.equal(await servedBy(server, polled.requestId), survivor);
          const next = await send(server, 'GET', '/applications', { key: KEY, agent });
          assert.equal(next.status, 200);
          assert.ok(next.reusedSocket, 'the connection is still open');
          // The primary starts another worker in the dead one's place.
          for (
            let waited = 0;
            workerPids(server).get(victim) === pidsBefore.get(victim);
            waited += 50
          ) {
            assert.ok(waited < 60_000, 'the killed worker was not replaced');
            await sleep(50);
          }
          await untilBothWorkersAnswer(
            server,
            () => send(server, 'GET', '/applications', { key: KEY }),
            200,
          );
        } finally {
          agent.destroy();
        }
      });

      it('stops every worker on SIGTERM, finishing the request in flight, and exits 0', async () => {
        // A request whose body is still arriving when the signal comes.
        const body = JSON.stringify(applicationBody({ client_id: 'in-flight' }));
        const half = Math.floor(body.length / 2);
        let answered!: (status: number) => void;
        const status = new Promise<number>((resolve) => (answered = resolve));
        const outgoing = request(
          {
            host: '127.0.0.1',
            port: server.port,
            method: 'POST',
            path: '/iam/api/v1/applications',
            agent: false,
            headers: {
              authorization: `apikey ${KEY}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
            },
          },
          (response) => {
            response.resume();
            response.on('end', () => answered(response.statusCode ?? 0));
          },
        );
        outgoing.write(body.slice(0, half));
        await sleep(1_000);
        server.process.kill('SIGTERM');
        await sleep(300);
        outgoing.end(body.slice(half));
        assert.equal(await status, 201);
        assert.equal(await server.exited, 0, server.output());
        const lines = logLines(server);
        assert.equal(lines.at(-1)?.msg, 'stopped');
        assert.equal(
          lines.filter((line) => line.msg === 'stopped').length,
          3,
          'two workers and the primary',
        );
      });
    },
  );
}
