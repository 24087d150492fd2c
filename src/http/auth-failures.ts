// Failed authentication, limited per client address (IAM_AUTH_FAILURES_PER_MINUTE): past the
// limit a client is refused before its credentials are looked at, so guessing keys (or
// replaying forged ID tokens at /oauth2/token) stops at a few a second per address. The
// counters live in Redis (REDIS_URL), or in the database the instances share (PostgreSQL), so
// one limit holds across instances, or in memory (one instance, SQLite). While Redis or the
// database cannot count, each instance counts in its own memory instead (rate-limiter-flexible's
// insurance limiter), so the limit never simply disappears.
//
// In the database, a failure is one addition to a counter (shared-counters.ts); which
// addresses are over the limit is known to the instance that counted past it, from memory. An
// instance that has not heard yet looks the next key from such an address up, counts the
// failure, and answers 429 all the same (recordFailure says so): the limit holds for the sum
// of the instances, at the price of one key lookup per instance and window.

import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import type { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
} from 'rate-limiter-flexible';
import { type SharedCounters, countShared } from './shared-counters.js';

export const AUTH_FAILURE_WINDOW_SECONDS = 60;
export const DEFAULT_AUTH_FAILURES_REDIS_PREFIX = 'tessera:auth-failures';

export interface AuthFailureLimitOptions {
  /** Failures allowed per address and minute; 0 turns the limit off. */
  perMinute: number;
  /** What is being authenticated, kept apart from other counters ('api-key', 'token'). */
  purpose: string;
  /** Shared counters in Redis; undefined: the database's (below), else this instance's memory. */
  redis?: Redis;
  redisPrefix?: string;
  /** Counters in the database the instances share, when there is no Redis. */
  shared?: SharedCounters;
}

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const DOTTED_QUAD = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);

/**
 * The part of an address one client controls: an IPv4 address, or the /64 of an IPv6 one
 * (a single host usually holds a whole /64). IPv4-mapped IPv6 counts as IPv4.
 */
export function clientKey(address: string): string {
  // An IPv4 address in dotted decimal, as the socket gives it, is its own key: ipaddr's parse
  // cost 1.3–1.5 µs of the limiter's 1.9–2.3 a request (bench/README.md, "The failure limiter").
  if (DOTTED_QUAD.test(address)) return address;
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((part) => part.toString(16)).join(':')}::/64`;
}

export class AuthFailureLimiter {
  readonly #limiter: RateLimiterAbstract | null;
  readonly #points: number;
  readonly #shared: { counters: SharedCounters; prefix: string } | undefined;
  /** Addresses known to be over the limit, until their window ends: answered without asking Redis. */
  readonly #blocked = new LRUCache<string, true>({ max: 10_000, ttlAutopurge: false });

  constructor(options: AuthFailureLimitOptions) {
    this.#points = options.perMinute;
    if (options.perMinute <= 0) {
      this.#limiter = null;
      return;
    }
    const settings = {
      points: options.perMinute,
      duration: AUTH_FAILURE_WINDOW_SECONDS,
      keyPrefix: `${options.redisPrefix ?? DEFAULT_AUTH_FAILURES_REDIS_PREFIX}:${options.purpose}`,
    };
    const memory = new RateLimiterMemory(settings);
    if (options.redis === undefined && options.shared !== undefined) {
      this.#shared = { counters: options.shared, prefix: `${settings.keyPrefix}:` };
    }
    this.#limiter =
      options.redis === undefined
        ? memory
        : new RateLimiterRedis({
            ...settings,
            storeClient: options.redis,
            rejectIfRedisNotReady: true,
            insuranceLimiter: memory,
          });
  }

  /** Milliseconds this address must wait before its next attempt; 0 when it may try now. */
  async retryAfterMs(address: string): Promise<number> {
    if (this.#limiter === null) return 0;
    const key = clientKey(address);
    const blockedFor = this.#blocked.getRemainingTTL(key);
    if (blockedFor > 0) return blockedFor;
    const state = await this.#limiter.get(key).catch(() => null);
    if (state === null || state.consumedPoints < this.#points) return 0;
    this.#remember(key, state.msBeforeNext);
    return state.msBeforeNext;
  }

  /**
   * Counts one failed attempt from this address. Resolves with how long the address must wait
   * when this attempt was past the limit (answer 429, not 401), else 0.
   */
  async recordFailure(address: string): Promise<number> {
    if (this.#limiter === null) return 0;
    const key = clientKey(address);
    const state =
      (await this.#countShared(key)) ?? (await this.#limiter.penalty(key).catch(() => null));
    if (state === null || state.consumedPoints < this.#points) return 0;
    this.#remember(key, state.msBeforeNext);
    return state.consumedPoints > this.#points ? state.msBeforeNext : 0;
  }

  /** The failure counted in the database; undefined when there is none, or it failed. */
  async #countShared(
    key: string,
  ): Promise<{ consumedPoints: number; msBeforeNext: number } | undefined> {
    if (this.#shared === undefined) return undefined;
    const { counters, prefix } = this.#shared;
    try {
      const windowMs = AUTH_FAILURE_WINDOW_SECONDS * 1000;
      const { count, resetsAt } = await countShared(counters, `${prefix}${key}`, 1, windowMs);
      return { consumedPoints: count, msBeforeNext: Math.max(0, resetsAt - counters.now()) };
    } catch {
      // The memory limiter counts meanwhile (the insurance, as while Redis is away).
      return undefined;
    }
  }

  #remember(key: string, milliseconds: number): void {
    if (milliseconds > 0) this.#blocked.set(key, true, { ttl: milliseconds });
  }
}

/** Seconds for Retry-After: whole seconds, at least one. */
export function retryAfterSeconds(milliseconds: number): number {
  return Math.max(1, Math.ceil(milliseconds / 1000));
}
