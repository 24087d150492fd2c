import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import {
  DomainError,
  type FieldError,
  domainError,
  invalidFields,
  valueOrThrow,
} from '../../domain-error.js';
import {
  KeyedQueue,
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import { DuplicateError, MissingParentError, USER_NAME_INDEX } from '../../store/errors.js';
import type {
  ApplicationRecord,
  NewEvent,
  Store,
  UserChange,
  UserFilter,
  UserIdentity,
  UserPageText,
  UserPosition,
  UserQuery,
  UserQueryPage,
  TokenUserRecord,
  UserRecord,
} from '../../store/store.js';
import { applicationNotFound } from '../applications/applications.service.js';
import { type ChangeOrigin, userEvents } from '../changes.js';
import {
  type UserFields,
  type UserInput,
  type UserProfile,
  type Unchecked,
  changeErrors,
  checkUser,
  normalizeUser,
} from './users.domain.js';

/** A user named by its immutable id, or by its identity (provider, identifier). */
export type UserRef = { clientId: string; id: string } | UserIdentity;

/**
 * What a write may change on a user: any field but its provider (a changed identifier renames
 * it). The values are checked as the change is applied, so outside data may come as it is.
 */
export type UserChanges = Unchecked<Omit<UserFields, 'provider'>>;

/** A JSON Merge Patch of a user (RFC 7396): null resets avatar (to null) and active (to true). */
export interface UserPatch {
  name?: string;
  avatar?: string | null;
  email?: string;
  locale?: string;
  roles?: string[];
  scopes?: string[];
  active?: boolean | null;
}

/** A user a line of an import names, checked by checkUser, with what the line says of it. */
export interface ImportedUser {
  fields: UserFields;
  /** The id to keep (a Tessera export's), or null. */
  id: string | null;
  /** Whether the line says `active` / `external_id`: an update leaves out what it does not say. */
  sets: { active: boolean; externalId: boolean };
}

/** What an import does with one user, in the order the users were given. */
export type ImportOutcome =
  | { kind: 'created' | 'updated' | 'unchanged' | 'skipped' }
  | { kind: 'invalid'; errors: FieldError[] };

/** The writes of a batch of an import, planned against the stored users; nothing written yet. */
export interface ImportPlan {
  outcomes: ImportOutcome[];
  inserts: UserRecord[];
  changes: UserChange[];
  events: NewEvent[];
}

/** The profile a first login registers a user with (from the outside token's claims). */
export type FirstLoginProfile = Pick<UserInput, 'name' | 'email' | 'locale' | 'avatar'>;

/**
 * Users of applications. Every write is checked against the rules of a user (users.domain.ts)
 * and goes through one family of entry points, which take a UserRef: writes to one user queue
 * behind each other under its id, whichever way the caller named it.
 */
export class UsersService {
  /** Writes to one user run one after another (see KeyedQueue), keyed by its id. */
  readonly #writes = new KeyedQueue();

  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /**
   * Enrols a user with a new id; `invalid` for a rule it breaks, `conflict` for a taken
   * identity (or, under the SCIM provider, a userName taken in another case), `not_found`
   * without the application.
   */
  async createUser(
    clientId: string,
    input: Unchecked<UserInput>,
    origin: ChangeOrigin,
    eventType = 'user.created',
  ): Promise<UserRecord> {
    return this.#insert(clientId, valueOrThrow(checkUser(input)), origin, eventType);
  }

  /**
   * First login registers the user (an outside token in external mode): no roles or scopes,
   * event user.registered. A racing first login of the same identity finds the user it made.
   */
  async registerOnFirstLogin(
    identity: UserIdentity,
    profile: FirstLoginProfile,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    const input: UserInput = {
      provider: identity.provider,
      identifier: identity.identifier,
      ...profile,
      roles: [],
      scopes: [],
      active: true,
    };
    try {
      return await this.createUser(identity.clientId, input, origin, 'user.registered');
    } catch (error) {
      if (isConflict(error, 'user_identity')) {
        const user = await this.lookUpUser(identity);
        if (user !== undefined) return user;
      }
      throw error;
    }
  }

  /** The user; `not_found` when there is none. */
  async findUser(ref: UserRef): Promise<UserRecord> {
    const user = await this.lookUpUser(ref);
    if (user === undefined) throw userNotFound(ref);
    return user;
  }

  /**
   * The application and what an access token reads of one of its users, read together (one
   * round trip where findUser after the application's read takes two); `not_found` for either,
   * the application's first. The application's record is shared between calls (frozen).
   */
  async findUserWithApplication(
    identity: UserIdentity,
  ): Promise<{ application: ApplicationRecord; user: TokenUserRecord }> {
    const found = await this.deps.store.users.findApplicationWithTokenUser(identity);
    if (found === undefined) throw applicationNotFound(identity.clientId);
    if (found.user === undefined) throw userNotFound(identity);
    return { application: found.application, user: found.user };
  }

  /**
   * As findUserWithApplication, the user undefined when there is none; `not_found` without the
   * application.
   */
  async lookUpUserWithApplication(
    identity: UserIdentity,
  ): Promise<{ application: ApplicationRecord; user: TokenUserRecord | undefined }> {
    const found = await this.deps.store.users.findApplicationWithTokenUser(identity);
    if (found === undefined) throw applicationNotFound(identity.clientId);
    return found;
  }

  /** The user, or undefined. */
  lookUpUser(ref: UserRef): Promise<UserRecord | undefined> {
    return 'id' in ref
      ? this.deps.store.users.findUserById(ref.clientId, ref.id)
      : this.deps.store.users.findUser(ref);
  }

  /** Users matching the query, in identifier byte order (no check that the application exists). */
  queryUsers(query: UserQuery, page: UserQueryPage): Promise<UserRecord[]> {
    return this.deps.store.users.queryUsers(query, page);
  }

  countQueriedUsers(query: UserQuery): Promise<number> {
    return this.deps.store.users.countQueriedUsers(query);
  }

  /** The users with these ids; unknown ids are left out. */
  findUsersByIds(clientId: string, ids: readonly string[]): Promise<UserRecord[]> {
    return this.deps.store.users.findUsersByIds(clientId, ids);
  }

  /** Up to `limit` users in (provider, identifier) byte order; `not_found` without the application. */
  async listUsers(
    filter: UserFilter,
    after: UserPosition | null,
    limit: number,
  ): Promise<UserRecord[]> {
    const users = await this.deps.store.users.listUsers(filter, { after, limit });
    // An empty page may mean a missing application; a non-empty one proves it exists.
    if (users.length === 0) await this.assertApplicationExists(filter.clientId);
    return users;
  }

  /**
   * listUsers' page as JSON text the store built (UserRepository.listUsersText), or null when
   * the store builds none (then listUsers); `not_found` without the application.
   */
  async listUsersText(
    filter: UserFilter,
    after: UserPosition | null,
    limit: number,
  ): Promise<UserPageText | null> {
    const page = await this.deps.store.users.listUsersText(filter, { after, limit });
    if (page !== null && page.count === 0) await this.assertApplicationExists(filter.clientId);
    return page;
  }

  countUsers(filter: UserFilter): Promise<number> {
    return this.deps.store.users.countUsers(filter);
  }

  /**
   * Changes a user: `change` gets its current version and returns what to change (null, or
   * nothing different: no write, the user is returned as it is). A changed identifier renames
   * the user, keeping its id. `invalid` for a rule the result breaks; `conflict` for a taken
   * identity; `version_mismatch` when `condition` refuses the current version.
   */
  async updateUser(
    ref: UserRef,
    condition: VersionCondition,
    origin: ChangeOrigin,
    change: (current: UserRecord) => UserChanges | null,
  ): Promise<UserRecord> {
    const loaded = await this.findUser(ref);
    const { clientId, id } = loaded;
    try {
      return await this.#writes.run(writeKey(loaded), (waited) =>
        updateConditionally({
          // The record just read serves the first attempt unless another write went first.
          initial: waited ? undefined : loaded,
          load: () => this.deps.store.users.findUserById(clientId, id),
          notFound: () => userNotFound(ref),
          condition,
          change: (current) => this.changedUser(current, change(current)),
          save: (next, expected, current) =>
            this.deps.store.users.replaceUser(
              next,
              expected,
              userEvents(origin, next.updatedAt, current, next),
              // Most writes leave the identity alone: the store then rewrites less.
              {
                keepsIdentity:
                  next.identifier === current.identifier && next.provider === current.provider,
              },
            ),
        }),
      );
    } catch (error) {
      throw error instanceof DuplicateError ? duplicateUser(loaded, error) : error;
    }
  }

  /**
   * Replaces a user's profile (PUT): omitted optional members return to their defaults
   * (avatar → null); `active` and `external_id` left out keep their values, so a client that
   * predates them never re-activates a deprovisioned user.
   */
  replaceUser(
    ref: UserRef,
    profile: UserProfile,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    return this.updateUser(ref, condition, origin, () => ({
      name: profile.name,
      avatar: profile.avatar ?? null,
      email: profile.email,
      locale: profile.locale,
      roles: profile.roles,
      scopes: profile.scopes,
      ...(profile.active === undefined ? {} : { active: profile.active }),
      ...(profile.external_id === undefined ? {} : { externalId: profile.external_id }),
    }));
  }

  /** Changes the members a merge patch names; null resets avatar and active to their defaults. */
  patchUser(
    ref: UserRef,
    patch: UserPatch,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    return this.updateUser(ref, condition, origin, (current) => ({
      name: patch.name ?? current.name,
      avatar: patch.avatar === undefined ? current.avatar : patch.avatar,
      email: patch.email ?? current.email,
      locale: patch.locale ?? current.locale,
      roles: patch.roles ?? current.roles,
      scopes: patch.scopes ?? current.scopes,
      active: patch.active === undefined ? current.active : (patch.active ?? true),
    }));
  }

  deleteUser(ref: UserRef, condition: VersionCondition, origin: ChangeOrigin): Promise<void> {
    return this.findUser(ref).then((loaded) =>
      this.#writes.run(writeKey(loaded), (waited) =>
        deleteConditionally({
          initial: waited ? undefined : loaded,
          load: () => this.deps.store.users.findUserById(loaded.clientId, loaded.id),
          notFound: () => userNotFound(ref),
          condition,
          remove: (current) =>
            this.deps.store.users.deleteUser(
              current,
              current.etag,
              userEvents(origin, this.deps.clock.now(), current, null),
            ),
        }),
      ),
    );
  }

  /**
   * The next version of `current` with the changes, or null when they change nothing;
   * `invalid` when a changed member breaks a rule. For writes that change several users in one
   * transaction (a SCIM Group's members).
   */
  changedUser(current: UserRecord, changes: UserChanges | null): UserRecord | null {
    if (changes === null) return null;
    const next = normalizeUser({ ...current, ...changes } as UserRecord);
    if (sameUser(current, next)) return null;
    const errors = changeErrors(current, next);
    if (errors.length > 0) throw invalidFields(errors);
    return { ...next, updatedAt: this.deps.clock.now(), etag: newVersion() };
  }

  async #insert(
    clientId: string,
    fields: UserFields,
    origin: ChangeOrigin,
    eventType: string,
  ): Promise<UserRecord> {
    const now = this.deps.clock.now();
    const user: UserRecord = {
      clientId,
      ...fields,
      id: randomUUID(),
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    try {
      await this.deps.store.users.insertUser(user, userEvents(origin, now, null, user, eventType));
    } catch (error) {
      if (error instanceof DuplicateError) throw duplicateUser(user, error);
      if (error instanceof MissingParentError) throw applicationNotFound(clientId);
      throw error;
    }
    return user;
  }

  /**
   * Plans a batch of an import against the stored users, in one read: a user not stored is
   * created (keeping the id it comes with); a stored one that differs is updated, skipped or
   * refused as `onConflict` says; one that does not differ is unchanged, whatever the policy (an
   * import run twice changes nothing the second time). A given id must be the stored user's, or
   * no user's. The users are expected distinct by identity. `not_found` without the application.
   */
  async planImport(
    clientId: string,
    users: readonly ImportedUser[],
    onConflict: 'update' | 'skip' | 'fail',
    origin: ChangeOrigin,
  ): Promise<ImportPlan> {
    const storedUsers = await this.deps.store.users.findUsersForImport(clientId, {
      ids: users.flatMap((user) => (user.id === null ? [] : [user.id])),
      identities: users.map((user) => user.fields),
    });
    if (storedUsers === undefined) throw applicationNotFound(clientId);
    const byIdentity = new Map(storedUsers.map((user) => [identityKey(user), user]));
    const byId = new Map(storedUsers.map((user) => [user.id, user]));
    const now = this.deps.clock.now();
    const versions = new VersionBatch(users.length);
    const plan: ImportPlan = { outcomes: [], inserts: [], changes: [], events: [] };
    for (const user of users) {
      const stored = byIdentity.get(identityKey(user.fields));
      const holder = user.id === null ? undefined : byId.get(user.id);
      if (stored !== undefined && user.id !== null && stored.id !== user.id) {
        plan.outcomes.push(
          invalidImport(
            '/id',
            `the user with this provider and identifier has the id "${stored.id}"`,
          ),
        );
        continue;
      }
      if (stored === undefined && holder !== undefined) {
        plan.outcomes.push(
          invalidImport(
            '/id',
            'is the id of another user of the application (another provider or identifier)',
          ),
        );
        continue;
      }
      if (stored === undefined) {
        const created: UserRecord = {
          clientId,
          ...user.fields,
          id: user.id ?? randomUUID(),
          createdAt: now,
          updatedAt: now,
          etag: versions.next(),
        };
        plan.inserts.push(created);
        plan.events.push(...userEvents(origin, now, null, created));
        plan.outcomes.push({ kind: 'created' });
        continue;
      }
      let next: UserRecord | null;
      try {
        next = this.changedUser(stored, {
          identifier: user.fields.identifier,
          name: user.fields.name,
          avatar: user.fields.avatar,
          email: user.fields.email,
          locale: user.fields.locale,
          roles: user.fields.roles,
          scopes: user.fields.scopes,
          ...(user.sets.active ? { active: user.fields.active } : {}),
          ...(user.sets.externalId ? { externalId: user.fields.externalId } : {}),
        });
      } catch (error) {
        if (error instanceof DomainError && error.code === 'invalid') {
          plan.outcomes.push({ kind: 'invalid', errors: [...error.fields] });
          continue;
        }
        throw error;
      }
      if (next === null) {
        plan.outcomes.push({ kind: 'unchanged' });
      } else if (onConflict === 'skip') {
        plan.outcomes.push({ kind: 'skipped' });
      } else if (onConflict === 'fail') {
        plan.outcomes.push(
          invalidImport(
            '/identifier',
            'a different user with this provider and identifier exists (on_conflict=fail)',
          ),
        );
      } else {
        plan.changes.push({ next, expectedEtag: stored.etag });
        plan.events.push(...userEvents(origin, next.updatedAt, stored, next));
        plan.outcomes.push({ kind: 'updated' });
      }
    }
    return plan;
  }

  /**
   * Every user matching the filter, in list order, in pages, from one snapshot (see
   * UserRepository.exportUsers); `not_found` without the application, before the first page.
   */
  async exportUsers(
    filter: UserFilter,
    pageSize: number,
  ): Promise<AsyncIterableIterator<UserRecord[]>> {
    await this.assertApplicationExists(filter.clientId);
    return this.deps.store.users.exportUsers(filter, pageSize);
  }

  private async assertApplicationExists(clientId: string): Promise<void> {
    const application = await this.deps.store.applications.findApplication(clientId);
    if (application === undefined) throw applicationNotFound(clientId);
  }
}

