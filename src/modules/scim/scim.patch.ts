// PATCH (RFC 7644 §3.5.2) applied to a User's SCIM representation, as the clients send it:
// op names in any case ("Replace"), paths with filters (`emails[type eq "work"].value`), no-path
// operations whose value is an object of paths (Okta's {"active": false}, Entra's
// {"name.givenName": …}), and booleans as strings ("False"). The result is mapped back onto
// the user by the same rules as a PUT body (scim.users.ts).

import {
  ENTERPRISE_USER_SCHEMA,
  IGNORED_NAME_PARTS,
  IGNORED_USER_ATTRIBUTES,
  USER_SCHEMA,
} from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import { matchesFilter, memberOf } from './scim.evaluate.js';
import { type Filter, type PatchPath, parsePatchPath } from './scim.filter.js';
import { findUserAttribute } from './scim.user-query.js';
import { isObject } from './scim.users.js';

type Json = Record<string, unknown>;
export type PatchOperationName = 'add' | 'replace' | 'remove';

export interface PatchOperation {
  op: PatchOperationName;
  path: string | null;
  value: unknown;
}

/** The Operations of a PatchOp body, names lower-cased; invalidSyntax for anything else. */
export function readOperations(body: Json): PatchOperation[] {
  const operations = memberOf(body, 'Operations');
  if (!Array.isArray(operations) || operations.length === 0) {
    throw scimBadRequest('invalidSyntax', '"Operations" must be a non-empty array.');
  }
  return operations.map((operation, index) => {
    if (!isObject(operation))
      throw scimBadRequest('invalidSyntax', `Operation ${index + 1} is not an object.`);
    const op = memberOf(operation, 'op');
    const name = typeof op === 'string' ? op.toLowerCase() : '';
    if (name !== 'add' && name !== 'replace' && name !== 'remove') {
      throw scimBadRequest(
        'invalidSyntax',
        `Operation ${index + 1}: "op" must be add, replace or remove.`,
      );
    }
    const path = memberOf(operation, 'path');
    if (path !== undefined && path !== null && typeof path !== 'string') {
      throw scimBadRequest('invalidPath', `Operation ${index + 1}: "path" must be a string.`);
    }
    const value = memberOf(operation, 'value');
    if (name !== 'remove' && value === undefined) {
      throw scimBadRequest('invalidValue', `Operation ${index + 1}: ${name} needs a "value".`);
    }
    return { op: name, path: typeof path === 'string' && path.trim() !== '' ? path : null, value };
  });
}

const READ_ONLY = new Set(['id', 'meta', 'groups']);

/** Applies the operations to a copy of the User representation `view` and returns it. */
export function patchUserView(view: Json, operations: readonly PatchOperation[]): Json {
  const next = structuredClone(view);
  const before = { displayName: next.displayName, formatted: (next.name as Json).formatted };
  for (const operation of operations) {
    if (operation.path === null) applyWithoutPath(next, operation);
    else applyAt(next, parsePatchPath(operation.path), operation);
  }
  // displayName and name.formatted are one value: whichever changed wins.
  const name = isObject(next.name) ? next.name : {};
  if (next.displayName !== before.displayName) next.name = { ...name, formatted: next.displayName };
  else if (name.formatted !== before.formatted) next.displayName = name.formatted;
  return next;
}

/** The members of a no-path add or replace's object value; noTarget for a no-path remove. */
export function entriesWithoutPath(operation: PatchOperation): [string, unknown][] {
  if (operation.op === 'remove') {
    throw scimBadRequest('noTarget', 'A remove operation needs a "path".');
  }
  if (!isObject(operation.value)) {
    throw scimBadRequest(
      'invalidValue',
      `A ${operation.op} without "path" needs an object "value".`,
    );
  }
  return Object.entries(operation.value);
}

function applyWithoutPath(view: Json, operation: PatchOperation): void {
  for (const [key, value] of entriesWithoutPath(operation)) {
    const lower = key.toLowerCase();
    if (lower === USER_SCHEMA.toLowerCase() && isObject(value)) {
      applyWithoutPath(view, { ...operation, value });
    } else if (lower.startsWith('urn:') && !lower.startsWith(`${USER_SCHEMA.toLowerCase()}:`)) {
      continue; // an extension Tessera does not keep (the enterprise User, a custom one)
    } else if (lower === 'schemas') {
      continue;
    } else {
      applyAt(view, parsePatchPath(key), { ...operation, value });
    }
  }
}

