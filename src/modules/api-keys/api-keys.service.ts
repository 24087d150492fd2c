import { createHash, randomBytes } from 'node:crypto';
import { type ChangeOrigin, SYSTEM_ORIGIN, apiKeyEvent } from '../changes.js';
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../../clock.js';
import { type VersionCondition, anyVersion, updateConditionally } from '../conditional-writes.js';
import { domainError } from '../../domain-error.js';
import { invalid, problem } from '../../problems.js';
import { ROLES, type Role } from '../../roles.js';
import { DuplicateError } from '../../store/errors.js';
import type { ApiKeyFilter, ApiKeyRecord, Store } from '../../store/store.js';
import { type ApiKeyAuthenticator, digestSecret } from './api-key-authenticator.service.js';
import {
  type KeyCaller,
  assertWithinCaller,
  isUnrestricted,
  isVisibleTo,
} from './api-key-grants.js';

export type { KeyCaller } from './api-key-grants.js';

/** The prefix lets secret scanners (GitHub, GitGuardian, trufflehog) recognise a leaked key. */
export const API_KEY_PREFIX = 'tsr_';

export interface NewApiKey {
  name: string;
  roles: readonly Role[];
  applications: readonly string[] | null;
  expiresAt: number | null;
}

export interface IssuedApiKey {
  record: ApiKeyRecord;
  /** The secret. It exists only here: the store keeps its SHA-256 digest. */
  secret: string;
}

/** 256 random bits, base64url, behind the recognisable prefix. */
export function generateSecret(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Strong ETag of a key: keys have no stored version, so it is derived from the representation. */
export function apiKeyVersion(key: ApiKeyRecord): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        key.id,
        key.name,
        key.roles,
        key.applications,
        key.createdAt,
        key.updatedAt,
        key.expiresAt,
        key.lastUsedAt,
        key.previousExpiresAt,
        key.revokedAt,
      ]),
    )
    .digest('base64url')
    .slice(0, 22);
}

const SCAN_PAGE = 500;

/** The id of the key made from IAM_BOOTSTRAP_API_KEY, to retire it when the variable changes. */
const BOOTSTRAP_KEY_SETTING = 'bootstrap-api-key-id';

/** The longest overlap a rotation may give the replaced secret: 7 days. */
export const MAX_ROTATION_OVERLAP_MS = 604_800_000;

/** IAM_BOOTSTRAP_API_KEY names a secret that can no longer be the bootstrap key. */
export class BootstrapKeyRefusedError extends Error {
  override readonly name = 'BootstrapKeyRefusedError';
}

export class ApiKeysService {
  constructor(
    private readonly deps: { store: Store; clock: Clock; authenticator: ApiKeyAuthenticator },
  ) {}

  async createApiKey(
    caller: KeyCaller,
    input: NewApiKey,
    origin: ChangeOrigin,
  ): Promise<IssuedApiKey> {
    const now = this.deps.clock.now();
    if (input.expiresAt !== null && input.expiresAt <= now) {
      throw invalid([{ pointer: '/expires_at', detail: 'must be in the future' }]);
    }
    assertWithinCaller(caller, input, 'create');
    const secret = generateSecret();
    const record: ApiKeyRecord = {
      ...newKeyRecord(input.name, digestSecret(secret), now),
      roles: [...input.roles],
      applications: input.applications === null ? null : [...input.applications],
      expiresAt: input.expiresAt,
    };
    await this.deps.store.apiKeys.insertApiKey(record, [
      apiKeyEvent('api_key.created', origin, now, null, record),
    ]);
    this.deps.authenticator.forgetDigest(record.secretDigest);
    return { record, secret };
  }

  /** Up to `limit` keys after the given id, in id (creation) order, that the caller may see. */
  async listApiKeys(
    caller: KeyCaller,
    filter: ApiKeyFilter,
    after: string | null,
    limit: number,
  ): Promise<ApiKeyRecord[]> {
    const found: ApiKeyRecord[] = [];
    for await (const key of this.visibleKeys(caller, filter, after, limit)) {
      found.push(key);
      if (found.length === limit) break;
    }
    return found;
  }

