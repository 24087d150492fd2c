// tessera-test: both-stores
// Three instances on one PostgreSQL hold one limit between them, with Redis (REDIS_URL) and
// without it (counted in the database): the failed-authentication limit per address and the
// rate limit per key are not multiplied by the number of instances.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { openRateLimitRedis } from '../src/http/rate-limit.js';
import { TEST_STORE, type TestContext, buildTestApp } from './helpers.js';
import {
  createTestSchema,
  databaseUrlFor,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from './postgres.js';
import { REDIS_TEST_URL, deleteKeys, skipWithoutRedis } from './redis.js';
import { type ServerProcess, serverEntry, startServerProcess } from './server-process.js';

// These instances are PostgreSQL's whatever the pass: they run once, in the PostgreSQL pass.
const skipPostgres =
  TEST_STORE === 'postgres'
    ? await skipWithoutPostgres()
    : 'instances on one PostgreSQL: run in the PostgreSQL pass';
const skipRedis = skipPostgres === false ? await skipWithoutRedis() : skipPostgres;

const FAILURES = 30;
const REQUESTS = 40;
const WRONG_KEY = `tsr_${'W'.repeat(43)}`;

/** A fresh client address per test, so tests never share a counter. */
function address(): string {
  return `198.51.100.${1 + (randomBytes(1)[0]! % 250)}`;
}

/** `count` calls spread over the instances in turn, one after another; their statuses. */
async function roundRobin(
  instances: TestContext[],
  count: number,
  request: (instance: TestContext) => Promise<{ statusCode: number }>,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let index = 0; index < count; index++) {
    statuses.push((await request(instances[index % instances.length]!)).statusCode);
  }
  return statuses;
}

function failedAuthentication(from: string) {
  return (instance: TestContext) =>
    instance.app.inject({
      method: 'GET',
      url: '/iam/api/v1/applications',
      remoteAddress: from,
      headers: { authorization: `apikey ${WRONG_KEY}` },
    });
}

function describeThreeInstances(label: string, skip: string | false, redis: boolean): void {
  describe(`three instances on one PostgreSQL, ${label}`, { skip, timeout: 120_000 }, () => {
    const prefix = `tessera-test:${process.pid}:${randomBytes(4).toString('hex')}`;
    const clients: Redis[] = [];
    const instances: TestContext[] = [];
    let schema = '';

    before(async () => {
      schema = await createTestSchema();
      for (let index = 0; index < 3; index++) {
        const client = redis
          ? await openRateLimitRedis(REDIS_TEST_URL, pino({ level: 'silent' }))
          : undefined;
        if (client !== undefined) clients.push(client);
        instances.push(
          await buildTestApp({
            store: await openTestPostgresStore({ schema }),
            authFailuresPerMinute: FAILURES,
            rateLimitPerMinute: REQUESTS,
            ...(client === undefined
              ? { sharedLimits: true }
              : {
                  rateLimitRedis: client,
                  rateLimitRedisPrefix: `${prefix}:rate:`,
                  authFailuresRedisPrefix: `${prefix}:auth`,
                }),
          }),
        );
      }
      for (const client of clients) {
        for (let wait = 0; wait < 100 && client.status !== 'ready'; wait++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    });
    after(async () => {
      if (clients[0] !== undefined) await deleteKeys(clients[0], prefix);
      for (const client of clients) client.disconnect();
      for (const instance of instances) await instance.close();
      await dropSchema(schema);
    });

    it(`refuse the ${FAILURES + 1}st failed authentication from one address, not the ${3 * FAILURES + 1}st`, async () => {
      const statuses = await roundRobin(instances, FAILURES + 15, failedAuthentication(address()));
      assert.deepEqual(statuses, [
        ...Array<number>(FAILURES).fill(401),
        ...Array<number>(15).fill(429),
      ]);
    });

    it(`serve ${REQUESTS} requests of one key per minute between them`, async () => {
      const key = await instances[0]!.createKey({ name: 'busy' });
      const statuses = await roundRobin(instances, REQUESTS + 20, (instance) =>
        instance.app.inject({
          method: 'GET',
          url: '/iam/api/v1/applications',
          headers: { authorization: `apikey ${key}` },
        }),
      );
      assert.deepEqual(statuses, [
        ...Array<number>(REQUESTS).fill(200),
        ...Array<number>(20).fill(429),
      ]);
    });
  });
}

describeThreeInstances('without Redis (counted in the database)', skipPostgres, false);
describeThreeInstances('with Redis', skipRedis, true);

describe(
  'three `npm start` processes on one PostgreSQL, without Redis',
  { skip: skipPostgres, timeout: 180_000 },
  () => {
    const KEY = `tsr_limits_${'l'.repeat(41)}`;
    const directory = mkdtempSync(join(tmpdir(), 'tessera-limits-'));
    let schema = '';
    let processes: ServerProcess[] = [];

    before(async () => {
      schema = await createTestSchema();
      const start = (name: string) =>
        startServerProcess(process.execPath, serverEntry(), {
          DATABASE_URL: databaseUrlFor(schema),
          IAM_DATA_DIR: join(directory, name),
          IAM_BOOTSTRAP_API_KEY: KEY,
          IAM_AUTH_FAILURES_PER_MINUTE: String(FAILURES),
          IAM_ACCESS_LOG: 'false',
          LOG_LEVEL: 'warn',
        });
      // One first, so that the others find the schema migrated and the key made.
      processes = [await start('a')];
      processes.push(...(await Promise.all([start('b'), start('c')])));
    });
    after(async () => {
      await Promise.all(processes.map((server) => server.stop()));
      await dropSchema(schema);
      rmSync(directory, { recursive: true, force: true });
    });

    it(`refuse the ${FAILURES + 1}st failed authentication from this address`, async () => {
      const statuses: number[] = [];
      for (let index = 0; index < FAILURES + 6; index++) {
        const server = processes[index % processes.length]!;
        const response = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
          headers: { authorization: `apikey ${WRONG_KEY}` },
        });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      assert.deepEqual(statuses, [
        ...Array<number>(FAILURES).fill(401),
        ...Array<number>(6).fill(429),
      ]);
    });
  },
);
