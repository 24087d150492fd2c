// SCIM Groups are the application's roles: displayName is the role name, members are the
// users (of the SCIM provider) holding it. This file maps Group bodies and PATCH operations
// onto that model; scim.service.ts turns them into role changes on users.

import { Compile } from 'typebox/compile';
import { toTimestamp } from '../../http/schemas.js';
import type { GroupRecord, UserRecord } from '../../store/store.js';
import { UserRole } from '../users/users.schemas.js';
import { GROUP_SCHEMA } from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import { memberOf } from './scim.evaluate.js';
import { type Filter, parsePatchPath } from './scim.filter.js';
import { type PatchOperation, entriesWithoutPath } from './scim.patch.js';
import type { Projection } from './scim.projection.js';
import { isObject } from './scim.users.js';

type Json = Record<string, unknown>;

const ROLE = Compile(UserRole);

/** How a write changes the members: by adding and removing some, or by naming all of them. */
export type Membership =
  | { mode: 'delta'; adds: Set<string>; removes: Set<string> }
  | { mode: 'replace'; ids: Set<string> };

export interface GroupChanges {
  displayName?: string;
  externalId?: string | null;
  membership: Membership;
}

export function checkedRoleName(value: unknown): string {
  if (typeof value !== 'string' || !ROLE.Check(value)) {
    throw scimBadRequest(
      'invalidValue',
      `"displayName" is a role name: 1–64 characters of A–Z a–z 0–9 . _ : - (got ${JSON.stringify(value)?.slice(0, 80)}).`,
    );
  }
  return value;
}