  async countApiKeys(caller: KeyCaller, filter: ApiKeyFilter): Promise<number> {
    if (isUnrestricted(caller)) return this.deps.store.apiKeys.countApiKeys(filter);
    let count = 0;
    for await (const _key of this.visibleKeys(caller, filter, null, SCAN_PAGE)) count++;
    return count;
  }

  /** The keys the caller may see, in id order, read from the store a batch at a time. */
  private async *visibleKeys(
    caller: KeyCaller,
    filter: ApiKeyFilter,
    after: string | null,
    wanted: number,
  ) {
    // An unrestricted caller sees every key, so one batch of the wanted size suffices;
    // a restricted one sees a subset, so scan in larger batches.
    const batchSize = isUnrestricted(caller) ? wanted : SCAN_PAGE;
    let position = after;
    for (;;) {
      const batch = await this.deps.store.apiKeys.listApiKeys(filter, {
        after: position,
        limit: batchSize,
      });
      for (const key of batch) if (isVisibleTo(caller, key)) yield key;
      if (batch.length < batchSize) return;
      position = batch.at(-1)!.id;
    }
  }

  async findApiKey(caller: KeyCaller, id: string): Promise<ApiKeyRecord> {
    const key = await this.findVisible(caller, id);
    if (key === undefined) throw keyNotFound(id);
    return key;
  }

  /**
   * Revokes a key the caller may see and whose powers lie within its own (else 403), keeping
   * its record with revoked_at. Revoking a revoked key changes nothing. Takes effect here at
   * once and on every other instance within a second (their lookups are cached for 500 ms).
   * The last working administrator key (unrestricted, every role) is never revoked
   * (`last_admin_key`): whoever holds it could not create another, and nobody could administer
   * the service any more.
   */
  async revokeApiKey(
    caller: KeyCaller,
    id: string,
    origin: ChangeOrigin,
    condition: VersionCondition = anyVersion,
  ): Promise<ApiKeyRecord> {
    const now = this.deps.clock.now();
    /** The other administrator keys the revocation counts on, when it takes one. */
    let keeping: string[] | undefined;
    const revoked = await updateConditionally({
      load: () => this.findVersioned(caller, id),
      notFound: () => keyNotFound(id),
      condition,
      change: async (current) => {
        assertWithinCaller(caller, current, 'revoke');
        if (current.revokedAt !== null) return null;
        keeping = undefined;
        if (isAdministratorKey(current, now)) {
          keeping = (await this.findAdministratorKeys(now)).filter((other) => other !== id);
          if (keeping.length === 0) throw lastAdministratorKey();
        }
        return { ...current, revokedAt: now, updatedAt: now };
      },
      // With another administrator key to count on, the store revokes only while one of them
      // still works: a concurrent revocation of that one makes this attempt read again.
      save: (next, _expected, current) =>
        this.deps.store.apiKeys.revokeApiKey(
          id,
          next.revokedAt!,
          [apiKeyEvent('api_key.revoked', origin, now, current, next)],
          keeping,
        ),
    });
    this.deps.authenticator.forgetKey(id);
    return withoutVersion(revoked);
  }

