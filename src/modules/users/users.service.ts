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
  UserRecord,
} from '../../store/store.js';
import { applicationNotFound } from '../applications/applications.service.js';
import type { CreateUserBody, PatchUserBody, ReplaceUserBody } from './users.schemas.js';

type UserFields = Pick<UserRecord, 'name' | 'avatar' | 'email' | 'locale' | 'roles' | 'scopes'>;

export class UsersService {
  /** Writes to one user run one after another (see KeyedQueue). */
  readonly #writes = new KeyedQueue();

  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  async createUser(clientId: string, body: CreateUserBody): Promise<UserRecord> {
    assertIdentityEchoes({ clientId, provider: body.provider, identifier: body.identifier }, body);
    const now = this.deps.clock.now();
    const user: UserRecord = {
      clientId,
      provider: body.provider,
      identifier: body.identifier,
      ...fieldsOf(body),
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    try {
      await this.deps.store.users.insertUser(user);
    } catch (error) {
      if (error instanceof DuplicateError) {
        throw problem(
          'conflict',
          `Application "${clientId}" already has a user with provider "${body.provider}" and this identifier.`,
        );
      }
      if (error instanceof MissingParentError) throw applicationNotFound(clientId);
      throw error;
    }
    return user;
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
  ): Promise<UserRecord> {
    assertIdentityEchoes(identity, body);
    const fields = fieldsOf(body);
    return this.update(identity, condition, () => fields);
  }

  patchUser(
    identity: UserIdentity,
    patch: PatchUserBody,
    condition: VersionCondition,
  ): Promise<UserRecord> {
    assertIdentityEchoes(identity, patch);
    return this.update(identity, condition, (current) => ({
      name: patch.name?.trim() ?? current.name,
      avatar: patch.avatar === undefined ? current.avatar : patch.avatar,
      email: patch.email ?? current.email,
      locale: patch.locale ?? current.locale,
      roles: patch.roles ?? current.roles,
      scopes: patch.scopes ?? current.scopes,
    }));
  }

  deleteUser(identity: UserIdentity, condition: VersionCondition): Promise<void> {
    return this.#writes.run(writeKey(identity), () =>
      deleteConditionally({
        load: () => this.deps.store.users.findUser(identity),
        notFound: () => userNotFound(identity),
        condition,
        remove: (current) => this.deps.store.users.deleteUser(identity, current.etag),
      }),
    );
  }

  private update(
    identity: UserIdentity,
    condition: VersionCondition,
    fieldsFor: (current: UserRecord) => UserFields,
  ): Promise<UserRecord> {
    return this.#writes.run(writeKey(identity), () =>
      this.updateNow(identity, condition, fieldsFor),
    );
  }

  private updateNow(
    identity: UserIdentity,
    condition: VersionCondition,
    fieldsFor: (current: UserRecord) => UserFields,
  ): Promise<UserRecord> {
    return updateConditionally({
      load: () => this.deps.store.users.findUser(identity),
      notFound: () => userNotFound(identity),
      condition,
      change: (current) => {
        const fields = fieldsFor(current);
        if (sameFields(current, fields)) return null;
        return { ...current, ...fields, updatedAt: this.deps.clock.now(), etag: newVersion() };
      },
      save: (next, expected) => this.deps.store.users.replaceUser(next, expected),
    });
  }

  private async assertApplicationExists(clientId: string): Promise<void> {
    const application = await this.deps.store.applications.findApplication(clientId);
    if (application === undefined) throw applicationNotFound(clientId);
  }
}

function writeKey(identity: UserIdentity): string {
  return JSON.stringify([identity.clientId, identity.provider, identity.identifier]);
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

function sameFields(current: UserRecord, fields: UserFields): boolean {
  return (
    current.name === fields.name &&
    current.avatar === fields.avatar &&
    current.email === fields.email &&
    current.locale === fields.locale &&
    sameList(current.roles, fields.roles) &&
    sameList(current.scopes, fields.scopes)
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
