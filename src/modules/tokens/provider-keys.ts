// Where an outside provider's keys come from: its JWKS, fetched through the SSRF fence with
// jose's remote key set (cached, refetched on an unknown kid after a cooldown), one per
// jwks_uri. During an outage the keys fetched before still verify, and a failed fetch is
// remembered for a while so a burst of exchanges does not become a burst of fetches.

import { LRUCache } from 'lru-cache';
import {
  type CryptoKey,
  type JWTVerifyGetKey,
  type RemoteJWKSet,
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
} from 'jose';
import type { Clock } from '../../clock.js';
import {
  type OutboundPolicy,
  OutboundRefusedError,
  OutboundUnavailableError,
  OUTBOUND_TIMEOUT_MS,
  fencedFetch,
} from './outbound-fetch.js';

/**
 * After a failed JWKS fetch, the same jwks_uri is not fetched again for this long: a burst of
 * exchanges during a provider outage makes one fetch, not one each (for at least 5 s).
 */
export const JWKS_FAILURE_MEMORY_MS = 5_000;

/** The provider could not be reached (down, timed out, not a JWKS): worth retrying later. */
export function isUnavailable(error: unknown): boolean {
  return (
    error instanceof OutboundUnavailableError ||
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    // jose's "Expected 200 OK" and "Failed to parse" are plain JOSEErrors.
    (error instanceof errors.JOSEError && error.code === 'ERR_JOSE_GENERIC')
  );
}

/** A failure of the fetch itself (unreachable, refused by the fence), not of a key. */
function isFetchFailure(error: unknown): boolean {
  return isUnavailable(error) || error instanceof OutboundRefusedError;
}

export class ProviderKeys {
  /** One remote key set per jwks_uri. */
  readonly #keySets = new LRUCache<string, RemoteJWKSet>({ max: 1000 });
  /** jwks_uri → the failed fetch and when it may be tried again. */
  readonly #failedFetches = new LRUCache<string, { error: unknown; retryAt: number }>({
    max: 1000,
  });

  constructor(
    private readonly deps: {
      clock: Clock;
      policy: OutboundPolicy;
      /** Minimum time between two fetches caused by unknown kids (jose's cooldownDuration). */
      cooldownMs?: number;
      /** How long fetched keys are used before they are fetched again (jose's cacheMaxAge). */
      cacheMaxAgeMs?: number;
      /** Told of each JWKS fetch and whether it brought a key set (metrics). */
      onJwksFetch?: (outcome: 'ok' | 'failed') => void;
    },
  ) {}

  /**
   * The key resolver for one jwks_uri: the remote key set, except that when the provider
   * cannot be reached the keys fetched before are used (an outage at the provider does not log
   * anyone out while their key is known), and that after a failed fetch none is tried for
   * JWKS_FAILURE_MEMORY_MS.
   */
  resolverFor(url: URL): JWTVerifyGetKey {
    const remote = this.#keySet(url);
    const memory = this.#failedFetches;
    const clock = this.deps.clock;
    return async function resolveKey(header, token): Promise<CryptoKey> {
      const remembered = memory.get(url.href);
      let failure =
        remembered !== undefined && remembered.retryAt > clock.now() ? remembered.error : undefined;
      if (failure === undefined) {
        try {
          return await remote(header, token);
        } catch (error) {
          if (!isFetchFailure(error)) throw error;
          memory.set(url.href, { error, retryAt: clock.now() + JWKS_FAILURE_MEMORY_MS });
          failure = error;
        }
      }
      const cached = remote.jwks();
      if (!isUnavailable(failure) || cached === undefined) throw failure;
      try {
        return await createLocalJWKSet(cached)(header, token);
      } catch {
        throw failure; // no cached key fits: still unavailable, not a bad token
      }
    };
  }

  /** The fetch, reporting each attempt's outcome: a 2xx answer is "ok", anything else "failed". */
  #countedFetch(fetch: ReturnType<typeof fencedFetch>): ReturnType<typeof fencedFetch> {
    const report = this.deps.onJwksFetch;
    if (report === undefined) return fetch;
    return async function fetchCounted(...args: Parameters<typeof fetch>) {
      try {
        const response = await fetch(...args);
        report(response.ok ? 'ok' : 'failed');
        return response;
      } catch (error) {
        report('failed');
        throw error;
      }
    };
  }

  #keySet(url: URL): RemoteJWKSet {
    let keySet = this.#keySets.get(url.href);
    if (keySet === undefined) {
      keySet = createRemoteJWKSet(url, {
        timeoutDuration: OUTBOUND_TIMEOUT_MS,
        cooldownDuration: this.deps.cooldownMs ?? 30_000,
        cacheMaxAge: this.deps.cacheMaxAgeMs ?? 10 * 60_000,
        [customFetch]: this.#countedFetch(fencedFetch(this.deps.policy)),
      });
      this.#keySets.set(url.href, keySet);
    }
    return keySet;
  }
}
