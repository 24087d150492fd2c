// Request bodies: JSON only, parsed safely. `application/json` everywhere;
// `application/merge-patch+json` (RFC 7396) on PATCH, which also takes plain JSON.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { problem } from '../problems.js';

export const JSON_MEDIA_TYPE = 'application/json';
export const MERGE_PATCH_MEDIA_TYPE = 'application/merge-patch+json';

/** Deeper documents are refused before parsing: no resource needs them, and deep nesting is a DoS vector. */
export const MAX_JSON_DEPTH = 64;

function mediaTypeOf(request: FastifyRequest): { type: string; charset: string | null } {
  const [type = '', ...parameters] = (request.headers['content-type'] ?? '').split(';');
  let charset: string | null = null;
  for (const parameter of parameters) {
    const [name, value] = parameter.split('=').map((part) => part.trim());
    if (name?.toLowerCase() === 'charset' && value !== undefined) {
      charset = value.replace(/^"(.*)"$/, '$1').toLowerCase();
    }
  }
  return { type: type.trim().toLowerCase(), charset };
}

/** True when the JSON text nests arrays/objects deeper than `limit` (strings are skipped). */
export function exceedsJsonDepth(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index++; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x7b || code === 0x5b) {
      if (++depth > limit) return true;
    } else if (code === 0x7d || code === 0x5d) {
      depth--;
    }
  }
  return false;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Whether the text could hold a number too large for a double: a digit followed by an
 * exponent, or 309 digits in a row (it may be inside a string, or a harmless 1e5; then the
 * exact check of the reviver decides). One pass over the text: a regular expression such as
 * /[0-9]{309}/ restarts at every digit of a run and costs 300 steps per digit.
 */
export function mayHoldNonFiniteNumber(text: string): boolean {
  let digits = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code >= 0x30 && code <= 0x39) {
      if (++digits >= 309) return true;
    } else {
      if (digits > 0 && (code === 0x65 || code === 0x45)) return true;
      digits = 0;
    }
  }
  return false;
}

function rejectNonFiniteNumbers(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new SyntaxError('a number is too large to represent (it would become Infinity)');
  }
  return value;
}

/** Refuses a compressed body: Tessera reads bodies as sent. */
export function assertUncompressed(request: FastifyRequest): void {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw problem(
      'unsupported-media-type',
      `Content-Encoding ${encoding} is not supported; send the body uncompressed.`,
    );
  }
}

/** The body as text: UTF-8 only, whatever the charset parameter claims otherwise. */
export function decodeUtf8Body(request: FastifyRequest, body: Buffer, what: string): string {
  const { charset } = mediaTypeOf(request);
  if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
    throw problem(
      'unsupported-media-type',
      `Only UTF-8 ${what} is accepted, not charset=${charset}.`,
    );
  }
  try {
    return UTF8.decode(body);
  } catch {
    throw problem('malformed-request', 'The request body is not valid UTF-8.');
  }
}

function parseJsonBody(request: FastifyRequest, body: Buffer): unknown {
  // A request no route serves is answered 404 or 405 whatever its body: reading it is all it
  // may cost (the security review measured 200–460 ms to parse hostile ones sent to /nope).
  if (request.is404) return undefined;
  assertUncompressed(request);
  // Only PATCH takes a merge patch; POST and PUT replace, so they take plain JSON.
  if (mediaTypeOf(request).type === MERGE_PATCH_MEDIA_TYPE && request.method !== 'PATCH') {
    throw problem('unsupported-media-type', `Send the body as ${JSON_MEDIA_TYPE}.`);
  }
  const text = decodeUtf8Body(request, body, 'JSON');
  if (/^\s*$/.test(text)) {
    throw problem('malformed-request', 'The request body is empty; send a JSON document.');
  }
  if (exceedsJsonDepth(text, MAX_JSON_DEPTH)) {
    throw problem(
      'malformed-request',
      `JSON nested deeper than ${MAX_JSON_DEPTH} levels is not accepted.`,
    );
  }
  try {
    const reviver = mayHoldNonFiniteNumber(text) ? rejectNonFiniteNumbers : undefined;
    return secureJson.parse(text, reviver, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw problem('malformed-request', `The body is not valid JSON: ${(error as Error).message}`);
  }
}

/** JSON bodies under `mediaTypes` (default: JSON and, for PATCH, merge patch), parsed safely. */
export function registerJsonBodies(
  app: FastifyInstance,
  mediaTypes: string[] = [JSON_MEDIA_TYPE, MERGE_PATCH_MEDIA_TYPE],
): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    mediaTypes,
    { parseAs: 'buffer' },
    async function parseJson(request: FastifyRequest, body: string | Buffer) {
      return parseJsonBody(request, Buffer.isBuffer(body) ? body : Buffer.from(body));
    },
  );
}
