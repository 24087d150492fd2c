import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../clock.js';
import type { ApiKeyRecord, Store } from '../../store/store.js';

export interface AuthenticatorOptions {
  /**
   * How long a looked-up key (or its absence) is trusted. Bounded by the promise that a
   * revocation takes effect on every instance within one second.
   */
  cacheTtlMs?: number;
  maxCachedKeys?: number;
  /** last_used_at is written at most this often per key. */
  touchIntervalMs?: number;
  onTouchFailed?: (error: unknown) => void;
}

interface Entry {
  key: ApiKeyRecord | null;
}

export function digestSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * Finds the API key behind a secret. Keys are looked up by SHA-256 digest and cached
 * briefly, so a busy caller costs one query per key per cache period, not one per request;
 * concurrent lookups of one digest share a single query.
 */
export class ApiKeyAuthenticator {
  readonly #cache: LRUCache<string, Entry>;
  readonly #touchIntervalMs: number;

  constructor(
    private readonly deps: { store: Store; clock: Clock },
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
    this.#cache = new LRUCache<string, Entry>({
      max: options.maxCachedKeys ?? 10_000,
      ttl: options.cacheTtlMs ?? 500,
      perf: { now: () => deps.clock.now() },
      // Ask the clock on every check: lru-cache otherwise reuses a reading until a 1 ms
      // timer fires, which an injected clock never advances.
      ttlResolution: 0,
      fetchMethod: async (digest) => ({
        key: (await deps.store.apiKeys.findApiKeyByDigest(digest)) ?? null,
      }),
    });
  }

  /** The live (known, unexpired) key for this secret, or undefined. */
  async authenticate(secret: string): Promise<ApiKeyRecord | undefined> {
    const entry = await this.#cache.fetch(digestSecret(secret));
    const key = entry?.key;
    if (key === null || key === undefined) return undefined;
    const now = this.deps.clock.now();
    if (key.expiresAt !== null && key.expiresAt <= now) return undefined;
    this.#recordUse(key, now);
    return key;
  }

  /** Drops what this instance remembers of a key, e.g. right after revoking it here. */
  forgetKey(id: string): void {
    for (const [digest, entry] of this.#cache.entries()) {
      if (entry.key?.id === id) this.#cache.delete(digest);
    }
  }

  /** Drops a remembered absence, e.g. right after creating the key with this digest. */
  forgetDigest(digest: string): void {
    this.#cache.delete(digest);
  }

  #recordUse(key: ApiKeyRecord, now: number): void {
    if (key.lastUsedAt !== null && now - key.lastUsedAt < this.#touchIntervalMs) return;
    key.lastUsedAt = now;
    this.deps.store.apiKeys.touchApiKey(key.id, now).catch((error: unknown) => {
      this.options.onTouchFailed?.(error);
    });
  }
}
