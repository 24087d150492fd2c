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
  /** Digests found to be no key; kept apart so a flood of made-up keys cannot evict real ones. */
  maxCachedMisses?: number;
  /** last_used_at is written at most this often per key. */
  touchIntervalMs?: number;
  onTouchFailed?: (error: unknown) => void;
}

export function digestSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A lookup that raced this many revocations in a row is answered without being cached. */
const MAX_LOOKUP_ROUNDS = 3;

/**
 * Finds the API key behind a secret. Keys are looked up by SHA-256 digest and cached
 * briefly, so a busy caller costs one query per key per cache period, not one per request;
 * concurrent lookups of one digest share a single query.
 */
/** A secret's key, or why it has none: unknown, revoked, expired, or an old secret past its overlap. */
export type KeyVerdict =
  | { ok: true; key: ApiKeyRecord }
  | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'superseded' };

export class ApiKeyAuthenticator {
  readonly #known: LRUCache<string, ApiKeyRecord>;
  readonly #unknown: LRUCache<string, true>;
  readonly #inFlight = new Map<string, Promise<ApiKeyRecord | undefined>>();
  /** Bumped by every forget: a lookup that started before it may have read a revoked key. */
  #generation = 0;
  readonly #touchIntervalMs: number;

  constructor(
    private readonly deps: { store: Store; clock: Clock },
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
    const cacheOptions = {
      ttl: options.cacheTtlMs ?? 500,
      perf: { now: () => deps.clock.now() },
      // Ask the clock on every check: lru-cache otherwise reuses a reading until a 1 ms
      // timer fires, which an injected clock never advances.
      ttlResolution: 0,
    };
    this.#known = new LRUCache({ ...cacheOptions, max: options.maxCachedKeys ?? 10_000 });
    this.#unknown = new LRUCache({ ...cacheOptions, max: options.maxCachedMisses ?? 1_000 });
  }

  /**
   * The live key for this secret, or undefined: known, not revoked, not expired, and the
   * secret is its current one, or the one a rotation replaced while its overlap lasts.
   */
  async authenticate(secret: string): Promise<ApiKeyRecord | undefined> {
    const check = await this.verify(secret);
    return check.ok ? check.key : undefined;
  }

  /** As authenticate, saying why a secret is refused (for metrics, never for the caller). */
  async verify(secret: string): Promise<KeyVerdict> {
    const digest = digestSecret(secret);
    const key = this.#known.get(digest) ?? (await this.#lookUp(digest));
    if (key === undefined) return { ok: false, reason: 'unknown' };
    if (key.revokedAt !== null) return { ok: false, reason: 'revoked' };
    const now = this.deps.clock.now();
    if (key.expiresAt !== null && key.expiresAt <= now) return { ok: false, reason: 'expired' };
    if (digest !== key.secretDigest && !(key.previousExpiresAt! > now)) {
      return { ok: false, reason: 'superseded' };
    }
    this.#recordUse(key, now);
    return { ok: true, key };
  }

  /** Drops what this instance remembers of a key, e.g. right after revoking it here. */
  forgetKey(id: string): void {
    this.#generation++;
    for (const [digest, key] of this.#known.entries()) {
      if (key.id === id) this.#known.delete(digest);
    }
  }

  /** Drops a remembered absence, e.g. right after creating the key with this digest. */
  forgetDigest(digest: string): void {
    this.#generation++;
    this.#unknown.delete(digest);
  }

  #lookUp(digest: string): Promise<ApiKeyRecord | undefined> {
    if (this.#unknown.has(digest)) return Promise.resolve(undefined);
    let pending = this.#inFlight.get(digest);
    if (pending === undefined) {
      pending = this.#load(digest).finally(() => this.#inFlight.delete(digest));
      this.#inFlight.set(digest, pending);
    }
    return pending;
  }

  async #load(digest: string): Promise<ApiKeyRecord | undefined> {
    for (let round = 1; ; round++) {
      const generation = this.#generation;
      const key = await this.deps.store.apiKeys.findApiKeyByDigest(digest);
      if (generation !== this.#generation) {
        // A key was revoked or created meanwhile: this read may predate it. Read again.
        if (round < MAX_LOOKUP_ROUNDS) continue;
        return key;
      }
      if (key === undefined) this.#unknown.set(digest, true);
      else this.#known.set(digest, key);
      return key;
    }
  }

  #recordUse(key: ApiKeyRecord, now: number): void {
    if (key.lastUsedAt !== null && now - key.lastUsedAt < this.#touchIntervalMs) return;
    key.lastUsedAt = now;
    this.deps.store.apiKeys.touchApiKey(key.id, now).catch((error: unknown) => {
      this.options.onTouchFailed?.(error);
    });
  }
}
