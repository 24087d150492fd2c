// SCIM Groups: an application's roles. Adding a member adds the role to that user, removing
// one removes it, renaming a group renames the role on every member, deleting it removes the
// role from every member — each write one transaction with the group's own row, so a group
// and its members never disagree, and a write that lost a race is retried from a new read.

import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { problem } from '../../problems.js';
import { DuplicateError } from '../../store/errors.js';
import type { GroupRecord, NewEvent, Store, UserChange, UserRecord } from '../../store/store.js';
import { type ChangeOrigin, userEvents } from '../changes.js';
import {
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import type { UsersService } from '../users/users.service.js';
import { GROUP_ATTRIBUTES, COMMON_ATTRIBUTES } from './scim.catalog.js';
import { ScimError } from './scim.errors.js';
import { matchesFilter } from './scim.evaluate.js';
import { type Filter, parseFilter } from './scim.filter.js';
import { type GroupChanges, type Membership, toScimGroup } from './scim.groups.js';
import type { ScimScope } from './scim.service.js';

/** Roles a user may hold (the Tessera API's rule). */
const MAX_ROLES = 100;
const MEMBERS_PER_PAGE = 1000;
const GROUP_DEFINITIONS = [...COMMON_ATTRIBUTES, ...GROUP_ATTRIBUTES];

/** A group as loaded for a write, with the member changes the write computed. */
type GroupState = GroupRecord & { memberChanges?: UserChange[] };

export class ScimGroupsService {
  /** The user each member change was computed from, for its user.updated event. */
  readonly #before = new WeakMap<UserRecord, UserRecord>();

  constructor(private readonly deps: { store: Store; users: UsersService; clock: Clock }) {}

  /**
   * A group is one of the application's roles: a group write is recorded as the user.updated
   * events of the members whose roles it changes.
   */
  private memberEvents(origin: ChangeOrigin, members: readonly UserChange[]): NewEvent[] {
    return members.flatMap((change) =>
      userEvents(origin, change.next.updatedAt, this.#before.get(change.next)!, change.next),
    );
  }

  /** Every group of the application matching `filter`, ordered by id. */
  async listGroups(
    scope: ScimScope,
    filter: string | undefined,
    base: string,
  ): Promise<GroupRecord[]> {
    const groups = await this.deps.store.groups.listGroups(scope.application.clientId);
    if (filter === undefined) return groups;
    const parsed = parseFilter(filter);
    const needsMembers = mentionsMembers(parsed);
    const matching: GroupRecord[] = [];
    for (const group of groups) {
      const members = needsMembers ? await this.membersOf(scope, group.displayName) : null;
      if (matchesFilter(toScimGroup(group, members, base), parsed, GROUP_DEFINITIONS))
        matching.push(group);
    }
    return matching;
  }

  async findGroup(scope: ScimScope, id: string): Promise<GroupRecord> {
    const group = await this.deps.store.groups.findGroup(scope.application.clientId, id);
    if (group === undefined) throw new ScimError(404, null, `No group with id "${id}".`);
    return group;
  }

  /** The SCIM users holding the role, in identifier order. */
  async membersOf(scope: ScimScope, role: string): Promise<UserRecord[]> {
    const members: UserRecord[] = [];
    for (;;) {
      const last = members.at(-1);
      const page = await this.deps.users.listUsers(
        {
          clientId: scope.application.clientId,
          provider: scope.provider,
          email: null,
          role,
          scope: null,
          active: null,
        },
        last === undefined ? null : { provider: last.provider, identifier: last.identifier },
        MEMBERS_PER_PAGE,
      );
      members.push(...page);
      if (page.length < MEMBERS_PER_PAGE) return members;
    }
  }

  async createGroup(
    scope: ScimScope,
    changes: Required<Pick<GroupChanges, 'displayName' | 'externalId'>> & GroupChanges,
    origin: ChangeOrigin,
  ) {
    const now = this.deps.clock.now();
    const group: GroupRecord = {
      clientId: scope.application.clientId,
      id: randomUUID(),
      displayName: changes.displayName,
      externalId: changes.externalId,
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    for (let attempt = 0; attempt < 20; attempt++) {
      const members = await this.memberChanges(
        scope,
        group,
        group.displayName,
        changes.membership,
        [],
      );
      try {
        const events = this.memberEvents(origin, members);
        if (await this.deps.store.groups.insertGroup(group, members, events)) return group;
      } catch (error) {
        if (error instanceof DuplicateError) throw duplicateName(group.displayName);
        throw error;
      }
    }
    throw problem('write-contention', 'Members kept changing while the group was created; retry.');
  }

  /** Applies `changes` (PUT or PATCH) to the group and its members. */
  updateGroup(
    scope: ScimScope,
    id: string,
    changes: GroupChanges,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<GroupRecord> {
    const clientId = scope.application.clientId;
    return updateConditionally<GroupState>({
      load: () => this.deps.store.groups.findGroup(clientId, id),
      notFound: () => new ScimError(404, null, `No group with id "${id}".`),
      condition,
      change: async (current) => {
        const next: GroupRecord = {
          ...current,
          displayName: changes.displayName ?? current.displayName,
          externalId: changes.externalId === undefined ? current.externalId : changes.externalId,
        };
        const members = await this.membersIfNeeded(scope, current, next, changes.membership);
        const memberChanges = await this.memberChanges(
          scope,
          current,
          next.displayName,
          changes.membership,
          members,
        );
        if (
          memberChanges.length === 0 &&
          next.displayName === current.displayName &&
          next.externalId === current.externalId
        ) {
          return null;
        }
        return { ...next, updatedAt: this.deps.clock.now(), etag: newVersion(), memberChanges };
      },
      save: async ({ memberChanges, ...next }, expected) => {
        try {
          const members = memberChanges ?? [];
          return await this.deps.store.groups.replaceGroup(
            next,
            expected,
            members,
            this.memberEvents(origin, members),
          );
        } catch (error) {
          if (error instanceof DuplicateError) throw duplicateName(next.displayName);
          throw error;
        }
      },
    });
  }

  deleteGroup(
    scope: ScimScope,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    const clientId = scope.application.clientId;
    return deleteConditionally({
      load: () => this.deps.store.groups.findGroup(clientId, id),
      notFound: () => new ScimError(404, null, `No group with id "${id}".`),
      condition,
      remove: async (current) => {
        const members = await this.membersOf(scope, current.displayName);
        const changes = this.withRoles(members, (roles) =>
          roles.filter((role) => role !== current.displayName),
        );
        return this.deps.store.groups.deleteGroup(
          current,
          current.etag,
          changes,
          this.memberEvents(origin, changes),
        );
      },
    });
  }

  /** The current members, when the write renames the role or names every member. */
  private membersIfNeeded(
    scope: ScimScope,
    current: GroupRecord,
    next: GroupRecord,
    membership: Membership,
  ) {
    const needed = membership.mode === 'replace' || next.displayName !== current.displayName;
    return needed ? this.membersOf(scope, current.displayName) : Promise.resolve([]);
  }

  /**
   * The user writes a group write implies: the role renamed on current members, added to new
   * ones, removed from leaving ones. 400 for a member id that is not a SCIM user.
   */
  private async memberChanges(
    scope: ScimScope,
    group: GroupRecord,
    nextName: string,
    membership: Membership,
    currentMembers: readonly UserRecord[],
  ): Promise<UserChange[]> {
    const adds = membership.mode === 'replace' ? membership.ids : membership.adds;
    const removes =
      membership.mode === 'replace'
        ? new Set(currentMembers.map((user) => user.id).filter((id) => !membership.ids.has(id)))
        : membership.removes;
    const named = [...adds, ...removes].filter(
      (id) => !currentMembers.some((user) => user.id === id),
    );
    const loaded = (await this.deps.users.findUsersByIds(scope.application.clientId, named)).filter(
      (user) => user.provider === scope.provider,
    );
    const missing = [...adds].filter(
      (id) => ![...loaded, ...currentMembers].some((user) => user.id === id),
    );
    if (missing.length > 0) {
      throw new ScimError(
        400,
        'invalidValue',
        `No user with id "${missing[0]!.slice(0, 100)}" to add to the group.`,
      );
    }
    const oldName = group.displayName;
    return this.withRoles([...currentMembers, ...loaded], (roles, user) => {
      const member = adds.has(user.id) || (!removes.has(user.id) && roles.includes(oldName));
      if (!member) return roles.filter((role) => role !== oldName);
      const renamed = roles
        .map((role) => (role === oldName ? nextName : role))
        .filter((role, index, all) => all.indexOf(role) === index);
      return renamed.includes(nextName) ? renamed : [...renamed, nextName];
    });
  }

  /** The users whose roles `rolesOf` changes, as conditional writes; 400 past 100 roles. */
  private withRoles(
    users: readonly UserRecord[],
    rolesOf: (roles: string[], user: UserRecord) => string[],
  ): UserChange[] {
    const changes: UserChange[] = [];
    for (const user of users) {
      const roles = rolesOf(user.roles, user);
      if (roles.length > MAX_ROLES) {
        throw new ScimError(
          400,
          'invalidValue',
          `User "${user.id}" would hold more than ${MAX_ROLES} roles.`,
        );
      }
      const next = this.deps.users.changedUser(user, { roles });
      if (next !== null) {
        this.#before.set(next, user);
        changes.push({ next, expectedEtag: user.etag });
      }
    }
    return changes;
  }
}

function duplicateName(name: string): ScimError {
  return new ScimError(409, 'uniqueness', `A group named "${name}" exists.`);
}

function mentionsMembers(filter: Filter): boolean {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return filter.operands.some(mentionsMembers);
    case 'not':
      return mentionsMembers(filter.operand);
    default:
      return filter.path.attribute.toLowerCase() === 'members';
  }
}
