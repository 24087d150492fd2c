// Sessions of the admin console. An operator signs in with an API key; the key is exchanged
// for a random session id (the browser's cookie) and forgotten: the store keeps the digest of
// the session id, the key's id and the digest of the secret signed in with, never a secret.
// Every request acts with the key's roles and restriction as they are now, so revoking the
// key, or its secret expiring, ends its sessions. An operator who signs in through the
// organisation's OpenID provider (console-oidc.service.ts) gets a session that holds who they
// are and the roles and applications the provider's claims gave them, for its lifetime.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type {
  ApiKeyRecord,
  ConsoleOperator,
  ConsoleSessionRecord,
  Store,
} from '../../store/store.js';
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
  /**
   * The session's API key, as it is now; for an operator's session, their powers in the same
   * shape (operatorCaller), so that every page and service treats both alike.
   */
  key: ApiKeyRecord;
  /** The operator signed in through the OpenID provider, or null (an API key's session). */
  operator: ConsoleOperator | null;
}

/** The prefix of the caller id an operator's session acts with (never an API key's id, a UUID). */
export const OPERATOR_CALLER_PREFIX = 'operator:';

/**
 * An operator's powers as the services take a caller's: their roles and applications, no
 * expiry of their own (what they create may outlive the session, as an administrator's key
 * may), and no secret.
 */
export function operatorCaller(
  record: ConsoleSessionRecord,
  operator: ConsoleOperator,
): ApiKeyRecord {
  return {
    id: `${OPERATOR_CALLER_PREFIX}${operator.subject}`,
    name: operator.name,
    secretDigest: '',
    roles: operator.roles,
    applications: operator.applications,
    createdAt: record.createdAt,
    updatedAt: record.createdAt,
    expiresAt: null,
    lastUsedAt: record.lastSeenAt,
    previousSecretDigest: null,
    previousExpiresAt: null,
    revokedAt: null,
  };
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
    const { sessionId, record } = await this.#startSession({
      apiKeyId: key.id,
      keyDigest: digestSecret(secret),
      operator: null,
    });
    return { ok: true, sessionId, session: { record, key, operator: null } };
  }

  /** Opens a session for an operator the OpenID provider vouched for (console-oidc.service.ts). */
  async signInOperator(
    operator: ConsoleOperator,
  ): Promise<{ sessionId: string; session: ConsoleSession }> {
    const { sessionId, record } = await this.#startSession({
      apiKeyId: null,
      keyDigest: null,
      operator,
    });
    return { sessionId, session: { record, key: operatorCaller(record, operator), operator } };
  }

  async #startSession(
    principal: Pick<ConsoleSessionRecord, 'apiKeyId' | 'keyDigest' | 'operator'>,
  ): Promise<{ sessionId: string; record: ConsoleSessionRecord }> {
    const now = this.deps.clock.now();
    const sessionId = randomBytes(32).toString('base64url');
    const record: ConsoleSessionRecord = {
      idDigest: digest(sessionId),
      ...principal,
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
    return { sessionId, record };
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
    const key = await this.#callerOf(record, now);
    if (
      now - record.lastSeenAt >= this.#limits.idleTimeoutMs ||
      now - record.createdAt >= this.#limits.absoluteTimeoutMs ||
      key === undefined
    ) {
      await this.deps.store.consoleSessions.deleteConsoleSession(idDigest);
      return null;
    }
    if (options.touch && now - record.lastSeenAt >= TOUCH_INTERVAL_MS) {
      await this.deps.store.consoleSessions.touchConsoleSession(idDigest, now);
      record.lastSeenAt = now;
    }
    return { record, key, operator: record.operator };
  }

  /** Whom a session acts as now: its operator, or its key while the secret still opens it. */
  async #callerOf(record: ConsoleSessionRecord, now: number): Promise<ApiKeyRecord | undefined> {
    if (record.operator !== null) return operatorCaller(record, record.operator);
    if (record.apiKeyId === null || record.keyDigest === null) return undefined;
    const key = await this.deps.store.apiKeys.findApiKey(record.apiKeyId);
    return key !== undefined && secretStillWorks(key, record.keyDigest, now) ? key : undefined;
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
