// Keyset pagination over HTTP: opaque, tamper-evident cursors and the `Link: rel="next"`
// header. A cursor names the last row of a page and the list it came from; it carries an
// HMAC under a secret kept in the store, so every instance accepts every other's cursors.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalid } from '../problems.js';
import { requestPath } from './request-path.js';

const MAC_LENGTH = 16;

export class CursorCodec {
  readonly #secret: Buffer;

  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'base64url');
  }

  /** A cursor for `position` within the list identified by `scope`. */
  encode(scope: string, position: unknown): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${payload}.${this.#mac(scope, payload).toString('base64url')}`;
  }

  /** The position inside a cursor issued for `scope`; 400 for anything else. */
  decode(scope: string, cursor: string): unknown {
    const [payload, mac, extra] = cursor.split('.');
    if (payload !== undefined && mac !== undefined && extra === undefined) {
      const expected = this.#mac(scope, payload);
      const given = Buffer.from(mac, 'base64url');
      // Base64url decoding ignores the spare bits of the last character; comparing the
      // canonical spelling too makes every altered character count.
      if (
        given.length === expected.length &&
        timingSafeEqual(given, expected) &&
        given.toString('base64url') === mac
      ) {
        try {
          return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
        } catch {
          // fall through: a valid MAC over unparseable JSON cannot be ours
        }
      }
    }
    throw invalidCursor();
  }

  #mac(scope: string, payload: string): Buffer {
    return createHmac('sha256', this.#secret)
      .update(scope)
      .update('\u0000')
      .update(payload)
      .digest()
      .subarray(0, MAC_LENGTH);
  }
}

export function invalidCursor() {
  return invalid([
    { parameter: 'cursor', detail: 'is not a cursor issued for this list (malformed or altered)' },
  ]);
}

/**
 * Sends a page: sets `Link: <…>; rel="next"` when there is a next page, pointing at the same
 * path and query with the new cursor.
 */
export function linkNextPage(
  request: FastifyRequest,
  reply: FastifyReply,
  nextCursor: string | null,
): void {
  if (nextCursor === null) return;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
    if (name !== 'cursor' && value !== undefined) query.set(name, String(value));
  }
  query.set('cursor', nextCursor);
  reply.header('link', `<${requestPath(request)}?${query.toString()}>; rel="next"`);
}
