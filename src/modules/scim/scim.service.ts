// SCIM Users of an application: the application's users of its SCIM provider. Domain in,
// domain out: the routes turn records into SCIM representations and errors into SCIM errors.

import type { ChangeOrigin } from '../changes.js';
import { DomainError } from '../../domain-error.js';
import type { VersionCondition } from '../conditional-writes.js';
import type {
  ApplicationRecord,
  GroupRecord,
  Store,
  UserQueryPage,
  UserRecord,
} from '../../store/store.js';
import type { UserPredicate } from '../../store/user-predicate.js';
import type { ApplicationsService } from '../applications/applications.service.js';
import type { UserChanges, UsersService } from '../users/users.service.js';
import { ScimError } from './scim.errors.js';
import { parseFilter } from './scim.filter.js';
import { type PatchOperation, patchUserView } from './scim.patch.js';
import { plainLookupPredicate, toUserPredicate } from './scim.user-query.js';
import { type ScimUserInput, toScimUser, userInputFromScim } from './scim.users.js';

type Json = Record<string, unknown>;

/** An application with SCIM on, and the provider label of its SCIM users. */
export interface ScimScope {
  application: ApplicationRecord;
  provider: string;
}

/** A user with the application's Groups it holds. */
export interface HeldGroupsUser {
  user: UserRecord;
  groups: { id: string; displayName: string }[];
}

export interface UserPage {
  users: UserRecord[];
  total: number;
}

export class ScimService {
  constructor(
    private readonly deps: { store: Store; applications: ApplicationsService; users: UsersService },
  ) {}

  /** The application, when SCIM is on for it; 404 otherwise (whether it exists or not). */
  async scopeOf(clientId: string): Promise<ScimScope> {
    const application = await this.deps.applications
      .findApplication(clientId)
      .catch(notFoundAs(null));
    const provider = application?.scimProvider ?? null;
    if (application === null || provider === null) throw scimNotEnabled(clientId);
    return { application, provider };
  }

  /** scopeOf and groupsOf in one read of the store (a users list needs both). */
  async scopeWithGroups(clientId: string): Promise<{ scope: ScimScope; groups: GroupRecord[] }> {
    const found = await this.deps.store.groups.findApplicationWithGroups(clientId);
    const provider = found?.application.scimProvider ?? null;
    if (found === undefined || provider === null) throw scimNotEnabled(clientId);
    return { scope: { application: found.application, provider }, groups: found.groups };
  }

  groupsOf(scope: ScimScope): Promise<GroupRecord[]> {
    return this.deps.store.groups.listGroups(scope.application.clientId);
  }

  /** A SCIM filter over Users as a store predicate; ScimError invalidFilter when it is not one. */
  predicateOf(filter: string | undefined): UserPredicate {
    return filter === undefined ? { kind: 'all' } : toUserPredicate(parseFilter(filter));
  }

  /** predicateOf for the lookup's one read: its usual shape without the parser. */
  lookupPredicateOf(filter: string): UserPredicate {
    return plainLookupPredicate(filter) ?? this.predicateOf(filter);
  }

  /**
   * The lookup Okta and Entra make (an equality on userName, externalId or id, index paging) in
   * one read: the users with the Groups each holds, and the total. When it finds nothing (the
   * usual answer before a create, or SCIM off), one read of the application tells which: an
   * empty first page, or the 404. Null when it cannot be served so: then listUsers answers.
   */
  async lookupUsers(
    clientId: string,
    predicate: UserPredicate,
    page: { offset: number; limit: number },
  ): Promise<{ users: HeldGroupsUser[]; total: number } | null> {
    if (page.limit === 0) return null;
    const users = await this.deps.store.users.queryScimUsers(clientId, predicate, page);
    if (users === undefined) return null;
    const first = users[0];
    if (first === undefined) {
      if (page.offset > 0) return null;
      await this.scopeOf(clientId);
      return { users: [], total: 0 };
    }
    // A first page that is not full is everything: no count needed.
    const total =
      page.offset === 0 && users.length < page.limit
        ? users.length
        : await this.deps.users.countQueriedUsers({
            clientId,
            provider: first.user.provider,
            predicate,
          });
    return { users, total };
  }

