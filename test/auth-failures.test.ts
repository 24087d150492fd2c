// tessera-test: both-stores
// Failed authentication limited per client address (IAM_AUTH_FAILURES_PER_MINUTE): guessing
// API keys, and replaying refused ID tokens at /oauth2/token, stop at the limit; past it the
// answer is 429 with Retry-After before any credential is looked at. Shared through Redis.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { clientKey } from '../src/http/auth-failures.js';
import { openRateLimitRedis } from '../src/http/rate-limit.js';
import { buildTestApp, useTestApp, problemOf, type TestContext } from './helpers.js';
import { REDIS_TEST_URL, deleteKeys, skipWithoutRedis } from './redis.js';

const LIMIT = 5;
const WRONG_KEY = `tsr_${'A'.repeat(43)}`;

function from(ctx: TestContext, address: string, key: string | null) {
  return ctx.app.inject({
    method: 'GET',
    url: '/iam/api/v1/applications',
    remoteAddress: address,
    ...(key === null ? {} : { headers: { authorization: `apikey ${key}` } }),
  });
}

function exchangeFrom(ctx: TestContext, address: string) {
  return ctx.app.inject({
    method: 'POST',
    url: '/oauth2/token',
    remoteAddress: address,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      client_id: 'nobody',
      subject_token: 'a.b.c',
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
    }).toString(),
  });
}

describe('failed authentication per client address', () => {
  const ctx = useTestApp({ authFailuresPerMinute: LIMIT });

  it(`answers 429 with Retry-After after ${LIMIT} failures, even to the right key`, async () => {
    const address = '198.51.100.7';
    for (let attempt = 1; attempt <= LIMIT; attempt++) {
      problemOf(await from(ctx, address, attempt % 2 === 0 ? null : WRONG_KEY), 401);
    }
    // Refused before the key is looked up: a correct guess now would not be recognised.
    const limited = await from(ctx, address, ctx.adminKey);
    const problem = problemOf(limited, 429);
    assert.match(problem.detail, /failed authentications from this address/);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(limited.headers['retry-after']));
  });

  it('limits each address on its own, and counts only failures', async () => {
    for (let attempt = 0; attempt < LIMIT * 3; attempt++) {
      assert.equal((await from(ctx, '198.51.100.8', ctx.adminKey)).statusCode, 200);
    }
    problemOf(await from(ctx, '198.51.100.8', WRONG_KEY), 401);
    assert.equal((await from(ctx, '198.51.100.8', ctx.adminKey)).statusCode, 200);
  });

  it('counts the addresses of one IPv6 /64 together', async () => {
    for (let host = 1; host <= LIMIT; host++) {
      problemOf(await from(ctx, `2001:db8:1:2::${host}`, WRONG_KEY), 401);
    }
    problemOf(await from(ctx, '2001:db8:1:2:ffff::1', ctx.adminKey), 429);
    assert.equal((await from(ctx, '2001:db8:1:3::1', ctx.adminKey)).statusCode, 200);
  });

  it('limits refused token requests at /oauth2/token the same way, as an OAuth error', async () => {
    const address = '198.51.100.9';
    for (let attempt = 1; attempt <= LIMIT; attempt++) {
      const refused = await exchangeFrom(ctx, address);
      assert.equal(refused.statusCode, 401, refused.body);
    }
    const limited = await exchangeFrom(ctx, address);
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().error, 'temporarily_unavailable');
    assert.match(String(limited.headers['retry-after']), /^[1-9][0-9]*$/);
    // The API's counter is another one: the same address still authenticates there.
    assert.equal((await from(ctx, address, ctx.adminKey)).statusCode, 200);
  });
});

describe('client keys of the failure limit', () => {
  it('are IPv4 addresses, IPv6 /64 prefixes, and IPv4 for IPv4-mapped IPv6', () => {
    assert.equal(clientKey('203.0.113.5'), '203.0.113.5');
    assert.equal(clientKey('::ffff:203.0.113.5'), '203.0.113.5');
    assert.equal(clientKey('2001:db8:a:b:c:d:e:f'), '2001:db8:a:b::/64');
    assert.equal(clientKey('2001:db8:a:b::1'), clientKey('2001:db8:a:b:ffff::2'));
  });
});

const skip = await skipWithoutRedis();

describe('failed authentication shared through Redis', { skip }, () => {
  const prefix = `tessera-test:${process.pid}:${randomBytes(4).toString('hex')}`;
  const clients: Redis[] = [];
  let first: TestContext;
  let second: TestContext;

  before(async () => {
    const redis = async () => {
      const client = await openRateLimitRedis(REDIS_TEST_URL, pino({ level: 'silent' }));
      clients.push(client);
      return client;
    };
    const options = { authFailuresPerMinute: LIMIT, authFailuresRedisPrefix: prefix };
    first = await buildTestApp({ ...options, rateLimitRedis: await redis() });
    second = await buildTestApp({ ...options, store: first.store, rateLimitRedis: await redis() });
    for (const client of clients) {
      for (let wait = 0; wait < 100 && client.status !== 'ready'; wait++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
  after(async () => {
    await deleteKeys(clients[0]!, prefix);
    for (const client of clients) client.disconnect();
    await second.app.close();
    await first.close();
  });

  it('counts one address across two instances', async () => {
    const address = '192.0.2.44';
    for (let attempt = 1; attempt <= LIMIT; attempt++) {
      problemOf(await from(attempt % 2 === 0 ? first : second, address, WRONG_KEY), 401);
    }
    problemOf(await from(first, address, first.adminKey), 429);
    problemOf(await from(second, address, first.adminKey), 429);
    assert.ok((await clients[0]!.keys(`${prefix}*`)).length > 0, 'the counters are in Redis');
  });
});
