// Schema building blocks shared by every module: one declaration serves validation, the
// TypeScript type, response serialization and the OpenAPI document.

import { type Static, type TSchema, Type } from 'typebox';
import { ProblemSchema, problemKinds } from '../problems.js';
import { JSON_MEDIA_TYPE, MERGE_PATCH_MEDIA_TYPE } from './content-types.js';
import { SCHEMA_NAME_KEYWORD, named, schemaName } from './openapi.js';
import { RULE_KEYWORD } from './validation.js';

/** The schema plus `null`, as `type: [T, "null"]` (never anyOf: clearer errors, faster serialization). */
export function Nullable<T extends TSchema>(schema: T) {
  // A nullable X is not X: the copy drops the name X has in the OpenAPI document.
  const {
    type,
    enum: values,
    [SCHEMA_NAME_KEYWORD]: _name,
    ...rest
  } = schema as unknown as Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({
    ...rest,
    type: Array.isArray(type) ? [...(type as unknown[]), 'null'] : [type, 'null'],
    ...(Array.isArray(values) ? { enum: [...(values as unknown[]), null] } : {}),
  });
}

/** A string from a fixed set, as `enum` (one error message, one OpenAPI enum). */
export function StringEnum<const T extends readonly string[]>(values: T, options: object = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/**
 * Control characters (Unicode Cc) and unpaired surrogates, for character classes. Spelled as
 * ranges rather than \p{Cc}\p{Cs} so that JSON Schema tools outside JavaScript read them; in a
 * u-mode regex a range of surrogate escapes matches only unpaired surrogates.
 */
export const CONTROL_AND_SURROGATES = '\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff';

// Whitespace that String.prototype.trim removes, minus the control characters (tab, newline…),
// which these fields refuse outright.
const TRIMMABLE = ' \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';

/**
 * Free text of 1–max characters once surrounding whitespace is trimmed, without control
 * characters. The pattern states the whole rule, so validation needs no code.
 */
export function TrimmedText(max: number, options: object = {}) {
  return Type.String({
    pattern:
      `^[${TRIMMABLE}]*[^\\s${CONTROL_AND_SURROGATES}]` +
      `(?:[^${CONTROL_AND_SURROGATES}]{0,${max - 2}}[^\\s${CONTROL_AND_SURROGATES}])?[${TRIMMABLE}]*$`,
    [RULE_KEYWORD]: `1–${max} characters after trimming, without control characters`,
    ...options,
  });
}

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'RFC 3339, UTC, millisecond precision',
  examples: ['2026-11-21T09:30:00.000Z'],
});

/** A time the server sets: read-only. */
export const ServerTimestamp = Type.String({ ...Timestamp, readOnly: true });

/** Members a client may echo back from a GET; accepted and ignored. */
export const ReadOnlyEcho = Type.Unknown({
  readOnly: true,
  description: 'Read-only; accepted and ignored.',
});

export const Cursor = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'Opaque; `next_cursor` of the previous page.',
});

/** The page size of a list when `limit` is not given. */
export const DEFAULT_PAGE_SIZE = 100;

export const PageQueryProperties = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: DEFAULT_PAGE_SIZE,
      description: 'Page size, 1–1000.',
      examples: [50],
    }),
  ),
  cursor: Type.Optional(Cursor),
  include_total: Type.Optional(
    Type.Boolean({
      default: false,
      description: 'Also count every matching item.',
      examples: [true],
    }),
  ),
};

/** A page of items; named `<Item>Page` in the OpenAPI document when the item is named. */
export function Page<T extends TSchema>(item: T) {
  const page = Type.Object({
    items: Type.Array(item),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page.' })),
    total: Type.Optional(Type.Integer({ description: 'With `include_total=true`.' })),
  });
  const itemName = schemaName(item);
  return itemName === undefined ? page : named(`${itemName}Page`, page);
}

type ErrorStatus = (typeof problemKinds)[keyof typeof problemKinds]['status'];

/** Response headers, documented once. */
const responseHeaders = {
  etag: { type: 'string', description: 'Strong entity tag of this version; send it in If-Match.' },
  location: { type: 'string', description: 'Path of the created resource.' },
  link: { type: 'string', description: '`<…>; rel="next"` when there is a next page.' },
  'www-authenticate': { type: 'string', description: '`apikey`' },
  'retry-after': { type: 'string', description: 'Seconds to wait before retrying.' },
  'ratelimit-limit': { type: 'string', description: 'Requests allowed per window.' },
  'ratelimit-remaining': { type: 'string', description: 'Requests left in this window.' },
  'ratelimit-reset': { type: 'string', description: 'Seconds until the window resets.' },
} as const;

