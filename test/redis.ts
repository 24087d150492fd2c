// Redis for tests: whether one answers at REDIS_TEST_URL (default: the machine's), like
// test/postgres.ts for PostgreSQL. In CI (CI=true) a missing Redis is a failure; elsewhere the
// tests that need it are skipped with the reason printed.

import { Redis } from 'ioredis';
import { skipUnless } from './required-service.js';

export const REDIS_TEST_URL = process.env.TESSERA_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function skipWithoutRedis(): Promise<string | false> {
  const client = new Redis(REDIS_TEST_URL, {
    lazyConnect: true,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return false;
  } catch (error) {
    const reason = `Redis at ${REDIS_TEST_URL} is not reachable (${(error as Error).message})`;
    return skipUnless('Redis', reason);
  } finally {
    client.disconnect();
  }
}

/** Deletes the keys a test wrote under its own prefix. */
export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  const keys = await client.keys(`${prefix}*`).catch(() => []);
  if (keys.length > 0) await client.del(...keys);
}
