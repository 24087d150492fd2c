import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import {
  KeyedQueue,
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import { type InvalidParam, invalid, problem } from '../../problems.js';
import { DuplicateError, MissingParentError } from '../../store/errors.js';
import type {
  Store,
  UserFilter,
  UserIdentity,
  UserPosition,
  UserQuery,
  UserQueryPage,
  UserRecord,
} from '../../store/store.js';
import { applicationNotFound } from '../applications/applications.service.js';
import { type ChangeOrigin, userEvents } from '../changes.js';
import type { CreateUserBody, PatchUserBody, ReplaceUserBody } from './users.schemas.js';

type UserFields = Pick<UserRecord, 'name' | 'avatar' | 'email' | 'locale' | 'roles' | 'scopes'>;

/** What a write may change on a user: its fields, its state, and (a rename) its identifier. */
export type UserChanges = Partial<
  UserFields & Pick<UserRecord, 'identifier' | 'active' | 'externalId'>
>;

/** A user to enrol, as a provisioning client describes it. */
export type NewUser = UserIdentity & UserFields & Pick<UserRecord, 'active' | 'externalId'>;

export class UsersService {
  /** Writes to one user run one after another (see KeyedQueue). */
  readonly #writes = new KeyedQueue();

  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  createUser(clientId: string, body: CreateUserBody, origin: ChangeOrigin): Promise<UserRecord> {
    assertIdentityEchoes({ clientId, provider: body.provider, identifier: body.identifier }, body);
    return this.enrolUser(origin, {
      clientId,
      provider: body.provider,
      identifier: body.identifier,
      ...fieldsOf(body),
      active: body.active ?? true,
      externalId: null,
    });
  }

  /**
   * First login registers the user (an outside token in external mode): user.registered.
   * 409 when the identity is taken meanwhile, 404 without the application.
   */
  registerOnFirstLogin(clientId: string, body: CreateUserBody, origin: ChangeOrigin) {
    return this.enrolUser(
      origin,
      {
        clientId,
        provider: body.provider,
        identifier: body.identifier,
        ...fieldsOf(body),
        active: true,
        externalId: null,
      },
      'user.registered',
    );
  }

  /** Enrols a user with a new id; 409 for a taken identity, 404 without the application. */
  async enrolUser(
    origin: ChangeOrigin,
    fields: NewUser,
    eventType = 'user.created',
  ): Promise<UserRecord> {
    const now = this.deps.clock.now();
    const user: UserRecord = {
      ...fields,
      id: randomUUID(),
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    try {
      await this.deps.store.users.insertUser(user, userEvents(origin, now, null, user, eventType));
    } catch (error) {
      if (error instanceof DuplicateError) throw duplicateIdentity(user);
      if (error instanceof MissingParentError) throw applicationNotFound(user.clientId);
      throw error;
    }
    return user;
  }

  /** The user with this id in the application; 404 when there is none. */
  async findUserById(clientId: string, id: string): Promise<UserRecord> {
    const user = await this.deps.store.users.findUserById(clientId, id);
    if (user === undefined) throw userIdNotFound(clientId, id);
    return user;
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

  /**
   * Changes the user with this id: `change` gets the current user and returns what to change
   * (null or nothing different: no write, the user is returned as it is). A changed identifier
   * renames the user, keeping its id; 409 when the new identity is taken.
   */
  updateUserById(
    clientId: string,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    change: (current: UserRecord) => UserChanges | null,
  ): Promise<UserRecord> {
    return this.#writes.run(JSON.stringify([clientId, '#id', id]), async () => {
      try {
        return await updateConditionally({
          load: () => this.deps.store.users.findUserById(clientId, id),
          notFound: () => userIdNotFound(clientId, id),
          condition,
          change: (current) => this.changed(current, change(current)),
          save: (next, expected, current) =>
            this.deps.store.users.replaceUser(
              next,
              expected,
              userEvents(origin, next.updatedAt, current, next),
            ),
        });
      } catch (error) {
        if (error instanceof DuplicateError) {
          throw problem(
            'conflict',
            `Application "${clientId}" already has a user with this provider and identifier.`,
          );
        }
        throw error;
      }
    });
  }

  deleteUserById(
    clientId: string,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    return this.#writes.run(JSON.stringify([clientId, '#id', id]), () =>
      deleteConditionally({
        load: () => this.deps.store.users.findUserById(clientId, id),
        notFound: () => userIdNotFound(clientId, id),
        condition,
        remove: (current) =>
          this.deps.store.users.deleteUser(
            current,
            current.etag,
            userEvents(origin, this.deps.clock.now(), current, null),
          ),
      }),
    );
  }

  /** The next version of `current` with the changes, or null when they change nothing. */
  changed(current: UserRecord, changes: UserChanges | null): UserRecord | null {
    if (changes === null) return null;
    const next = { ...current, ...changes };
    if (sameUser(current, next)) return null;
    return { ...next, updatedAt: this.deps.clock.now(), etag: newVersion() };
  }

  async findUser(identity: UserIdentity): Promise<UserRecord> {
    const user = await this.deps.store.users.findUser(identity);
    if (user === undefined) throw userNotFound(identity);
    return user;
  }

  /** Up to `limit` users in (provider, identifier) byte order; 404 when the application does not exist. */
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

  countUsers(filter: UserFilter): Promise<number> {
    return this.deps.store.users.countUsers(filter);
  }

  replaceUser(
    identity: UserIdentity,
    body: ReplaceUserBody,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    assertIdentityEchoes(identity, body);
    // A PUT that leaves `active` out keeps it: a client that predates the member must not
    // re-activate a deprovisioned user.
    const fields: UserChanges = {
      ...fieldsOf(body),
      ...(body.active === undefined ? {} : { active: body.active }),
    };
    return this.update(identity, condition, origin, () => fields);
  }

  patchUser(
    identity: UserIdentity,
    patch: PatchUserBody,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    assertIdentityEchoes(identity, patch);
    return this.update(identity, condition, origin, (current) => ({
      name: patch.name?.trim() ?? current.name,
      avatar: patch.avatar === undefined ? current.avatar : patch.avatar,
      email: patch.email ?? current.email,
      locale: patch.locale ?? current.locale,
      roles: patch.roles ?? current.roles,
      scopes: patch.scopes ?? current.scopes,
      active: patch.active === undefined ? current.active : (patch.active ?? true),
    }));
  }

  deleteUser(
    identity: UserIdentity,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    return this.#writes.run(writeKey(identity), () =>
      deleteConditionally({
        load: () => this.deps.store.users.findUser(identity),
        notFound: () => userNotFound(identity),
        condition,
        remove: (current) =>
          this.deps.store.users.deleteUser(
            identity,
            current.etag,
            userEvents(origin, this.deps.clock.now(), current, null),
          ),
      }),
    );
  }

  private update(
    identity: UserIdentity,
    condition: VersionCondition,
    origin: ChangeOrigin,
    changesFor: (current: UserRecord) => UserChanges,
  ): Promise<UserRecord> {
    return this.#writes.run(writeKey(identity), () =>
      updateConditionally({
        load: () => this.deps.store.users.findUser(identity),
        notFound: () => userNotFound(identity),
        condition,
        change: (current) => this.changed(current, changesFor(current)),
        save: (next, expected, current) =>
          this.deps.store.users.replaceUser(
            next,
            expected,
            userEvents(origin, next.updatedAt, current, next),
          ),
      }),
    );
  }

  private async assertApplicationExists(clientId: string): Promise<void> {
    const application = await this.deps.store.applications.findApplication(clientId);
    if (application === undefined) throw applicationNotFound(clientId);
  }
}