  /** A page of the users matching `filter` (SCIM syntax), with the total. */
  async listUsers(
    scope: ScimScope,
    filter: string | undefined,
    page: UserQueryPage,
  ): Promise<UserPage> {
    const predicate = this.predicateOf(filter);
    const query = { clientId: scope.application.clientId, provider: scope.provider, predicate };
    const users = page.limit === 0 ? [] : await this.deps.users.queryUsers(query, page);
    // A first page that is not full is everything: no count needed (every userName lookup).
    const firstPage = page.offset === 0 || (page.offset === undefined && page.after === null);
    const total =
      firstPage && page.limit > 0 && users.length < page.limit
        ? users.length
        : await this.deps.users.countQueriedUsers(query);
    return { users, total };
  }

  /** The SCIM user with this id; 404 for another provider's user, as for a missing one. */
  async findUser(scope: ScimScope, id: string): Promise<UserRecord> {
    const user = await this.deps.users
      .findUser({ clientId: scope.application.clientId, id })
      .catch(notFoundAs(null));
    if (user === null || user.provider !== scope.provider) throw userNotFound(id);
    return user;
  }

  /** userName is unique per provider regardless of ASCII case: the database refuses a clash. */
  createUser(scope: ScimScope, body: Json, origin: ChangeOrigin): Promise<UserRecord> {
    const { active, ...input } = userInputFromScim(body);
    return this.deps.users.createUser(
      scope.application.clientId,
      {
        ...input,
        provider: scope.provider,
        roles: [],
        scopes: [],
        // Active unless the client says otherwise.
        active: active ?? true,
      },
      origin,
    );
  }

  /** PUT: every SCIM attribute replaced; `active` left out keeps its value. */
  replaceUser(
    scope: ScimScope,
    id: string,
    body: Json,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    const input = userInputFromScim(body);
    return this.#update(scope, id, condition, origin, () => changesOf(input));
  }

  async patchUser(
    scope: ScimScope,
    id: string,
    operations: readonly PatchOperation[],
    condition: VersionCondition,
    base: string,
    origin: ChangeOrigin,
  ): Promise<UserRecord> {
    const groups = await this.groupsOf(scope);
    return this.#update(scope, id, condition, origin, (user) => {
      const before = toScimUser(user, groups, base);
      return changesOf(userInputFromScim(patchUserView(before, operations), before));
    });
  }

  async deleteUser(
    scope: ScimScope,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    await this.findUser(scope, id);
    await this.deps.users.deleteUser(
      { clientId: scope.application.clientId, id },
      condition,
      origin,
    );
  }

  /** A change of one of the SCIM provider's users; another provider's user is not found here. */
  #update(
    scope: ScimScope,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    change: (current: UserRecord) => UserChanges,
  ): Promise<UserRecord> {
    return this.deps.users
      .updateUser({ clientId: scope.application.clientId, id }, condition, origin, (current) => {
        if (current.provider !== scope.provider) throw userNotFound(id);
        return change(current);
      })
      .catch((error: unknown) => {
        throw isNotFound(error) ? userNotFound(id) : error;
      });
  }
}

/** The changes a SCIM body makes: its attributes, checked by UsersService as it writes them. */
function changesOf(input: ScimUserInput): UserChanges {
  const { active, external_id: externalId, ...fields } = input;
  return { ...fields, externalId, ...(active === undefined ? {} : { active }) };
}

function isNotFound(error: unknown): boolean {
  return error instanceof DomainError && error.code === 'not_found';
}

/** For .catch: a not-found error becomes `value`; anything else is thrown again. */
export function notFoundAs<T>(value: T): (error: unknown) => T {
  return (error) => {
    if (isNotFound(error)) return value;
    throw error;
  };
}

function scimNotEnabled(clientId: string): ScimError {
  return new ScimError(404, null, `SCIM is not enabled for application "${clientId}".`);
}

export function userNotFound(id: string): ScimError {
  return new ScimError(404, null, `No user with id "${id}".`);
}
