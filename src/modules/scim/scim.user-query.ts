// SCIM filters on Users → the store's UserPredicate, so they run as SQL (userName eq and
// externalId eq become index lookups). Each SCIM attribute maps onto a user column, a
// constant (Tessera keeps one e-mail address, typed "work", primary), or nothing (attributes
// Tessera does not keep are absent on every user). Values are checked against the attribute's
// type here: the store trusts them.

import type { UserAttribute, UserPredicate } from '../../store/user-predicate.js';
import {
  COMMON_ATTRIBUTES,
  IGNORED_NAME_PARTS,
  IGNORED_USER_ATTRIBUTES,
  USER_ATTRIBUTES,
  USER_SCHEMA,
  findAttribute,
} from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import { compareValue } from './scim.evaluate.js';
import type { AttributePath, ComparisonOperator, Filter, FilterValue } from './scim.filter.js';

type Target =
  | { kind: 'column'; attribute: UserAttribute }
  | { kind: 'constant'; value: string | boolean; caseExact: boolean }
  | { kind: 'absent' };

const ALL: UserPredicate = { kind: 'all' };
const NONE: UserPredicate = { kind: 'none' };

function unsupported(path: AttributePath): never {
  const name = [path.attribute, path.subAttribute].filter(Boolean).join('.');
  throw scimBadRequest('invalidFilter', `Users cannot be filtered by "${name}".`);
}

/** What an attribute path of a User names. `inEmails`: inside `emails[…]`. */
function target(path: AttributePath, inEmails = false): Target {
  if (path.schema !== null && path.schema.toLowerCase() !== USER_SCHEMA.toLowerCase()) {
    return { kind: 'absent' };
  }
  const name = path.attribute.toLowerCase();
  const sub = path.subAttribute?.toLowerCase() ?? null;
  if (inEmails) return emailPart(name, path);
  switch (name) {
    case 'id':
      return sub === null ? { kind: 'column', attribute: 'id' } : unsupported(path);
    case 'username':
      return sub === null ? { kind: 'column', attribute: 'identifier' } : unsupported(path);
    case 'externalid':
      return sub === null ? { kind: 'column', attribute: 'externalId' } : unsupported(path);
    case 'active':
      return sub === null ? { kind: 'column', attribute: 'active' } : unsupported(path);
    case 'displayname':
      return sub === null ? { kind: 'column', attribute: 'name' } : unsupported(path);
    case 'name':
      if (sub === 'formatted') return { kind: 'column', attribute: 'name' };
      if (sub !== null && IGNORED_NAME_PARTS.has(sub)) return { kind: 'absent' };
      return unsupported(path);
    case 'emails':
      return emailPart(sub ?? 'value', path);
    case 'meta':
      if (sub === 'lastmodified') return { kind: 'column', attribute: 'updatedAt' };
      if (sub === 'created') return { kind: 'column', attribute: 'createdAt' };
      if (sub === 'resourcetype') return { kind: 'constant', value: 'User', caseExact: true };
      return unsupported(path);
    default:
      if (IGNORED_USER_ATTRIBUTES.has(name)) return { kind: 'absent' };
      return unsupported(path);
  }
}

function emailPart(name: string, path: AttributePath): Target {
  switch (name) {
    case 'value':
    case 'display':
      return { kind: 'column', attribute: 'email' };
    case 'type':
      return { kind: 'constant', value: 'work', caseExact: false };
    case 'primary':
      return { kind: 'constant', value: true, caseExact: true };
    default:
      return unsupported(path);
  }
}

const DATE_ATTRIBUTES = new Set<UserAttribute>(['createdAt', 'updatedAt']);

/** The value as the store compares it, or invalidFilter when it does not fit the attribute. */
function storedValue(
  attribute: UserAttribute,
  operator: ComparisonOperator,
  value: string | number | boolean,
): string | number | boolean {
  const describe = JSON.stringify(value);
  if (attribute === 'active') {
    if (typeof value !== 'boolean') {
      throw scimBadRequest(
        'invalidFilter',
        `"active" is a boolean (true or false), not ${describe}.`,
      );
    }
    if (operator !== 'eq' && operator !== 'ne') {
      throw scimBadRequest('invalidFilter', `"${operator}" does not apply to a boolean.`);
    }
    return value;
  }
  if (DATE_ATTRIBUTES.has(attribute)) {
    const millis = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(millis))
      throw scimBadRequest('invalidFilter', `${describe} is not a date and time.`);
    if (operator === 'co' || operator === 'sw' || operator === 'ew') {
      throw scimBadRequest('invalidFilter', `"${operator}" does not apply to a date and time.`);
    }
    return millis;
  }
  if (typeof value !== 'string') {
    throw scimBadRequest('invalidFilter', `Compare "${attribute}" with a string, not ${describe}.`);
  }
  return value;
}