function applyAt(view: Json, target: PatchPath, operation: PatchOperation): void {
  const schema = target.path.schema?.toLowerCase() ?? null;
  if (schema !== null && schema !== USER_SCHEMA.toLowerCase()) {
    if (schema === ENTERPRISE_USER_SCHEMA.toLowerCase() || schema.startsWith('urn:')) return;
  }
  const name = target.path.attribute.toLowerCase();
  const definition = findUserAttribute(name);
  if (definition === undefined) {
    if (IGNORED_USER_ATTRIBUTES.has(name)) return;
    throw scimBadRequest('invalidPath', `Users have no attribute "${target.path.attribute}".`);
  }
  const key = definition.name;
  if (READ_ONLY.has(key)) {
    if (key === 'id' && operation.op !== 'remove' && operation.value === view.id) return;
    throw scimBadRequest('mutability', `"${key}" is read-only.`);
  }
  const sub = target.path.subAttribute ?? target.subAttribute;
  if (key === 'name') return applyToName(view, sub, operation);
  if (definition.multiValued) return applyToList(view, key, target.filter, sub, operation);
  if (sub !== null) throw scimBadRequest('invalidPath', `"${key}" has no sub-attributes.`);
  if (operation.op === 'remove') delete view[key];
  else view[key] = operation.value;
}

function applyToName(view: Json, sub: string | null, operation: PatchOperation): void {
  const current = isObject(view.name) ? view.name : {};
  if (sub !== null) {
    if (IGNORED_NAME_PARTS.has(sub.toLowerCase())) return;
    if (sub.toLowerCase() !== 'formatted')
      throw scimBadRequest('invalidPath', `"name.${sub}" is not kept.`);
    view.name = operation.op === 'remove' ? {} : { ...current, formatted: operation.value };
    return;
  }
  if (operation.op === 'remove') {
    view.name = {};
    return;
  }
  if (!isObject(operation.value)) throw scimBadRequest('invalidValue', '"name" must be an object.');
  const formatted = memberOf(operation.value, 'formatted');
  const parts = ['givenName', 'familyName']
    .map((part) => memberOf(operation.value as Json, part))
    .filter((part): part is string => typeof part === 'string' && part.trim() !== '');
  if (formatted !== undefined) view.name = { formatted };
  else if (parts.length > 0) view.name = { formatted: parts.join(' ') };
}

function elementsOf(value: unknown): Json[] {
  return (Array.isArray(value) ? value : [value]).filter(isObject).map((item) => ({ ...item }));
}

function applyToList(
  view: Json,
  key: string,
  filter: Filter | null,
  sub: string | null,
  operation: PatchOperation,
): void {
  const definition = findUserAttribute(key)!;
  const list = Array.isArray(view[key]) ? (view[key] as Json[]) : [];
  const matches = (element: Json) =>
    filter === null || matchesFilter(element, filter, definition.subAttributes ?? []);
  const matched = list.filter(matches);
  if (operation.op === 'remove') {
    if (sub !== null) {
      for (const element of matched) delete element[sub];
      return;
    }
    const byValue =
      filter === null && operation.value !== undefined ? elementsOf(operation.value) : null;
    view[key] =
      byValue === null
        ? list.filter((element) => !matches(element))
        : list.filter(
            (element) =>
              !byValue.some((item) => memberOf(item, 'value') === memberOf(element, 'value')),
          );
    return;
  }
  if (sub !== null) {
    if (matched.length === 0) {
      const created = filter === null ? {} : elementFromFilter(filter);
      view[key] = [...list, { ...created, [sub]: operation.value }];
      return;
    }
    for (const element of matched) element[sub] = operation.value;
    return;
  }
  const values = elementsOf(operation.value);
  if (filter !== null) {
    if (matched.length === 0)
      throw scimBadRequest('noTarget', `No element of "${key}" matches the filter.`);
    view[key] = list.map((element) => (matches(element) ? { ...element, ...values[0] } : element));
    return;
  }
  if (operation.op === 'replace') {
    view[key] = values;
    return;
  }
  // RFC 7643 §2.4: one primary value at most; an added primary one takes over.
  const newPrimary = values.some((value) => isPrimary(memberOf(value, 'primary')));
  const kept = newPrimary ? list.map((element) => ({ ...element, primary: false })) : list;
  view[key] = [...kept, ...values];
}

function isPrimary(flag: unknown): boolean {
  return flag === true || (typeof flag === 'string' && flag.toLowerCase() === 'true');
}

/** The element an equality filter describes (`type eq "work"` → {type: "work"}), for a target that is missing. */
function elementFromFilter(filter: Filter): Json {
  if (filter.kind === 'compare' && filter.operator === 'eq' && filter.path.subAttribute === null) {
    return { [filter.path.attribute]: filter.value };
  }
  if (filter.kind === 'and') return Object.assign({}, ...filter.operands.map(elementFromFilter));
  throw scimBadRequest('noTarget', 'No element matches the filter, and it does not describe one.');
}
