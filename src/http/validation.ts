// Request validation: Ajv configured to refuse rather than repair. Bodies are never coerced
// ("60" is not 60, a string is not a one-element array) and unknown members are rejected,
// not dropped. Query strings and path parameters arrive as text, so only they are coerced.

import { Ajv, type ErrorObject, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import type { InvalidParam } from '../problems.js';
import { stringFormats } from './formats.js';
import { SCHEMA_NAME_KEYWORD } from './openapi.js';

/** Schema annotation: the rule a string must follow, in words, used as the error detail. */
export const RULE_KEYWORD = 'x-rule';

function createAjv(coerceTypes: boolean, allErrors: boolean): Ajv {
  const options: Options = {
    allErrors,
    coerceTypes,
    useDefaults: false,
    removeAdditional: false,
    allowUnionTypes: true,
    verbose: true,
    addUsedSchema: false,
    strict: true,
  };
  const ajv = new Ajv(options);
  for (const [name, validate] of Object.entries(stringFormats)) {
    ajv.addFormat(name, { type: 'string', validate });
  }
  ajv.addKeyword({ keyword: RULE_KEYWORD, schemaType: 'string' });
  ajv.addKeyword({ keyword: SCHEMA_NAME_KEYWORD, schemaType: 'string' });
  return ajv;
}

// What query-string text may look like for each type before it is converted: Ajv's own
// coercion would take "0x10", "1e2", " 5" or "010" as numbers.
const STRICT_TEXT: Record<string, RegExp> = {
  integer: /^-?(?:0|[1-9][0-9]*)$/,
  number: /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/,
  boolean: /^(?:true|false)$/,
};

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * Query strings: every parameter at most once, and numbers and booleans written plainly;
 * then the schema, with text converted to the declared types.
 */
function strictQueryValidator(ajv: Ajv, schema: object): Validate {
  const validate = ajv.compile(schema);
  const properties =
    (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const validateQuery: Validate = (data) => {
    const errors: ErrorObject[] = [];
    for (const [name, value] of Object.entries((data ?? {}) as Record<string, unknown>)) {
      const type = properties[name]?.type;
      const pattern = typeof type === 'string' ? STRICT_TEXT[type] : undefined;
      if (Array.isArray(value)) {
        errors.push(queryError(name, 'repeated', {}));
      } else if (pattern !== undefined && typeof value === 'string' && !pattern.test(value)) {
        errors.push(queryError(name, 'type', { type }));
      }
    }
    if (errors.length > 0) {
      validateQuery.errors = errors;
      return false;
    }
    const valid = validate(data);
    validateQuery.errors = validate.errors ?? null;
    return valid;
  };
  return validateQuery;
}

function queryError(name: string, keyword: string, params: Record<string, unknown>): ErrorObject {
  return { instancePath: `/${name}`, schemaPath: '', keyword, params };
}

/**
 * Documents with more values than this are refused with their first error only. Listing every
 * error costs an object per error: a 256 KiB body of 85,000 empty strings in an array that
 * allows 100 gave 85,000 of them (0.4–1.2 s of CPU), to report at most 100.
 */
const MAX_VALUES_FOR_EVERY_ERROR = 1_000;

/** Whether `data` holds at most `budget` values (objects, arrays and scalars); stops early. */
function isSmallDocument(data: unknown, budget: number): boolean {
  const pending: unknown[] = [data];
  let seen = 0;
  while (pending.length > 0) {
    const value = pending.pop();
    if (++seen > budget) return false;
    if (typeof value === 'object' && value !== null) {
      const children = Array.isArray(value) ? value : Object.values(value);
      if (seen + children.length > budget) return false;
      pending.push(...children);
    }
  }
  return true;
}

/**
 * Bodies are checked in two passes: one that stops at the first error (every body, so the cost
 * is bounded by the body's size), then, for a small invalid body, one that lists every error.
 */
function bodyValidator(first: Ajv, every: Ajv, schema: object): Validate {
  const validateFirst = first.compile(schema);
  let validateEvery: Validate | undefined;
  const validateBody: Validate = (data) => {
    if (validateFirst(data)) {
      validateBody.errors = null;
      return true;
    }
    if (isSmallDocument(data, MAX_VALUES_FOR_EVERY_ERROR)) {
      validateEvery ??= every.compile(schema);
      validateEvery(data);
      validateBody.errors = validateEvery.errors ?? validateFirst.errors ?? null;
    } else {
      validateBody.errors = validateFirst.errors ?? null;
    }
    return false;
  };
  return validateBody;
}

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const firstError = createAjv(false, false);
  const everyError = createAjv(false, true);
  const coercing = createAjv(true, true);
  return function compileValidator({ schema, httpPart }) {
    if (httpPart === 'body') return bodyValidator(firstError, everyError, schema as object);
    if (httpPart === 'querystring') return strictQueryValidator(coercing, schema as object);
    return coercing.compile(schema as object);
  };
}

// Checkers of values outside a request (the domain's rules, the CLI), sharing one pair of Ajv
// instances: the formats, the messages and the bounded cost are those of request bodies.
let sharedAjv: { first: Ajv; every: Ajv } | undefined;

function ajvPair(): { first: Ajv; every: Ajv } {
  sharedAjv ??= { first: createAjv(false, false), every: createAjv(false, true) };
  return sharedAjv;
}

/**
 * Compiles `schema` once into a check of a whole value: [] when it is valid, else its errors
 * as JSON Pointers into it, with the messages of request bodies (two passes, as bodyValidator).
 */
export function compileInputCheck(schema: object): (value: unknown) => InvalidParam[] {
  const { first, every } = ajvPair();
  const validate = bodyValidator(first, every, schema);
  return (value) => (validate(value) ? [] : toInvalidParams(validate.errors ?? [], 'body'));
}

/** Compiles `schema` once into a yes/no check of one value (a single field's rule). */
export function compileValueCheck(schema: object): (value: unknown) => boolean {
  const validate = ajvPair().first.compile(schema);
  return (value) => validate(value);
}

/** Checks a value against a body schema outside HTTP (the CLI), with the same messages. */
export function createBodyChecker(): (schema: object, value: unknown) => InvalidParam[] {
  const ajv = createAjv(false, true);
  return (schema, value) => {
    const validate = ajv.compile(schema);
    return validate(value) ? [] : toInvalidParams(validate.errors ?? [], 'body');
  };
}

/** Enough to fix a request; a body with 5 000 unknown members does not get 5 000 entries. */
const MAX_REPORTED_ERRORS = 100;

/** Ajv errors → RFC 9457 `errors` entries: a JSON Pointer for the body, a name otherwise. */
export function toInvalidParams(errors: ErrorObject[], context: string): InvalidParam[] {
  const seen = new Set<string>();
  const result: InvalidParam[] = [];
  for (const error of errors) {
    if (result.length >= MAX_REPORTED_ERRORS) break;
    // The rule a member name breaks is reported on its own (at the member); this is its summary.
    if (error.keyword === 'propertyNames') continue;
    const path = locate(error);
    const detail = describe(error, context);
    const key = `${path}\u0000${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (context === 'body') result.push({ pointer: path, detail });
    else if (context === 'headers') result.push({ header: path.split('/')[1] ?? '', detail });
    else result.push({ parameter: decodePointerToken(path.split('/')[1] ?? ''), detail });
  }
  return result;
}

function locate(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  // A member whose name breaks the object's propertyNames rule.
  if (error.propertyName !== undefined) {
    return `${error.instancePath}/${escapePointerToken(error.propertyName)}`;
  }
  if (error.keyword === 'required') {
    return `${error.instancePath}/${escapePointerToken(String(params.missingProperty))}`;
  }
  if (error.keyword === 'additionalProperties') {
    return `${error.instancePath}/${escapePointerToken(String(params.additionalProperty))}`;
  }
  return error.instancePath;
}

function describe(error: ErrorObject, context: string): string {
  const params = error.params as Record<string, unknown>;
  const rule = (error.parentSchema as Record<string, unknown> | undefined)?.[RULE_KEYWORD];
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'repeated':
      return 'must be given only once';
    case 'additionalProperties':
      return context === 'body' ? 'is not a known field' : 'is not a known parameter';
    case 'type':
      return `must be ${describeTypes(params.type)}`;
    case 'minLength':
      return `must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long`;
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`;
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minItems':
      return `must have at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${String(params.limit)} items`;
    case 'uniqueItems':
      return `must not contain duplicates (items ${String(params.j)} and ${String(params.i)} are equal)`;
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'pattern':
    case 'format':
    case 'not':
      if (typeof rule === 'string') return `must be ${rule}`;
      return error.keyword === 'format'
        ? `must be a valid ${String(params.format)}`
        : 'has an invalid form';
    default:
      return error.message ?? 'is invalid';
  }
}

function describeTypes(type: unknown): string {
  const names = (Array.isArray(type) ? type : [type]).map((name) => {
    if (name === 'null') return 'null';
    if (name === 'integer') return 'an integer';
    if (name === 'array' || name === 'object') return `an ${String(name)}`;
    return `a ${String(name)}`;
  });
  return names.join(' or ');
}

function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

function decodePointerToken(token: string): string {
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}