/**
 * Fresh versions for a batch of an import, as newVersion makes them (96 random bits, base64url),
 * from one read of the random source: a read a user cost 5 µs, 7 % of an import's CPU.
 */
class VersionBatch {
  #bytes: Buffer;
  #next = 0;
  constructor(count: number) {
    this.#bytes = randomBytes(12 * count);
  }
  next(): string {
    if (this.#next + 12 > this.#bytes.length) {
      this.#bytes = randomBytes(12 * 64);
      this.#next = 0;
    }
    const start = this.#next;
    this.#next += 12;
    return this.#bytes.toString('base64url', start, start + 12);
  }
}

function identityKey(user: { provider: string; identifier: string }): string {
  return `${user.provider}\u001f${user.identifier}`;
}

function invalidImport(path: string, detail: string): ImportOutcome {
  return { kind: 'invalid', errors: [{ path, detail }] };
}

function writeKey(user: UserRecord): string {
  return JSON.stringify([user.clientId, user.id]);
}

/** True for a conflict error of this rule. */
export function isConflict(error: unknown, rule: DomainError['rule']): boolean {
  return error instanceof DomainError && error.code === 'conflict' && error.rule === rule;
}

function duplicateUser(user: UserIdentity, error: DuplicateError): DomainError {
  if (error.index === USER_NAME_INDEX) {
    return domainError(
      'conflict',
      `Application "${user.clientId}" already has a user of its SCIM provider "${user.provider}" whose identifier differs from this one only in case (SCIM userNames ignore case).`,
      { rule: 'user_name', cause: error },
    );
  }
  return domainError(
    'conflict',
    `Application "${user.clientId}" already has a user with provider "${user.provider}" and this identifier.`,
    { rule: 'user_identity', cause: error },
  );
}

function userNotFound(ref: UserRef): DomainError {
  return domainError(
    'not_found',
    'id' in ref
      ? `Application "${ref.clientId}" has no user with id "${ref.id}".`
      : `Application "${ref.clientId}" has no user with provider "${ref.provider}" and this identifier.`,
    { resource: 'user' },
  );
}

function sameUser(current: UserRecord, next: UserRecord): boolean {
  return (
    current.identifier === next.identifier &&
    current.name === next.name &&
    current.avatar === next.avatar &&
    current.email === next.email &&
    current.locale === next.locale &&
    current.active === next.active &&
    current.externalId === next.externalId &&
    JSON.stringify(current.labels ?? null) === JSON.stringify(next.labels ?? null) &&
    sameList(current.roles, next.roles) &&
    sameList(current.scopes, next.scopes)
  );
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}
