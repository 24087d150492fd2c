// tessera-test: both-stores
// Clients that hold connections open (real TCP): slow ones are cut off with a 408 problem, and a
// thousand idle connections do not keep real requests from being served.

import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HTTP_TIMEOUTS } from '../src/app.js';
import { buildTestApp, createApplication, type TestContext } from './helpers.js';

async function listen(ctx: TestContext): Promise<number> {
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  return (ctx.app.server.address() as { port: number }).port;
}

/** Opens a connection, writes `first`, then `drip` every 50 ms until the server closes it. */
function trickle(
  port: number,
  first: string,
  drip: string,
): Promise<{ answer: string; drips: number }> {
  return new Promise((resolve, reject) => {
    let answer = '';
    let drips = 0;
    let timer: NodeJS.Timeout | undefined;
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (!socket.writable) return;
        socket.write(drip);
        drips += 1;
        if (drips > 600) socket.destroy(new Error('never cut off (30 s of dripping)'));
      }, 50);
    });
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', (error) => {
      if (
        (error as NodeJS.ErrnoException).code !== 'ECONNRESET' &&
        (error as NodeJS.ErrnoException).code !== 'EPIPE'
      )
        reject(error);
    });
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, drips });
    });
  });
}

describe('slow clients', () => {
  let ctx: TestContext;
  let port: number;
  before(async () => {
    ctx = await buildTestApp({
      timeouts: { headersMs: 400, requestMs: 1_000, checkIntervalMs: 50 },
    });
    port = await listen(ctx);
  });
  after(() => ctx.close());

  it('has header and request timeouts set by default', () => {
    assert.ok(HTTP_TIMEOUTS.headersMs > 0 && HTTP_TIMEOUTS.headersMs <= 10_000);
    assert.ok(HTTP_TIMEOUTS.requestMs > 0 && HTTP_TIMEOUTS.requestMs <= 30_000);
    assert.ok(HTTP_TIMEOUTS.checkIntervalMs <= 1_000);
  });

  it('cuts off a client that trickles its headers, with a 408 problem', async () => {
    const { answer, drips } = await trickle(
      port,
      'GET /iam/api/v1/applications HTTP/1.1\r\nHost: x\r\n',
      'X-A: b\r\n',
    );
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.match(answer, /application\/problem\+json/);
    assert.equal(JSON.parse(answer.split('\r\n\r\n')[1]!).status, 408);
    assert.ok(drips < 600);
  });

  it('cuts off a client that trickles its body, with a 408 problem', async () => {
    const { answer } = await trickle(
      port,
      `POST /iam/api/v1/applications HTTP/1.1\r\nHost: x\r\nAuthorization: apikey ${ctx.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
      ' ',
    );
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.equal(JSON.parse(answer.split('\r\n\r\n')[1]!).status, 408);
  });

  it('closes a connection that never sends a byte', async () => {
    const { answer } = await trickle(port, '', '');
    // Closed, with nothing or a 408: never left open, never served.
    assert.match(answer, /^(HTTP\/1\.1 408 [^]*)?$/);
  });
});

describe('a thousand idle connections', () => {
  let ctx: TestContext;
  let port: number;
  const idle: Socket[] = [];
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    port = await listen(ctx);
  });
  after(async () => {
    for (const socket of idle) socket.destroy();
    await ctx.close();
  });

  it('do not starve real requests', async () => {
    const opened = Array.from(
      { length: 1_000 },
      (_, n) =>
        new Promise<void>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => {
            // Half say nothing; half stop in the middle of their headers.
            if (n % 2 === 1) socket.write('GET /iam/api/v1/applications HTTP/1.1\r\nHost: x\r\n');
            resolve();
          });
          socket.on('error', reject);
          idle.push(socket);
        }),
    );
    await Promise.all(opened);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(`http://127.0.0.1:${port}/iam/api/v1/applications/billing-web`, {
          headers: { authorization: `apikey ${ctx.adminKey}` },
        }),
      ),
    );
    for (const response of responses) {
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { client_id: string }).client_id, 'billing-web');
    }
    assert.ok(
      idle.every((socket) => !socket.destroyed),
      'the idle connections were all still open while the requests were served',
    );
  });
});
