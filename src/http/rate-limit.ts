// Requests per minute per API key (@fastify/rate-limit). The counters live in Redis when
// REDIS_URL is set, else in the database the instances share (PostgreSQL: shared-counters.ts),
// so that one limit holds across every instance, or in memory (one instance, SQLite). Redis or
// the database being unreachable must not take the API down: the limit then fails open
// (requests are served, uncounted) and, for Redis, a warning is logged once per outage.

import rateLimit from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { problem } from '../problems.js';
import { type SharedCounters, SharedRequestBudget } from './shared-counters.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;
export const DEFAULT_REDIS_PREFIX = 'tessera:rate-limit:';

export interface RateLimitOptions {
  /** Requests per minute per API key; 0: no limit. */
  perMinute: number;
  /** Shared counters; undefined: this instance's memory. */
  redis?: Redis;
  /** Prefix of the Redis keys (instances sharing a limit share it). */
  redisPrefix?: string;
  /** Counters in the database the instances share, when there is no Redis. */
  shared?: SharedCounters;
}

/** The prefix of the rate limit's counters in the database. */
export const SHARED_RATE_LIMIT_PREFIX = 'rate-limit:';

/** A store for @fastify/rate-limit that counts in the shared database, in shares. */
function sharedStore(budget: SharedRequestBudget) {
  return class SharedCounterStore {
    incr(
      key: string,
      callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
      timeWindow: number,
      max: number,
    ): void {
      budget.spend(key, max, timeWindow).then(
        (spent) => callback(null, spent),
        (error: unknown) => callback(error as Error),
      );
    }

    child(): this {
      return this;
    }
  };
}

/**
 * A Redis client for the limit: commands fail at once while it is disconnected (no offline
 * queue) or after 500 ms, so a request never waits on Redis; it reconnects in the background.
 * ioredis is loaded here, not with the module: without REDIS_URL it is never loaded (1.2 MB of
 * heap).
 */
export async function openRateLimitRedis(url: string, log: FastifyBaseLogger): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: 500,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
  });
  let healthy = true;
  const markDown = (reason: string) => {
    if (!healthy) return;
    healthy = false;
    // The reason only: a URL (with its password) never goes to the log.
    log.warn(
      { reason: reason.replace(/\/\/[^@/]*@/g, '//***@') },
      'Redis is unreachable: rate limits are not enforced until it is back',
    );
  };
  redis.on('error', (error: Error) => markDown(error.message));
  // 'end' is a close we asked for (shutdown), not an outage.
  redis.on('close', () => redis.status !== 'end' && markDown('connection closed'));
  redis.on('ready', () => {
    if (healthy) return;
    healthy = true;
    log.info('Redis is reachable again: rate limits are enforced');
  });
  return redis;
}

/**
 * Resolves when Redis is connected, or after `timeoutMs` (then the limits run on the fallbacks
 * until it connects): at start-up, so that the first requests are counted where the others are.
 */
export function waitForRedis(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
  });
}

export async function registerRateLimit(
  scope: FastifyInstance,
  options: RateLimitOptions,
): Promise<void> {
  if (options.perMinute <= 0) return;
  await scope.register(rateLimit, {
    max: options.perMinute,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    ...(options.redis !== undefined
      ? { redis: options.redis, nameSpace: options.redisPrefix ?? DEFAULT_REDIS_PREFIX }
      : options.shared !== undefined
        ? {
            store: sharedStore(
              new SharedRequestBudget(options.shared, SHARED_RATE_LIMIT_PREFIX),
            ) as never,
          }
        : {}),
    // Fail open: a store error (Redis down or slow) serves the request uncounted.
    skipOnError: true,
    // Runs after authentication (route-level hooks follow instance-level ones), so it
    // counts per key; requests without a valid key were refused before reaching it.
    keyGenerator: (request) => request.apiKey!.id,
    enableDraftSpec: true,
    errorResponseBuilder: (_request, context) =>
      problem(
        'rate-limited',
        `More than ${context.max} requests per minute; retry in ${context.after}.`,
      ),
  });
}
