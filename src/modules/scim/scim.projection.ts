// `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9): which attributes of a
// resource a response carries. `schemas` and `id` are always returned; names compare in any
// case and may carry the schema URN (`urn:…:User:userName`) or a sub-attribute (`name.formatted`).

import { memberOf } from './scim.evaluate.js';
import { parseAttributePath } from './scim.filter.js';
import { scimBadRequest } from './scim.errors.js';

type Json = Record<string, unknown>;

const ALWAYS = new Set(['schemas', 'id']);

export interface Projection {
  attributes: string[] | null;
  excluded: string[] | null;
}

/** Reads the comma-separated query parameters; invalidValue for a name that is not one. */
export function readProjection(attributes?: string, excludedAttributes?: string): Projection {
  const split = (text: string | undefined) => {
    if (text === undefined || text.trim() === '') return null;
    return text.split(',').map((name) => {
      try {
        const path = parseAttributePath(name.trim());
        return path.subAttribute === null
          ? path.attribute
          : `${path.attribute}.${path.subAttribute}`;
      } catch {
        throw scimBadRequest(
          'invalidValue',
          `"${name.trim().slice(0, 100)}" is not an attribute name.`,
        );
      }
    });
  };
  return { attributes: split(attributes), excluded: split(excludedAttributes) };
}

function keyOf(object: Json, name: string): string | undefined {
  const lower = name.toLowerCase();
  return Object.keys(object).find((key) => key.toLowerCase() === lower);
}

/** The resource with only the requested attributes (or without the excluded ones). */
export function project(resource: Json, projection: Projection): Json {
  if (projection.attributes !== null) {
    const result: Json = {};
    for (const [key, value] of Object.entries(resource)) if (ALWAYS.has(key)) result[key] = value;
    for (const name of projection.attributes) {
      const [top, sub] = name.split('.') as [string, string | undefined];
      const key = keyOf(resource, top);
      if (key === undefined) continue;
      const value = resource[key];
      if (sub === undefined) {
        result[key] = value;
      } else if (Array.isArray(value)) {
        const previous = (result[key] as Json[] | undefined) ?? value.map(() => ({}));
        result[key] = value.map((item: Json, index) => {
          const subKey = keyOf(item, sub);
          return subKey === undefined
            ? previous[index]
            : { ...previous[index], [subKey]: item[subKey] };
        });
      } else if (typeof value === 'object' && value !== null) {
        const subKey = keyOf(value as Json, sub);
        if (subKey !== undefined) {
          result[key] = {
            ...(result[key] as Json | undefined),
            [subKey]: memberOf(value as Json, sub),
          };
        }
      }
    }
    return result;
  }
  if (projection.excluded !== null) {
    const result: Json = { ...resource };
    for (const name of projection.excluded) {
      const [top, sub] = name.split('.') as [string, string | undefined];
      const key = keyOf(result, top);
      if (key === undefined || ALWAYS.has(key)) continue;
      if (sub === undefined) {
        delete result[key];
        continue;
      }
      const value = result[key];
      const without = (item: Json) => {
        const copy = { ...item };
        const subKey = keyOf(copy, sub);
        if (subKey !== undefined) delete copy[subKey];
        return copy;
      };
      if (Array.isArray(value)) result[key] = value.map(without);
      else if (typeof value === 'object' && value !== null) result[key] = without(value as Json);
    }
    return result;
  }
  return resource;
}