  /**
   * Gives a key a new secret; the replaced one keeps working for `previousValidForMs` (0–7
   * days), so the key's users can switch over without an outage. The caller must be allowed
   * to create the key it takes over (roles, restriction, lifetime); a revoked key and the key
   * of IAM_BOOTSTRAP_API_KEY (rotate the variable instead) are refused with 409.
   */
  async rotateApiKey(
    caller: KeyCaller,
    id: string,
    previousValidForMs: number,
    origin: ChangeOrigin,
    condition: VersionCondition = anyVersion,
  ): Promise<IssuedApiKey> {
    const secret = generateSecret();
    const bootstrapKeyId = await this.deps.store.settings.findSetting(BOOTSTRAP_KEY_SETTING);
    const rotated = await updateConditionally({
      load: () => this.findVersioned(caller, id),
      notFound: () => keyNotFound(id),
      condition,
      change: (current) => {
        assertWithinCaller(caller, current, 'rotate');
        if (current.revokedAt !== null) {
          throw problem('conflict', 'This API key is revoked; create a new one instead.');
        }
        if (current.id === bootstrapKeyId) {
          throw problem(
            'conflict',
            'This is the key of IAM_BOOTSTRAP_API_KEY: rotate it by giving the variable a new value.',
          );
        }
        const now = this.deps.clock.now();
        return {
          ...current,
          secretDigest: digestSecret(secret),
          previousSecretDigest: current.secretDigest,
          previousExpiresAt: now + previousValidForMs,
          updatedAt: now,
        };
      },
      save: (next, _expected, current) =>
        this.deps.store.apiKeys.rotateApiKeySecret(
          id,
          {
            expectedDigest: next.previousSecretDigest!,
            secretDigest: next.secretDigest,
            previousExpiresAt: next.previousExpiresAt!,
            updatedAt: next.updatedAt,
          },
          [apiKeyEvent('api_key.rotated', origin, next.updatedAt, current, next)],
        ),
    });
    this.deps.authenticator.forgetKey(id);
    this.deps.authenticator.forgetDigest(rotated.secretDigest);
    return { record: withoutVersion(rotated), secret };
  }

  /**
   * Makes sure a key with exactly this secret and every role exists (IAM_BOOTSTRAP_API_KEY):
   * created when missing, widened to all roles when an upgrade added roles, never duplicated.
   * When the variable names a new secret, the key of the previous one is revoked: rotating
   * the variable rotates the key.
   */
  async ensureBootstrapKey(
    secret: string,
  ): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; revokedPrevious: boolean }> {
    const { store } = this.deps;
    const digest = digestSecret(secret);
    const now = this.deps.clock.now();
    let key = await store.apiKeys.findApiKeyByDigest(digest);
    let outcome: 'created' | 'updated' | 'unchanged' = 'unchanged';
    if (key !== undefined && (key.revokedAt !== null || key.secretDigest !== digest)) {
      // A revoked secret never works again, and a rotated-away one expires: neither can be
      // the key that makes sure someone can always call the API.
      throw new BootstrapKeyRefusedError(
        key.revokedAt !== null
          ? 'IAM_BOOTSTRAP_API_KEY is the secret of a revoked key; give it a new value'
          : 'IAM_BOOTSTRAP_API_KEY is the former secret of a rotated key; give it a new value',
      );
    }
    if (key === undefined) {
      const created = allRolesKey('bootstrap (IAM_BOOTSTRAP_API_KEY)', digest, now);
      try {
        await store.apiKeys.insertApiKey(created, [
          apiKeyEvent('api_key.created', SYSTEM_ORIGIN, now, null, created),
        ]);
        outcome = 'created';
      } catch (error) {
        // Another instance starting at the same moment created it: the digest is unique.
        if (!(error instanceof DuplicateError)) throw error;
      }
      key = await store.apiKeys.findApiKeyByDigest(digest);
      if (key === undefined)
        throw new Error('the bootstrap key vanished right after it was stored');
    } else if (
      !ROLES.every((role) => key!.roles.includes(role)) ||
      key.applications !== null ||
      key.expiresAt !== null
    ) {
      const grants = { roles: [...ROLES], applications: null, updatedAt: now };
      await store.apiKeys.updateApiKeyGrants(key.id, grants, [
        apiKeyEvent('api_key.updated', SYSTEM_ORIGIN, now, key, {
          ...key,
          ...grants,
          expiresAt: null,
        }),
      ]);
      this.deps.authenticator.forgetKey(key.id);
      outcome = 'updated';
    }
    const previous = await store.settings.findSetting(BOOTSTRAP_KEY_SETTING);
    let revokedPrevious = false;
    if (previous !== undefined && previous !== key.id) {
      const before = await store.apiKeys.findApiKey(previous);
      revokedPrevious =
        before !== undefined &&
        (await store.apiKeys.revokeApiKey(previous, now, [
          apiKeyEvent('api_key.revoked', SYSTEM_ORIGIN, now, before, {
            ...before,
            revokedAt: now,
            updatedAt: now,
          }),
        ]));
      this.deps.authenticator.forgetKey(previous);
    }
    if (previous !== key.id) await store.settings.putSetting(BOOTSTRAP_KEY_SETTING, key.id);
    return { outcome, revokedPrevious };
  }

  /** Whether the store holds no key at all, so that a first one must be issued. */
  async needsFirstKey(): Promise<boolean> {
    return (await this.deps.store.apiKeys.countApiKeys({ includeRevoked: true })) === 0;
  }

  /**
   * On a store without any key, stores an all-roles key with this secret and returns it;
   * null when a key exists (another instance issued one first).
   */
  async issueFirstKey(secret: string): Promise<ApiKeyRecord | null> {
    const now = this.deps.clock.now();
    const record = allRolesKey('admin (first start)', digestSecret(secret), now);
    const events = [apiKeyEvent('api_key.created', SYSTEM_ORIGIN, now, null, record)];
    return (await this.deps.store.apiKeys.insertFirstApiKey(record, events)) ? record : null;
  }

  /**
   * The names of the keys among `ids` (revoked ones too; an id of no key is left out): how the
   * console shows who made a change. A name is all it tells, whoever asks.
   */
  async findKeyNames(ids: Iterable<string>): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    for (const id of new Set(ids)) {
      const key = await this.deps.store.apiKeys.findApiKey(id);
      if (key !== undefined) names.set(id, key.name);
    }
    return names;
  }

  /**
   * The ids of the working administrator keys (unrestricted, every role), in id order: when
   * only one is left, revoking it is refused. A scan: keys are few.
   */
  listAdministratorKeyIds(): Promise<string[]> {
    return this.findAdministratorKeys(this.deps.clock.now());
  }

  private async findAdministratorKeys(now: number): Promise<string[]> {
    const found: string[] = [];
    for await (const key of this.visibleKeys(
      'operator',
      { includeRevoked: false },
      null,
      SCAN_PAGE,
    )) {
      if (isAdministratorKey(key, now)) found.push(key.id);
    }
    return found;
  }

  private async findVisible(caller: KeyCaller, id: string): Promise<ApiKeyRecord | undefined> {
    const key = await this.deps.store.apiKeys.findApiKey(id);
    // A key outside the caller's restriction is reported missing: its existence is not theirs to learn.
    return key !== undefined && isVisibleTo(caller, key) ? key : undefined;
  }

  private async findVersioned(caller: KeyCaller, id: string) {
    const key = await this.findVisible(caller, id);
    return key && { ...key, etag: apiKeyVersion(key) };
  }
}

