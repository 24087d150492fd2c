// fast-check arbitraries for Tessera's requests, generated from the JSON Schemas its routes
// declare (TypeBox schemas, as the OpenAPI document publishes them): valid requests, and
// mutations of them (members removed, added or of the wrong kind, bodies that are not JSON,
// hostile path segments and query strings).

import fc from 'fast-check';
import { createBodyChecker } from '../src/http/validation.js';

export type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
};

const check = createBodyChecker();
/** True when `value` satisfies `schema` as the app's own validator judges it. */
export const satisfies = (schema: object, value: unknown) => check(schema, value).length === 0;

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  email: fc
    .tuple(
      fc.stringMatching(/^[a-z0-9][a-z0-9.+_-]{0,20}$/),
      fc.constantFrom('example.com', 'mail.example.org', 'xn--bcher-kva.example'),
    )
    .map(([local, domain]) => `${local}@${domain}`),
  // fc.webUrl is thorough but slow (milliseconds a value); this covers what Tessera checks.
  'http-url': fc
    .tuple(
      fc.constantFrom('http', 'https', 'HTTPS'),
      fc.stringMatching(/^[a-z][a-z0-9-]{0,12}(\.[a-z]{2,6}){1,2}(:[1-9][0-9]{0,3})?$/),
      fc.stringMatching(/^(\/[a-zA-Z0-9._~%-]{0,10}){0,3}(\?[a-z]=[0-9]{1,3})?$/),
    )
    .map(([scheme, host, path]) => `${scheme}://${host}${path}`),
  'language-tag': fc.constantFrom('en', 'en-GB', 'pt-BR', 'zh-Hant-TW', 'de-CH-1996', 'sgn-BE-FR'),
  'date-time': fc
    .date({
      min: new Date('2025-06-01T00:00:00Z'),
      max: new Date('2030-01-01T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((date) => date.toISOString()),
};

function stringArbitrary(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, 40);
  let base: fc.Arbitrary<string>;
  if (schema.format !== undefined && FORMATS[schema.format] !== undefined) {
    base = FORMATS[schema.format]!;
  } else if (schema.pattern !== undefined) {
    // fast-check does not generate look-arounds; they only bound lengths here, and the
    // filter below applies the whole schema.
    // Negated classes ("no control characters, no whitespace") are generated from a positive
    // class inside each of them: fast-check otherwise filters every character, slowly.
    const pattern = schema.pattern
      .replace(/\(\?[=!][^)]*\)/g, '')
      .replace(/\[\^(?:\\.|[^\]\\])*\]/g, '[a-zA-Z0-9._~\u00e0-\u00ff\u4e00-\u4e20-]');
    base = fc.stringMatching(new RegExp(pattern)).map((text) => text.slice(0, maxLength));
  } else {
    base = fc.string({ minLength, maxLength, unit: 'grapheme' });
  }
  return base.filter((text) => satisfies(schema, text));
}

/** Values that satisfy `schema` (mostly small ones). */
export function valid(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) return fc.oneof(...alternatives.map(valid));
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type) => valid({ ...schema, type })));
  }
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'string':
      return stringArbitrary(schema);
    case 'array': {
      const options = {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      };
      const items = valid(schema.items ?? {});
      return schema.uniqueItems === true
        ? fc.uniqueArray(items, { ...options, selector: (item) => JSON.stringify(item) })
        : fc.array(items, options);
    }
    case 'object': {
      const properties = Object.fromEntries(
        Object.entries(schema.properties ?? {})
          // Members without a type are read-only echoes ("accepted and ignored"): left out.
          .filter(([, property]) => property.type !== undefined || property.enum !== undefined)
          .map(([name, property]) => [name, valid(property)]),
      );
      const required = (schema.required ?? []).filter((name) => name in properties);
      return fc.record(properties, { requiredKeys: required });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 50 }),
  fc.constantFrom(
    '',
    ' ',
    '.',
    '..',
    '\u0000',
    '\ud800',
    'a'.repeat(5_000),
    '%',
    '%zz',
    '😀'.repeat(100),
  ),
);

/** A JSON value of any kind (the wrong kind, usually). */
const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  hostileString,
  fc.constantFrom(null, true, 0, -1, 1e308, [], {}),
);

/** Changes a valid body into one that is (almost always) invalid. */
export function mutatedBody(schema: JsonSchema, body: unknown): fc.Arbitrary<unknown> {
  const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {};
  const members = Object.keys(schema.properties ?? {});
  const mutations: fc.Arbitrary<unknown>[] = [
    anyJson,
    fc
      .record({ unknown: anyJson })
      .map((extra) => ({ ...record, [`x_${Object.keys(extra)[0]}`]: extra.unknown })),
  ];
  if (members.length > 0) {
    mutations.push(
      fc
        .tuple(fc.constantFrom(...members), anyJson)
        .map(([member, value]) => ({ ...record, [member]: value })),
      fc.constantFrom(...members).map((member) => {
        const { [member]: _removed, ...rest } = record as Record<string, unknown>;
        return rest;
      }),
    );
  }
  return fc.oneof(...mutations);
}

/** Raw payloads that are not JSON, or JSON no parser should take. */
export const hostilePayload = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: 100, max: 5_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc
    .integer({ min: 100, max: 5_000 })
    .map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)),
  fc.constantFrom(
    '{"__proto__": {"admin": true}}',
    '{"constructor": {"prototype": {"x": 1}}}',
    '{"a": 1, "a": 2}',
    '{"n": 1e400}',
    '',
    'null',
    '\ufeff{}',
    '{',
  ),
);

export { hostileString };
