import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../../clock.js';
import { type VersionCondition, anyVersion, deleteConditionally } from '../conditional-writes.js';
import { invalid, problem } from '../../problems.js';
import { ROLES, type Role } from '../../roles.js';
import { DuplicateError } from '../../store/errors.js';
import type { ApiKeyRecord, Store } from '../../store/store.js';
import { type ApiKeyAuthenticator, digestSecret } from './api-key-authenticator.js';

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

/** The caller acting on keys: an authenticated API key, or the operator (CLI, start-up). */
export type KeyCaller = ApiKeyRecord | 'operator';

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
      ]),
    )
    .digest('base64url')
    .slice(0, 22);
}

function isUnrestricted(caller: KeyCaller): boolean {
  return caller === 'operator' || caller.applications === null;
}

/** Whether `caller` may see or revoke `key`: its restriction must lie within the caller's. */
function isVisibleTo(caller: KeyCaller, key: ApiKeyRecord): boolean {
  if (caller === 'operator' || caller.applications === null) return true;
  const allowed = caller.applications;
  return key.applications !== null && key.applications.every((id) => allowed.includes(id));
}

const SCAN_PAGE = 500;

/** The id of the key made from IAM_BOOTSTRAP_API_KEY, to retire it when the variable changes. */
const BOOTSTRAP_KEY_SETTING = 'bootstrap-api-key-id';

export class ApiKeysService {
  constructor(
    private readonly deps: { store: Store; clock: Clock; authenticator: ApiKeyAuthenticator },
  ) {}

  async createApiKey(caller: KeyCaller, input: NewApiKey): Promise<IssuedApiKey> {
    const now = this.deps.clock.now();
    if (input.expiresAt !== null && input.expiresAt <= now) {
      throw invalid([{ pointer: '/expires_at', detail: 'must be in the future' }]);
    }
    if (caller !== 'operator') assertNoEscalation(caller, input);
    const secret = generateSecret();
    const record: ApiKeyRecord = {
      id: uuidv7(),
      name: input.name,
      secretDigest: digestSecret(secret),
      roles: [...input.roles],
      applications: input.applications === null ? null : [...input.applications],
      createdAt: now,
      updatedAt: now,
      expiresAt: input.expiresAt,
      lastUsedAt: null,
    };
    await this.deps.store.apiKeys.insertApiKey(record);
    this.deps.authenticator.forgetDigest(record.secretDigest);
    return { record, secret };
  }

  /** Up to `limit` keys after the given id, in id (creation) order, that the caller may see. */
  async listApiKeys(
    caller: KeyCaller,
    after: string | null,
    limit: number,
  ): Promise<ApiKeyRecord[]> {
    const found: ApiKeyRecord[] = [];
    for await (const key of this.visibleKeys(caller, after, limit)) {
      found.push(key);
      if (found.length === limit) break;
    }
    return found;
  }

  async countApiKeys(caller: KeyCaller): Promise<number> {
    if (isUnrestricted(caller)) return this.deps.store.apiKeys.countApiKeys();
    let count = 0;
    for await (const _key of this.visibleKeys(caller, null, SCAN_PAGE)) count++;
    return count;
  }

  /** The keys the caller may see, in id order, read from the store a batch at a time. */
  private async *visibleKeys(caller: KeyCaller, after: string | null, wanted: number) {
    // An unrestricted caller sees every key, so one batch of the wanted size suffices;
    // a restricted one sees a subset, so scan in larger batches.
    const batchSize = isUnrestricted(caller) ? wanted : SCAN_PAGE;
    let position = after;
    for (;;) {
      const batch = await this.deps.store.apiKeys.listApiKeys({
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

  async revokeApiKey(
    caller: KeyCaller,
    id: string,
    condition: VersionCondition = anyVersion,
  ): Promise<void> {
    await deleteConditionally({
      load: async () => {
        const key = await this.findVisible(caller, id);
        return key && { ...key, etag: apiKeyVersion(key) };
      },
      notFound: () => keyNotFound(id),
      condition,
      remove: () => this.deps.store.apiKeys.deleteApiKey(id),
    });
    this.deps.authenticator.forgetKey(id);
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
    if (key === undefined) {
      const created = allRolesKey('bootstrap (IAM_BOOTSTRAP_API_KEY)', digest, now);
      try {
        await store.apiKeys.insertApiKey(created);
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
      await store.apiKeys.updateApiKeyGrants(key.id, {
        roles: [...ROLES],
        applications: null,
        updatedAt: now,
      });
      this.deps.authenticator.forgetKey(key.id);
      outcome = 'updated';
    }
    const previous = await store.settings.findSetting(BOOTSTRAP_KEY_SETTING);
    let revokedPrevious = false;
    if (previous !== undefined && previous !== key.id) {
      revokedPrevious = await store.apiKeys.deleteApiKey(previous);
      this.deps.authenticator.forgetKey(previous);
    }
    if (previous !== key.id) await store.settings.putSetting(BOOTSTRAP_KEY_SETTING, key.id);
    return { outcome, revokedPrevious };
  }

  /** Whether the store holds no key at all, so that a first one must be issued. */
  async needsFirstKey(): Promise<boolean> {
    return (await this.deps.store.apiKeys.countApiKeys()) === 0;
  }

  /**
   * On a store without any key, stores an all-roles key with this secret and returns it;
   * null when a key exists (another instance issued one first).
   */
  async issueFirstKey(secret: string): Promise<ApiKeyRecord | null> {
    const record = allRolesKey('admin (first start)', digestSecret(secret), this.deps.clock.now());
    return (await this.deps.store.apiKeys.insertFirstApiKey(record)) ? record : null;
  }

  private async findVisible(caller: KeyCaller, id: string): Promise<ApiKeyRecord | undefined> {
    const key = await this.deps.store.apiKeys.findApiKey(id);
    // A key outside the caller's restriction is reported missing: its existence is not theirs to learn.
    return key !== undefined && isVisibleTo(caller, key) ? key : undefined;
  }
}

/** An unrestricted, never-expiring key with every role: the operator's keys. */
function allRolesKey(name: string, secretDigest: string, now: number): ApiKeyRecord {
  return {
    id: uuidv7(),
    name,
    secretDigest,
    roles: [...ROLES],
    applications: null,
    createdAt: now,
    updatedAt: now,
    expiresAt: null,
    lastUsedAt: null,
  };
}

function keyNotFound(id: string) {
  return problem('not-found', `No API key with id "${id}".`);
}

/** A key may only mint keys with a subset of its own powers: roles, applications and lifetime. */
function assertNoEscalation(caller: ApiKeyRecord, input: NewApiKey): void {
  const extraRoles = input.roles.filter((role) => !caller.roles.includes(role));
  if (extraRoles.length > 0) {
    throw problem(
      'forbidden',
      `This API key cannot grant roles it does not hold: ${extraRoles.join(', ')}.`,
    );
  }
  if (caller.applications !== null) {
    const allowed = caller.applications;
    if (input.applications === null) {
      throw problem(
        'forbidden',
        'This API key is restricted to some applications; a key it creates must be restricted to them too.',
      );
    }
    const outside = input.applications.filter((id) => !allowed.includes(id));
    if (outside.length > 0) {
      throw problem('forbidden', `This API key cannot grant access to: ${outside.join(', ')}.`);
    }
  }
  if (
    caller.expiresAt !== null &&
    (input.expiresAt === null || input.expiresAt > caller.expiresAt)
  ) {
    throw problem(
      'forbidden',
      `This API key expires at ${new Date(caller.expiresAt).toISOString()}; a key it creates cannot outlive it.`,
    );
  }
}
