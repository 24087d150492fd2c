// A SCIM filter evaluated on a resource's JSON representation, by RFC 7644 §3.4.2.2: names
// compare case-insensitively, values case-exactly or not as the attribute's definition says
// (ASCII case only), text orders by UTF-8 bytes, a multi-valued attribute matches when one of
// its values does, an absent or empty value is not present, and `ne` holds for absent values.
// It filters Groups, selects PATCH targets (`emails[type eq "work"]`), and is the reference
// the SQL translation of user filters is tested against.

import { foldAsciiCase } from '../../store/user-predicate.js';
import { type AttributeDefinition, findAttribute } from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import type { AttributePath, ComparisonOperator, Filter, FilterValue } from './scim.filter.js';

type Json = Record<string, unknown>;

/** The member of `object` named `name` in any case. */
export function memberOf(object: Json, name: string): unknown {
  if (name in object) return object[name];
  const lower = name.toLowerCase();
  const key = Object.keys(object).find((candidate) => candidate.toLowerCase() === lower);
  return key === undefined ? undefined : object[key];
}

function isPresent(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return false;
  if (Array.isArray(value)) return value.some(isPresent);
  if (typeof value === 'object') return Object.values(value as Json).some(isPresent);
  return true;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** One comparison of a single stored value. */
export function compareValue(
  stored: unknown,
  operator: ComparisonOperator,
  value: FilterValue,
  definition: AttributeDefinition | undefined,
): boolean {
  if (stored === undefined || stored === null) return operator === 'ne';
  if (typeof stored === 'boolean' || typeof value === 'boolean') {
    if (operator === 'eq') return stored === value;
    if (operator === 'ne') return stored !== value;
    throw scimBadRequest('invalidFilter', `"${operator}" does not apply to a boolean.`);
  }
  if (definition?.type === 'dateTime') {
    const left = Date.parse(String(stored));
    const right = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(right)) {
      throw scimBadRequest('invalidFilter', `${JSON.stringify(value)} is not a date and time.`);
    }
    return ordered(Math.sign(left - right), operator);
  }
  if (typeof stored !== 'string' || typeof value !== 'string') {
    return operator === 'ne' ? stored !== value : operator === 'eq' && stored === value;
  }
  const exact = definition?.caseExact ?? false;
  const left = exact ? stored : foldAsciiCase(stored);
  const right = exact ? value : foldAsciiCase(value);
  switch (operator) {
    case 'co':
      return left.includes(right);
    case 'sw':
      return left.startsWith(right);
    case 'ew':
      return left.endsWith(right);
    default:
      return ordered(byteOrder(left, right), operator);
  }
}

function ordered(sign: number, operator: ComparisonOperator): boolean {
  switch (operator) {
    case 'eq':
      return sign === 0;
    case 'ne':
      return sign !== 0;
    case 'gt':
      return sign > 0;
    case 'ge':
      return sign >= 0;
    case 'lt':
      return sign < 0;
    case 'le':
      return sign <= 0;
    default:
      throw scimBadRequest('invalidFilter', `"${operator}" does not apply to a date and time.`);
  }
}

/** The values at `path` in `resource` (several for a multi-valued attribute), and their definition. */
function valuesAt(
  resource: Json,
  path: AttributePath,
  definitions: readonly AttributeDefinition[],
): { values: unknown[]; definition: AttributeDefinition | undefined } {
  const top = findAttribute(definitions, path.attribute);
  const raw = memberOf(resource, path.attribute);
  const items = Array.isArray(raw) ? raw : [raw];
  // A complex attribute named alone (`emails co "x"`) means its `value` sub-attribute.
  const sub =
    path.subAttribute ?? (findAttribute(top?.subAttributes ?? [], 'value') ? 'value' : null);
  if (sub === null) return { values: items, definition: top };
  const definition = findAttribute(top?.subAttributes ?? [], sub);
  const values = items
    .filter((item): item is Json => typeof item === 'object' && item !== null)
    .map((item) => memberOf(item, sub));
  return { values, definition };
}

/** `eq null` holds for an absent value, `ne null` for a present one; nothing else takes null. */
function nullComparison(
  resource: Json,
  filter: Extract<Filter, { kind: 'compare' }>,
  definitions: readonly AttributeDefinition[],
): boolean {
  const present = valuesAt(resource, filter.path, definitions).values.some(isPresent);
  if (filter.operator === 'eq') return !present;
  if (filter.operator === 'ne') return present;
  throw scimBadRequest('invalidFilter', `"${filter.operator}" does not take null.`);
}

/** Whether `resource` matches `filter`; `definitions` are its attributes (common ones included). */
export function matchesFilter(
  resource: Json,
  filter: Filter,
  definitions: readonly AttributeDefinition[],
): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.operands.every((operand) => matchesFilter(resource, operand, definitions));
    case 'or':
      return filter.operands.some((operand) => matchesFilter(resource, operand, definitions));
    case 'not':
      return !matchesFilter(resource, filter.operand, definitions);
    case 'present':
      return valuesAt(resource, filter.path, definitions).values.some(isPresent);
    case 'compare': {
      if (filter.value === null) return nullComparison(resource, filter, definitions);
      const { values, definition } = valuesAt(resource, filter.path, definitions);
      const present = values.filter((value) => value !== undefined && value !== null);
      if (present.length === 0)
        return compareValue(undefined, filter.operator, filter.value, definition);
      return present.some((value) =>
        compareValue(value, filter.operator, filter.value, definition),
      );
    }
    case 'valuePath': {
      const top = findAttribute(definitions, filter.path.attribute);
      const raw = memberOf(resource, filter.path.attribute);
      const elements = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter(
        (element): element is Json => typeof element === 'object' && element !== null,
      );
      return elements.some((element) =>
        matchesFilter(element, filter.filter, top?.subAttributes ?? []),
      );
    }
  }
}