function comparison(
  path: AttributePath,
  operator: ComparisonOperator,
  value: FilterValue,
  inEmails: boolean,
): UserPredicate {
  const found = target(path, inEmails);
  if (value === null) {
    const present = presence(found);
    if (operator === 'eq') return negate(present);
    if (operator === 'ne') return present;
    throw scimBadRequest('invalidFilter', `"${operator}" does not take null.`);
  }
  if (found.kind === 'absent') return operator === 'ne' ? ALL : NONE;
  if (found.kind === 'constant') {
    const definition = { type: 'string', caseExact: found.caseExact } as const;
    return compareValue(found.value, operator, value, definition as never) ? ALL : NONE;
  }
  return {
    kind: 'compare',
    attribute: found.attribute,
    operator,
    value: storedValue(found.attribute, operator, value),
  };
}

function presence(found: Target): UserPredicate {
  if (found.kind === 'absent') return NONE;
  if (found.kind === 'constant') return ALL;
  return { kind: 'present', attribute: found.attribute };
}

function negate(predicate: UserPredicate): UserPredicate {
  if (predicate.kind === 'all') return NONE;
  if (predicate.kind === 'none') return ALL;
  return { kind: 'not', operand: predicate };
}

/** A User filter as a store predicate; ScimError invalidFilter for what cannot be one. */
export function toUserPredicate(filter: Filter, inEmails = false): UserPredicate {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return {
        kind: filter.kind,
        operands: filter.operands.map((f) => toUserPredicate(f, inEmails)),
      };
    case 'not':
      return negate(toUserPredicate(filter.operand, inEmails));
    case 'present':
      return presence(target(filter.path, inEmails));
    case 'compare':
      return comparison(filter.path, filter.operator, filter.value, inEmails);
    case 'valuePath': {
      const name = filter.path.attribute.toLowerCase();
      if (inEmails || filter.path.schema !== null) return unsupported(filter.path);
      // Tessera keeps one address: "an element of emails matches" is "the address matches".
      if (name === 'emails') return toUserPredicate(filter.filter, true);
      if (IGNORED_USER_ATTRIBUTES.has(name)) return NONE;
      return unsupported(filter.path);
    }
  }
}

/** Every attribute a User filter, `attributes` or PATCH path may name, common ones included. */
export const USER_DEFINITIONS = [...COMMON_ATTRIBUTES, ...USER_ATTRIBUTES];

/** The definition of a top-level User attribute, or undefined. */
export function findUserAttribute(name: string) {
  return findAttribute(USER_DEFINITIONS, name);
}

/** The lookup Okta and Entra send: one attribute, `eq`, a quoted value without escapes. */
// Control characters are excluded on purpose: a JSON string cannot hold them raw (the parser
// refuses such a filter).
// eslint-disable-next-line no-control-regex
const PLAIN_LOOKUP = /^(userName|externalId|id) eq "([^"\\\u0000-\u001f]*)"$/i;
const LOOKUP_ATTRIBUTES: Record<string, UserAttribute> = {
  username: 'identifier',
  externalid: 'externalId',
  id: 'id',
};

/**
 * `userName eq "…"`, `externalId eq "…"` or `id eq "…"` exactly as written, as the predicate
 * toUserPredicate(parseFilter(filter)) gives (a test compares them), without the parser; null
 * for any other filter, which the parser reads.
 */
export function plainLookupPredicate(filter: string): UserPredicate | null {
  const match = PLAIN_LOOKUP.exec(filter);
  if (match === null) return null;
  // Without escapes or control characters, the JSON string's value is the text between quotes.
  return {
    kind: 'compare',
    attribute: LOOKUP_ATTRIBUTES[match[1]!.toLowerCase()]!,
    operator: 'eq',
    value: match[2]!,
  };
}
