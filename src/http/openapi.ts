// The OpenAPI document, from the route schemas. The schemas that validate requests stay whole
// (Ajv reads them as they are); the document is then given what code generators and Swagger UI
// need: every schema named with `x-schema-name` becomes one entry of components.schemas that
// every use refers to, custom formats are described with standard keywords, and each request
// body carries its example at the place Swagger UI's "Try it out" takes it from.

import type { TSchema } from 'typebox';

/** Schema annotation: the name of the schema in the document's components.schemas. */
export const SCHEMA_NAME_KEYWORD = 'x-schema-name';

/**
 * Names the schema (in place, so TypeBox's own hidden members stay): the document refers to it
 * as #/components/schemas/<name>.
 */
export function named<T extends TSchema>(name: string, schema: T): T {
  (schema as Record<string, unknown>)[SCHEMA_NAME_KEYWORD] = name;
  return schema;
}

/** The name given with named(), if any. */
export function schemaName(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const name = (schema as Record<string, unknown>)[SCHEMA_NAME_KEYWORD];
  return typeof name === 'string' ? name : undefined;
}

/** Schema annotation: the name of Tessera's own format where the document gives a standard one. */
export const CUSTOM_FORMAT_KEYWORD = 'x-format';

/**
 * Custom formats, said with standard keywords for other tools. Validation keeps the stricter
 * rule (each format's `x-rule` says it in words, `x-format` names it).
 */
const STANDARD_FORMATS: Record<string, Record<string, unknown>> = {
  // Any absolute URI is a `uri`; ours must also be http: or https: with a host.
  'http-url': {
    format: 'uri',
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]',
    [CUSTOM_FORMAT_KEYWORD]: 'http-url',
  },
  // No standard format names BCP 47 tags: the keyword goes, the rule stays in `x-rule`.
  'language-tag': { [CUSTOM_FORMAT_KEYWORD]: 'language-tag' },
};

/**
 * A schema of the document as the validator reads it: each $ref replaced by its component (and
 * the annotations beside it), and Tessera's own formats back in place of the standard words.
 * For tools that generate or check values with the app's own rules (the property tests).
 */
export function asValidated(schema: unknown, components: Record<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((item) => asValidated(item, components));
  if (!isObject(schema)) return schema;
  if (typeof schema.$ref === 'string') {
    const { $ref, ...siblings } = schema;
    const target = components[$ref.replace('#/components/schemas/', '')];
    return asValidated({ ...(target as Json), ...siblings }, components);
  }
  const result: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === CUSTOM_FORMAT_KEYWORD) continue;
    result[key] =
      key === 'enum' || key === 'const' || key === 'examples' || key === 'default'
        ? value
        : asValidated(value, components);
  }
  const custom = schema[CUSTOM_FORMAT_KEYWORD];
  if (typeof custom === 'string') {
    result.format = custom;
    if (custom === 'http-url') delete result.pattern;
  }
  return result;
}

/** Members whose difference from a named schema may be stated beside its $ref. */
const ANNOTATIONS = new Set(['description', 'examples', 'default', 'readOnly', 'deprecated']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameJson(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

class ComponentCollector {
  readonly schemas: Record<string, Json> = {};

  /** The schema with each named schema inside it (or itself) replaced by a $ref. */
  refer(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((item) => this.refer(item));
    if (!isObject(schema)) return schema;
    const name = schemaName(schema);
    const body = this.walk(schema);
    if (name === undefined) return body;
    const known = this.schemas[name];
    if (known === undefined) {
      this.schemas[name] = body;
      return { $ref: `#/components/schemas/${name}` };
    }
    // The same schema again, or the same one with other annotations (a description of its use).
    const siblings: Json = {};
    for (const key of new Set([...Object.keys(known), ...Object.keys(body)])) {
      if (sameJson(known[key], body[key])) continue;
      if (!ANNOTATIONS.has(key) || body[key] === undefined) {
        throw new Error(`two different schemas are named ${name} (they differ in ${key})`);
      }
      siblings[key] = body[key];
    }
    return { $ref: `#/components/schemas/${name}`, ...siblings };
  }

  private walk(schema: Json): Json {
    const result: Json = {};
    for (const [key, value] of Object.entries(schema)) {
      if (key === SCHEMA_NAME_KEYWORD) continue;
      if (key === 'format' && typeof value === 'string' && value in STANDARD_FORMATS) {
        Object.assign(result, STANDARD_FORMATS[value]);
        continue;
      }
      if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
        result[key] = Object.fromEntries(
          Object.entries(value as Json).map(([member, inner]) => [member, this.refer(inner)]),
        );
      } else if (key === 'enum' || key === 'const' || key === 'examples' || key === 'default') {
        result[key] = value;
      } else {
        result[key] = this.refer(value);
      }
    }
    return result;
  }
}

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The document @fastify/swagger built, with named schemas moved to components.schemas, custom
 * formats described in standard terms, and each request body's first schema example as the
 * example of its media types.
 */
export function finishDocument(document: Json): Json {
  const collector = new ComponentCollector();
  const paths = document.paths as Record<string, Json>;
  for (const item of Object.values(paths)) {
    for (const method of OPERATION_METHODS) {
      const operation = item[method] as Json | undefined;
      if (operation === undefined) continue;
      const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
      for (const media of Object.values(body?.content ?? {})) {
        const examples = (media.schema as Json | undefined)?.examples;
        if (media.example === undefined && Array.isArray(examples) && examples.length > 0) {
          media.example = examples[0];
        }
      }
      for (const parameter of (operation.parameters ?? []) as Json[]) {
        parameter.schema = collector.refer(parameter.schema);
      }
      if (body?.content !== undefined) {
        for (const media of Object.values(body.content))
          media.schema = collector.refer(media.schema);
      }
      for (const response of Object.values((operation.responses ?? {}) as Record<string, Json>)) {
        const content = response.content as Record<string, Json> | undefined;
        for (const media of Object.values(content ?? {}))
          media.schema = collector.refer(media.schema);
      }
    }
  }
  const components = (document.components ?? {}) as Json;
  const sorted = Object.fromEntries(
    Object.entries(collector.schemas).sort(([left], [right]) => left.localeCompare(right)),
  );
  return { ...document, components: { ...components, schemas: sorted } };
}
