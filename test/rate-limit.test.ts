// tessera-test: both-stores
// Rate limits shared through Redis (REDIS_URL): two instances count one key's requests
// together; Redis going away fails open (requests served, one warning logged) and the limit
// holds again once Redis is back.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { DEFAULT_REDIS_PREFIX, openRateLimitRedis } from '../src/http/rate-limit.js';
import { startServer } from '../src/server.js';
import { buildTestApp, call, problemOf, type TestContext } from './helpers.js';
import { REDIS_TEST_URL, deleteKeys, skipWithoutRedis } from './redis.js';
import { freePort } from './server-process.js';

const skip = await skipWithoutRedis();

function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
        }
        callback();
      },
    }),
  );
  return { logger, lines };
}

/** A TCP relay to Redis that can be cut and restored, to stage an outage. */
async function redisRelay() {
  const target = new URL(REDIS_TEST_URL);
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = createConnection(Number(target.port || 6379), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await open();
  return {
    url: `redis://127.0.0.1:${port}`,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server!.close(() => resolve());
      }),
    restore: open,
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 200 && !condition(); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(condition(), what);
}

describe('rate limits shared through Redis', { skip }, () => {
  const prefix = `tessera-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const clients: Redis[] = [];
  let first: TestContext;
  let second: TestContext;
  let logs: ReturnType<typeof capturingLogger>;

  before(async () => {
    logs = capturingLogger();
    const redis = async () => {
      const client = await openRateLimitRedis(REDIS_TEST_URL, logs.logger);
      clients.push(client);
      return client;
    };
    first = await buildTestApp({
      rateLimitPerMinute: 5,
      rateLimitRedis: await redis(),
      rateLimitRedisPrefix: prefix,
    });
    // A second instance on the same store, with its own Redis connection: another process.
    second = await buildTestApp({
      store: first.store,
      rateLimitPerMinute: 5,
      rateLimitRedis: await redis(),
      rateLimitRedisPrefix: prefix,
    });
    await Promise.all(clients.map((client) => until(() => client.status === 'ready', 'ready')));
  });
  after(async () => {
    await deleteKeys(clients[0]!, prefix);
    for (const client of clients) client.disconnect();
    await second.app.close();
    await first.close();
  });

  it('counts one key across two instances and answers 429 with Retry-After and RateLimit headers', async () => {
    const key = await first.createKey({ roles: ['applications:read'] });
    const instances = [first, second, first, second, second];
    for (const [index, instance] of instances.entries()) {
      const response = await call(instance, 'GET', '/applications', { key });
      assert.equal(response.statusCode, 200, `request ${index + 1}`);
      assert.equal(response.headers['ratelimit-limit'], '5');
      assert.equal(response.headers['ratelimit-remaining'], String(4 - index));
    }
    for (const instance of [first, second]) {
      const limited = await call(instance, 'GET', '/applications', { key });
      problemOf(limited, 429);
      assert.match(String(limited.headers['retry-after']), /^[1-9][0-9]*$/);
      assert.ok(Number(limited.headers['retry-after']) <= 60);
      assert.equal(limited.headers['ratelimit-limit'], '5');
      assert.equal(limited.headers['ratelimit-remaining'], '0');
      assert.match(String(limited.headers['ratelimit-reset']), /^[0-9]+$/);
    }
    assert.ok((await clients[0]!.keys(`${prefix}*`)).length > 0, 'the counters are in Redis');
  });

  it('still serves another key', async () => {
    const other = await first.createKey({ roles: ['applications:read'] });
    assert.equal((await call(second, 'GET', '/applications', { key: other })).statusCode, 200);
  });
});

describe('rate limits while Redis is unreachable', { skip }, () => {
  const prefix = `tessera-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  let relay: Awaited<ReturnType<typeof redisRelay>>;
  let redis: Redis;
  let ctx: TestContext;
  let logs: ReturnType<typeof capturingLogger>;

  before(async () => {
    relay = await redisRelay();
    logs = capturingLogger();
    redis = await openRateLimitRedis(relay.url, logs.logger);
    ctx = await buildTestApp({
      rateLimitPerMinute: 3,
      rateLimitRedis: redis,
      rateLimitRedisPrefix: prefix,
    });
    await until(() => redis.status === 'ready', 'Redis is connected');
  });
  after(async () => {
    await deleteKeys(redis, prefix);
    redis.disconnect();
    await relay.cut().catch(() => undefined);
    await ctx.close();
  });

  it('serves requests (fails open) and logs one warning, not one per request', async () => {
    const key = await ctx.createKey({ roles: ['applications:read'] });
    // (A slow first connect on a loaded machine may have warned already: count from here.)
    const warned = () => logs.lines.filter((line) => line.msg.startsWith('Redis is unreachable'));
    const before = warned().length;
    await relay.cut();
    await until(() => redis.status !== 'ready', 'the client noticed the outage');
    for (let request = 0; request < 10; request += 1) {
      assert.equal((await call(ctx, 'GET', '/applications', { key })).statusCode, 200);
    }
    const warnings = warned().slice(before);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!.level, 40);
  });

  it('enforces the limit again once Redis is back', async () => {
    await relay.restore();
    await until(() => redis.status === 'ready', 'the client reconnected');
    assert.ok(logs.lines.some((line) => line.msg.startsWith('Redis is reachable again')));
    const key = await ctx.createKey({ roles: ['applications:read'] });
    for (let request = 0; request < 3; request += 1) {
      assert.equal((await call(ctx, 'GET', '/applications', { key })).statusCode, 200);
    }
    problemOf(await call(ctx, 'GET', '/applications', { key }), 429);
  });
});

describe('REDIS_URL, as the server reads it', { skip }, () => {
  it('makes the server count in Redis: the fourth request of three allowed is a 429', async () => {
    const key = `tsr_${randomBytes(32).toString('base64url')}`;
    const app = await startServer(
      loadConfig({
        DATABASE_URL: 'sqlite::memory:',
        PORT: '0',
        REDIS_URL: REDIS_TEST_URL,
        IAM_RATE_LIMIT_PER_MINUTE: '3',
        IAM_BOOTSTRAP_API_KEY: key,
        LOG_LEVEL: 'silent',
      }),
    );
    const redis = await openRateLimitRedis(REDIS_TEST_URL, pino({ level: 'silent' }));
    try {
      const { port } = app.server.address() as { port: number };
      const get = (path: string) =>
        fetch(`http://127.0.0.1:${port}/iam/api/v1${path}`, {
          headers: { authorization: `apikey ${key}` },
        });
      const listed = await get('/api-keys');
      assert.equal(listed.status, 200);
      const { items } = (await listed.json()) as { items: { id: string }[] };
      const statuses: number[] = [];
      for (let request = 0; request < 3; request += 1) {
        const response = await get('/applications');
        statuses.push(response.status);
        await response.arrayBuffer();
      }
      assert.deepEqual(statuses, [200, 200, 429]);
      await until(() => redis.status === 'ready', 'Redis is connected');
      const counter = `${DEFAULT_REDIS_PREFIX}${items[0]!.id}`;
      assert.equal(await redis.get(counter), '4', 'the key’s counter is in Redis');
      await redis.del(counter);
    } finally {
      await app.close();
      redis.disconnect();
    }
  });
});