function writeKey(identity: UserIdentity): string {
  return JSON.stringify([identity.clientId, identity.provider, identity.identifier]);
}

function duplicateIdentity(identity: UserIdentity) {
  return problem(
    'conflict',
    `Application "${identity.clientId}" already has a user with provider "${identity.provider}" and this identifier.`,
  );
}

function userIdNotFound(clientId: string, id: string) {
  return problem('not-found', `Application "${clientId}" has no user with id "${id}".`);
}

function userNotFound(identity: UserIdentity) {
  return problem(
    'not-found',
    `Application "${identity.clientId}" has no user with provider "${identity.provider}" and this identifier.`,
  );
}

function fieldsOf(body: CreateUserBody | ReplaceUserBody): UserFields {
  return {
    name: body.name.trim(),
    avatar: body.avatar ?? null,
    email: body.email,
    locale: body.locale,
    roles: body.roles,
    scopes: body.scopes,
  };
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
    sameList(current.roles, next.roles) &&
    sameList(current.scopes, next.scopes)
  );
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** Identity members in a body may repeat the path, never differ from it (identity is immutable). */
function assertIdentityEchoes(
  identity: UserIdentity,
  body: { client_id?: string; provider?: string; identifier?: string },
): void {
  const errors: InvalidParam[] = [];
  const echoes = [
    ['client_id', body.client_id, identity.clientId],
    ['provider', body.provider, identity.provider],
    ['identifier', body.identifier, identity.identifier],
  ] as const;
  for (const [name, given, path] of echoes) {
    if (given !== undefined && given !== path) {
      errors.push({
        pointer: `/${name}`,
        detail: `must equal the ${name} in the path (it cannot change)`,
      });
    }
  }
  if (errors.length > 0) throw invalid(errors);
}
