// Sessions of the admin console. An operator signs in with an API key; the key is exchanged
// for a random session id (the browser's cookie) and forgotten: the store keeps the digest of
// the session id, the key's id and the digest of the secret signed in with, never a secret.
// Every request acts with the key's roles and restriction as they are now, so revoking the
// key, or its secret expiring, ends its sessions.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { ApiKeyRecord, ConsoleSessionRecord, Store } from '../../store/store.js';
import {
  type ApiKeyAuthenticator,
  digestSecret,
} from '../api-keys/api-key-authenticator.service.js';

export interface ConsoleSessionLimits {
  /** A session unused this long ends. */
  idleTimeoutMs: number;
  /** A session ends this long after sign-in, however busy. */
  absoluteTimeoutMs: number;
}

export const DEFAULT_CONSOLE_SESSION_LIMITS: ConsoleSessionLimits = {
  idleTimeoutMs: 30 * 60_000,
  absoluteTimeoutMs: 8 * 3_600_000,
};

/** last_seen_at is written at most this often per session (idle time is counted in minutes). */
const TOUCH_INTERVAL_MS = 15_000;

export interface ConsoleSession {
  record: ConsoleSessionRecord;
  /** The session's API key, as it is now. */
  key: ApiKeyRecord;
}

export type SignIn =
  { ok: true; sessionId: string; session: ConsoleSession } | { ok: false; reason: 'unknown-key' };

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export class ConsoleSessions {
  readonly #limits: ConsoleSessionLimits;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      authenticator: ApiKeyAuthenticator;
      limits?: ConsoleSessionLimits;
    },
  ) {
    this.#limits = deps.limits ?? DEFAULT_CONSOLE_SESSION_LIMITS;
  }

  get limits(): ConsoleSessionLimits {
    return this.#limits;
  }

  /** The clock sessions are timed by (the pages show times by it too). */
  get clock(): Clock {
    return this.deps.clock;
  }

  /** Exchanges a working API key for a new session; the secret is not kept. */
  async signIn(secret: string): Promise<SignIn> {
    const key = await this.deps.authenticator.authenticate(secret);
    if (key === undefined) return { ok: false, reason: 'unknown-key' };
    const now = this.deps.clock.now();
    const sessionId = randomBytes(32).toString('base64url');
    const record: ConsoleSessionRecord = {
      idDigest: digest(sessionId),
      apiKeyId: key.id,
      keyDigest: digestSecret(secret),
      csrfToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      lastSeenAt: now,
    };
    await this.deps.store.consoleSessions.insertConsoleSession(record);
    // Sessions that ended without a sign-out are removed now and then, here.
    void this.deps.store.consoleSessions
      .deleteExpiredConsoleSessions(
        now - this.#limits.idleTimeoutMs,
        now - this.#limits.absoluteTimeoutMs,
      )
      .catch(() => {});
    return { ok: true, sessionId, session: { record, key } };
  }

  /**
   * The live session behind a cookie's id, or null: it exists, is within its idle and absolute
   * limits, and its key still works with the secret it signed in with. An ended one is deleted.
   */
  async findSession(
    sessionId: string,
    options: { touch: boolean } = { touch: true },
  ): Promise<ConsoleSession | null> {
    const idDigest = digest(sessionId);
    const record = await this.deps.store.consoleSessions.findConsoleSession(idDigest);
    if (record === undefined) return null;
    const now = this.deps.clock.now();
    const key = await this.deps.store.apiKeys.findApiKey(record.apiKeyId);
    if (
      now - record.lastSeenAt >= this.#limits.idleTimeoutMs ||
      now - record.createdAt >= this.#limits.absoluteTimeoutMs ||
      key === undefined ||
      !secretStillWorks(key, record.keyDigest, now)
    ) {
      await this.deps.store.consoleSessions.deleteConsoleSession(idDigest);
      return null;
    }
    if (options.touch && now - record.lastSeenAt >= TOUCH_INTERVAL_MS) {
      await this.deps.store.consoleSessions.touchConsoleSession(idDigest, now);
      record.lastSeenAt = now;
    }
    return { record, key };
  }

  /** Ends the session behind a cookie's id (nothing happens for an unknown one). */
  async signOut(sessionId: string): Promise<void> {
    await this.deps.store.consoleSessions.deleteConsoleSession(digest(sessionId));
  }
}

/** Whether the secret signed in with (by digest) still opens the key now. */
function secretStillWorks(key: ApiKeyRecord, keyDigest: string, now: number): boolean {
  if (key.revokedAt !== null) return false;
  if (key.expiresAt !== null && key.expiresAt <= now) return false;
  if (keyDigest === key.secretDigest) return true;
  return keyDigest === key.previousSecretDigest && key.previousExpiresAt! > now;
}

/** Compares a request's CSRF token with the session's in constant time. */
export function csrfTokenMatches(session: ConsoleSessionRecord, sent: string | undefined): boolean {
  if (sent === undefined) return false;
  const expected = Buffer.from(session.csrfToken);
  const given = Buffer.from(sent);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
