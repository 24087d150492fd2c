// A body from a GET may be sent back as it is: the members that name the resource (client_id;
// provider and identifier) may repeat the path, never differ from it, since identity is
// immutable (400 otherwise). The edge checks them here and hands the service the rest.

import { type InvalidParam, invalid } from '../problems.js';

/** 400 when a body member named in `path` is present and differs from the path's value. */
export function assertEchoesPath(
  path: Readonly<Record<string, string>>,
  body: Readonly<Record<string, unknown>>,
): void {
  const errors: InvalidParam[] = [];
  for (const [name, value] of Object.entries(path)) {
    const given = body[name];
    if (given !== undefined && given !== value) {
      errors.push({
        pointer: `/${name}`,
        detail: `must equal the ${name} in the path (it cannot change)`,
      });
    }
  }
  if (errors.length > 0) throw invalid(errors);
}
