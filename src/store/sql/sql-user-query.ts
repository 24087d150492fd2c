// UserPredicate → SQL, with the meaning user-predicate.ts states, identically on every dialect.
// Every compiled condition is two-valued (never NULL), so NOT and OR mean what they say.
// Values are bound as parameters through `arg`, so one compiled statement serves every query of
// the same shape (precompile); `predicateShape` names that shape.

import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import {
  CASE_INSENSITIVE_ATTRIBUTES,
  type UserAttribute,
  type UserPredicate,
  foldAsciiCase,
} from '../user-predicate.js';
import type { SqlFlavor } from './sql-executor.js';
import type { Tables } from './tables.js';

type Users = ExpressionBuilder<Tables, 'users'>;

/** Binds the next value and returns its placeholder. */
export type Bind = (value: unknown) => unknown;

/**
 * A placeholder that keeps a SQLite statement prepared. SQLite (3.54 here) marks a
 * statement "plan again when this value is rebound" when its planner reads a bound value: a bare
 * `?` as LIMIT or OFFSET, or as the right side of an equality it estimates with (any query with
 * ORDER BY has such terms). better-sqlite3 clears the bindings after every run, which expires
 * such a statement, so it was parsed and planned again on every call (10–15 µs, more than the
 * lookup itself). Inside CAST the planner does not read the value; the comparison, its
 * affinity (the value already has this type) and the index chosen are the same. PostgreSQL
 * plans its own way: the placeholder stays bare there.
 */
export function stablePlaceholder(
  kind: 'sqlite' | 'postgres',
  placeholder: unknown,
  type: 'text' | 'integer',
): unknown {
  if (kind !== 'sqlite') return placeholder;
  return type === 'text' ? sql`cast(${placeholder} as text)` : sql`cast(${placeholder} as integer)`;
}

/** The SQL type of a value storedValue made: text, or an integer (numbers, booleans). */
export function storedType(value: unknown): 'text' | 'integer' {
  return typeof value === 'string' ? 'text' : 'integer';
}

const TRUE = sql<SqlBool>`1 = 1`;
const FALSE = sql<SqlBool>`1 = 0`;

function column(eb: Users, attribute: UserAttribute, flavor: SqlFlavor): Expression<unknown> {
  switch (attribute) {
    case 'id':
      return eb.ref('users.id');
    case 'identifier':
      // Folded when written; the index (application, provider, identifier_folded) serves `eq`.
      return eb.ref('users.identifier_folded');
    case 'externalId':
      return eb.ref('users.external_id');
    case 'active':
      return eb.ref('users.active');
    case 'name':
      return flavor.asciiLower(eb.ref('users.name'));
    case 'email':
      // Stored lower-cased; addresses are ASCII, so this is the ASCII folding.
      return eb.ref('users.email_normalized');
    case 'createdAt':
      return eb.ref('users.created_at');
    case 'updatedAt':
      return eb.ref('users.updated_at');
  }
}

function storedValue(attribute: UserAttribute, value: string | number | boolean): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' && CASE_INSENSITIVE_ATTRIBUTES.has(attribute)) {
    return foldAsciiCase(value);
  }
  return value;
}

export function compileUserPredicate(
  eb: Users,
  predicate: UserPredicate,
  flavor: SqlFlavor,
  bind: Bind,
): Expression<SqlBool> {
  switch (predicate.kind) {
    case 'all':
      return TRUE;
    case 'none':
      return FALSE;
    case 'and':
      if (predicate.operands.length === 0) return TRUE;
      return eb.and(predicate.operands.map((p) => compileUserPredicate(eb, p, flavor, bind)));
    case 'or':
      if (predicate.operands.length === 0) return FALSE;
      return eb.or(predicate.operands.map((p) => compileUserPredicate(eb, p, flavor, bind)));
    case 'not':
      return eb.not(compileUserPredicate(eb, predicate.operand, flavor, bind));
    case 'present':
      if (predicate.attribute !== 'externalId') return TRUE;
      return sql<SqlBool>`(users.external_id is not null and users.external_id <> '')`;
    case 'compare': {
      const target = column(eb, predicate.attribute, flavor);
      const value = storedValue(predicate.attribute, predicate.value);
      const nullable = predicate.attribute === 'externalId';
      if (predicate.operator === 'ne') {
        const differs = sql<SqlBool>`${target} <> ${bind(value)}`;
        return nullable ? sql<SqlBool>`(${target} is null or ${differs})` : differs;
      }
      const holds = comparison(target, predicate.operator, value, flavor, bind);
      return nullable ? sql<SqlBool>`(${target} is not null and ${holds})` : holds;
    }
  }
}

function comparison(
  target: Expression<unknown>,
  operator: Exclude<Extract<UserPredicate, { kind: 'compare' }>['operator'], 'ne'>,
  value: unknown,
  flavor: SqlFlavor,
  bind: Bind,
): Expression<SqlBool> {
  switch (operator) {
    case 'eq':
      return sql<SqlBool>`${target} = ${bind(value)}`;
    case 'gt':
      return sql<SqlBool>`${target} > ${bind(value)}`;
    case 'ge':
      return sql<SqlBool>`${target} >= ${bind(value)}`;
    case 'lt':
      return sql<SqlBool>`${target} < ${bind(value)}`;
    case 'le':
      return sql<SqlBool>`${target} <= ${bind(value)}`;
    case 'co':
      if (value === '') return sql<SqlBool>`${target} is not null`;
      return flavor.contains(target as Expression<string>, bind(value));
    case 'sw':
      if (value === '') return sql<SqlBool>`${target} is not null`;
      return sql<SqlBool>`substr(${target}, 1, length(${bind(value)})) = ${bind(value)}`;
    case 'ew':
      if (value === '') return sql<SqlBool>`${target} is not null`;
      return sql<SqlBool>`(length(${target}) >= length(${bind(value)}) and substr(${target}, length(${target}) - length(${bind(value)}) + 1) = ${bind(value)})`;
  }
}

/**
 * What makes two predicates compile to the same SQL: their structure and operators, not their
 * values (an empty string compiles differently, so it counts).
 */
export function predicateShape(predicate: UserPredicate): string {
  switch (predicate.kind) {
    case 'all':
    case 'none':
      return predicate.kind;
    case 'and':
    case 'or':
      return `${predicate.kind}(${predicate.operands.map(predicateShape).join(',')})`;
    case 'not':
      return `not(${predicateShape(predicate.operand)})`;
    case 'present':
      return `pr:${predicate.attribute}`;
    case 'compare':
      return `${predicate.attribute}:${predicate.operator}${predicate.value === '' ? ':empty' : ''}`;
  }
}

/** The values compileUserPredicate binds, in the order it binds them. */
export function predicateValues(predicate: UserPredicate, into: unknown[] = []): unknown[] {
  switch (predicate.kind) {
    case 'and':
    case 'or':
      for (const operand of predicate.operands) predicateValues(operand, into);
      break;
    case 'not':
      predicateValues(predicate.operand, into);
      break;
    case 'compare': {
      const value = storedValue(predicate.attribute, predicate.value);
      const uses = { eq: 1, ne: 1, gt: 1, ge: 1, lt: 1, le: 1, co: 1, sw: 2, ew: 3 }[
        predicate.operator
      ];
      const binds = value === '' && ['co', 'sw', 'ew'].includes(predicate.operator) ? 0 : uses;
      for (let n = 0; n < binds; n++) into.push(value);
      break;
    }
    default:
      break;
  }
  return into;
}
