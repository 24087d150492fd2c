// JSON Merge Patch (RFC 7396) for free-form JSON members such as external_token_validation.

/** A JSON object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Applies `patch` to `target` per RFC 7396 §2: objects merge recursively, null removes. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else result[name] = applyMergePatch(result[name], value);
  }
  return result;
}