function withoutVersion(key: ApiKeyRecord & { etag: string }): ApiKeyRecord {
  const { etag: _etag, ...record } = key;
  return record;
}

/** A new, unrestricted, never-expiring key record with no grants yet. */
function newKeyRecord(name: string, secretDigest: string, now: number): ApiKeyRecord {
  return {
    id: uuidv7(),
    name,
    secretDigest,
    roles: [],
    applications: null,
    createdAt: now,
    updatedAt: now,
    expiresAt: null,
    lastUsedAt: null,
    previousSecretDigest: null,
    previousExpiresAt: null,
    revokedAt: null,
  };
}

/** An unrestricted, never-expiring key with every role: the operator's keys. */
function allRolesKey(name: string, secretDigest: string, now: number): ApiKeyRecord {
  return { ...newKeyRecord(name, secretDigest, now), roles: [...ROLES] };
}

/**
 * An administrator key: it works (not revoked, not expired), is restricted to no application
 * and holds every role, so it can create any other key.
 */
export function isAdministratorKey(key: ApiKeyRecord, now: number): boolean {
  return (
    key.revokedAt === null &&
    (key.expiresAt === null || key.expiresAt > now) &&
    key.applications === null &&
    ROLES.every((role) => key.roles.includes(role))
  );
}

function lastAdministratorKey() {
  return domainError(
    'last_admin_key',
    'This is the last working API key with every role and no application restriction: revoking it would leave nobody able to administer Tessera. Create another such key first, then revoke this one.',
  );
}

function keyNotFound(id: string) {
  return problem('not-found', `No API key with id "${id}".`);
}