type ResponseHeader = keyof typeof responseHeaders;

function pickHeaders(names: readonly ResponseHeader[]) {
  return Object.fromEntries(names.map((name) => [name, responseHeaders[name]]));
}

/** A JSON success response with the headers it carries, for validation-free documentation. */
export function JsonResponse<T extends TSchema>(
  schema: T,
  description: string,
  headers: readonly ResponseHeader[] = [],
) {
  return {
    description,
    ...(headers.length > 0 ? { headers: pickHeaders(headers) } : {}),
    content: { 'application/json': { schema } },
  };
}

const problemHeaders: Partial<Record<number, readonly ResponseHeader[]>> = {
  401: ['www-authenticate'],
  429: ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
  503: ['retry-after'],
};

/** Declares RFC 9457 responses for the given statuses (and those every API route can give). */
export function problemResponses(...statuses: ErrorStatus[]) {
  const all = new Set<number>([...statuses, 400, 401, 429, 503]);
  return Object.fromEntries(
    [...all].map((status) => [
      status,
      {
        description: Object.values(problemKinds).find((kind) => kind.status === status)!.title,
        ...(problemHeaders[status] ? { headers: pickHeaders(problemHeaders[status]) } : {}),
        content: { 'application/problem+json': { schema: ProblemSchema } },
      },
    ]),
  );
}

/** PATCH bodies: JSON Merge Patch, also accepted as plain JSON. */
export const mergePatchMediaTypes = [MERGE_PATCH_MEDIA_TYPE, JSON_MEDIA_TYPE];

/** The query of every list without filters. */
export const PageQuery = Type.Object(PageQueryProperties, { additionalProperties: false });

/** An identity member a body may repeat from the path (so a GET body can be sent back). */
export const PathEcho = Type.String({ description: 'If present, must equal the path.' });

export const NoContent = Type.Null({ description: 'No content' });

/** Routes that take no query parameters still refuse unknown ones. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description: 'Apply only if the resource still has this ETag (else 412); `*`: any version.',
      examples: ['*'],
    }),
  ),
});

export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({ description: 'Answer 304 if the resource still has this ETag.' }),
  ),
});

export const NotModified = Type.Null({ description: 'Not modified: your copy is current.' });

export const apiKeySecurity = [{ apiKey: [] }];

/** Routes anyone may call: no credential. */
export const noSecurity = [];

/** What a route without a key can still answer: a request no route could read. */
export const unreadableRequestResponse = {
  400: {
    description: 'The request cannot be read (two Authorization headers; HTTP/1.1 without Host)',
    content: { 'application/problem+json': { schema: ProblemSchema } },
  },
};

const DAY_MS = 86_400_000;
/** Date.prototype.toISOString writes 4-digit years (YYYY-MM-DDT…) only from 0000 to 9999. */
const FOUR_DIGIT_YEARS_END = Date.UTC(10_000, 0, 1);
/** `YYYY-MM-DDT` by day number; timestamps cluster on few days. Starts over when full. */
const dayPrefixes = new Map<number, string>();
const MAX_CACHED_DAYS = 4096;

function twoDigits(value: number): string {
  return value < 10 ? `0${value}` : `${value}`;
}

/**
 * Epoch milliseconds → RFC 3339 UTC with millisecond precision, exactly as
 * Date.prototype.toISOString writes it. Lists format two per item, so the date part comes
 * from a cache and the time of day is formatted here: a few times faster than toISOString.
 */
export function toTimestamp(epochMillis: number): string {
  if (!Number.isInteger(epochMillis) || epochMillis < 0 || epochMillis >= FOUR_DIGIT_YEARS_END) {
    return new Date(epochMillis).toISOString();
  }
  const day = Math.floor(epochMillis / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= MAX_CACHED_DAYS) dayPrefixes.clear();
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  const ofDay = epochMillis - day * DAY_MS;
  const millis = ofDay % 1000;
  const seconds = Math.floor(ofDay / 1000);
  return (
    `${prefix}${twoDigits(Math.floor(seconds / 3600))}:${twoDigits(Math.floor(seconds / 60) % 60)}:` +
    `${twoDigits(seconds % 60)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`
  );
}