/** The User id a member's $ref names (…/Users/<id>), or undefined when it names none. */
function idOfReference(reference: unknown): string | undefined {
  if (typeof reference !== 'string') return undefined;
  const match = /\/Users\/([^/?#]+)$/.exec(reference);
  return match === null ? undefined : decodeURIComponent(match[1]!);
}

/** The ids of the members: each one's "value", else the User its "$ref" names. */
function memberIds(value: unknown): Set<string> {
  const items = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
  const ids = new Set<string>();
  for (const item of items) {
    const given = isObject(item) ? memberOf(item, 'value') : undefined;
    const reference = isObject(item) ? memberOf(item, '$ref') : undefined;
    const referenced = idOfReference(reference);
    if (reference !== undefined && reference !== null && referenced === undefined) {
      throw scimBadRequest('invalidValue', 'A member\'s "$ref" must be the URI of a User.');
    }
    const id = given ?? referenced;
    if (typeof id !== 'string' || id === '') {
      throw scimBadRequest('invalidValue', 'Each member needs a "value": the id of a User.');
    }
    if (referenced !== undefined && referenced !== id) {
      throw scimBadRequest('invalidValue', 'A member\'s "value" and "$ref" name different Users.');
    }
    ids.add(id);
  }
  return ids;
}

function optionalText(value: unknown, what: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string')
    throw scimBadRequest('invalidValue', `"${what}" must be a string.`);
  return value;
}

/** A POST or PUT body: the role name, the externalId and every member. */
export function groupChangesFrom(
  body: Json,
): Required<Pick<GroupChanges, 'displayName' | 'externalId'>> & GroupChanges {
  return {
    displayName: checkedRoleName(memberOf(body, 'displayName')),
    externalId: optionalText(memberOf(body, 'externalId'), 'externalId'),
    membership: { mode: 'replace', ids: memberIds(memberOf(body, 'members')) },
  };
}

/** The ids a `members[…]` filter names when it is `value eq "…"` (or several joined by or). */
function idsNamedBy(filter: Filter): string[] | null {
  if (
    filter.kind === 'compare' &&
    filter.operator === 'eq' &&
    filter.path.attribute.toLowerCase() === 'value'
  ) {
    return typeof filter.value === 'string' ? [filter.value] : null;
  }
  if (filter.kind === 'or') {
    const ids = filter.operands.map(idsNamedBy);
    return ids.every((list) => list !== null) ? ids.flat() : null;
  }
  return null;
}

/** Reads a PATCH's operations, in order, as changes to the group and its members. */
export function groupChangesFromPatch(
  group: GroupRecord,
  operations: readonly PatchOperation[],
): GroupChanges {
  const changes: GroupChanges = {
    membership: { mode: 'delta', adds: new Set(), removes: new Set() },
  };
  const addMembers = (ids: Iterable<string>) => {
    for (const id of ids) {
      if (changes.membership.mode === 'replace') changes.membership.ids.add(id);
      else {
        changes.membership.removes.delete(id);
        changes.membership.adds.add(id);
      }
    }
  };
  const removeMembers = (ids: Iterable<string>) => {
    for (const id of ids) {
      if (changes.membership.mode === 'replace') changes.membership.ids.delete(id);
      else {
        changes.membership.adds.delete(id);
        changes.membership.removes.add(id);
      }
    }
  };
  const apply = (attribute: string, operation: PatchOperation, filter: Filter | null) => {
    switch (attribute.toLowerCase()) {
      case 'displayname':
        if (operation.op === 'remove')
          throw scimBadRequest('invalidValue', '"displayName" is required.');
        changes.displayName = checkedRoleName(operation.value);
        return;
      case 'externalid':
        changes.externalId =
          operation.op === 'remove' ? null : optionalText(operation.value, 'externalId');
        return;
      case 'members':
        if (filter !== null) {
          const ids = operation.op === 'remove' ? idsNamedBy(filter) : null;
          if (ids === null)
            throw scimBadRequest(
              'invalidPath',
              'Only members[value eq "<id>"] can be removed by filter.',
            );
          return removeMembers(ids);
        }
        if (operation.op === 'add') return addMembers(memberIds(operation.value));
        if (operation.op === 'replace') {
          changes.membership = { mode: 'replace', ids: memberIds(operation.value) };
          return;
        }
        // remove: the listed members (Entra without aadOptscim062020), or all of them.
        if (operation.value === undefined || operation.value === null) {
          changes.membership = { mode: 'replace', ids: new Set() };
          return;
        }
        return removeMembers(memberIds(operation.value));
      case 'id':
        if (operation.op !== 'remove' && operation.value === group.id) return;
        throw scimBadRequest('mutability', '"id" is read-only.');
      case 'schemas':
      case 'meta':
        return;
      default:
        throw scimBadRequest('invalidPath', `Groups have no attribute "${attribute}".`);
    }
  };
  for (const operation of operations) {
    if (operation.path === null) {
      for (const [key, value] of entriesWithoutPath(operation)) {
        apply(key, { ...operation, value }, null);
      }
      continue;
    }
    const target = parsePatchPath(operation.path);
    if (target.path.subAttribute !== null || target.subAttribute !== null) {
      throw scimBadRequest('invalidPath', `"${operation.path}" cannot be changed.`);
    }
    apply(target.path.attribute, operation, target.filter);
  }
  return changes;
}

/** Whether a representation must list members: not when the client excluded them. */
export function wantsMembers(projection: Projection): boolean {
  const named = (list: string[] | null) =>
    list?.some((name) => name.toLowerCase().split('.')[0] === 'members') ?? false;
  if (projection.attributes !== null) return named(projection.attributes);
  return !named(projection.excluded);
}

/** The SCIM representation of a group; `members` null leaves them out (excludedAttributes). */
export function toScimGroup(
  group: GroupRecord,
  members: readonly UserRecord[] | null,
  base: string,
): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: group.id,
    ...(group.externalId === null ? {} : { externalId: group.externalId }),
    displayName: group.displayName,
    ...(members === null
      ? {}
      : {
          members: members.map((user) => ({
            value: user.id,
            $ref: `${base}/Users/${user.id}`,
            display: user.identifier,
            type: 'User',
          })),
        }),
    meta: {
      resourceType: 'Group',
      created: toTimestamp(group.createdAt),
      lastModified: toTimestamp(group.updatedAt),
      location: `${base}/Groups/${group.id}`,
      version: `"${group.etag}"`,
    },
  };
}
