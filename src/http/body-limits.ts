// How large a request body each route reads. Fastify refuses a body whose Content-Length is
// over the route's limit before reading a byte of it (413, and the connection is closed), and
// stops reading a chunked body as soon as it passes the limit, so a client can make the server
// hold at most a route's limit per connection. A request answered before its body is read
// (401, 404, 429…) whose body is larger than its route reads, or of unknown length, has its
// connection closed with the answer instead of Node reading the rest to discard it. Each limit
// is the largest body a client sends with every member at its longest (the schema's limits),
// with room for pretty-printed JSON.

import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

const KiB = 1024;

export const BODY_LIMITS = {
  /**
   * Every route that names no other limit, and a request no route serves (which is answered
   * before its body is read anyway): API keys, signing keys, webhooks' tests, the console's
   * sign-in form.
   */
  default: 16 * KiB,
  /**
   * A user (the API's or SCIM's): 100 roles of 64 characters and 100 scopes of 128 are about
   * 20 KiB in ASCII; the rest fits in 4 KiB. Multi-byte text takes up to three times that.
   */
  user: 64 * KiB,
  /**
   * An application: `external_token_validation` and `authorization`, 32 KiB each serialized,
   * plus 2,000 characters of description; webhooks and API keys that name up to 1,000
   * applications; the token endpoints, which take an outside ID token of up to 64 KiB; the
   * console's forms, which carry the same.
   */
  large: 128 * KiB,
  /** AuthZEN batches of up to 1,000 evaluations, and SCIM Groups with their members. */
  batch: 256 * KiB,
} as const;

/** "16 KiB", for the 413's detail. */
export function describeBodyLimit(bytes: number): string {
  return bytes % KiB === 0 ? `${bytes / KiB} KiB` : `${bytes} bytes`;
}

/**
 * Closes the connection after an answer sent before the request's body was read, when that
 * body is larger than the route reads or of unknown length (chunked): Node would otherwise
 * read the rest to discard it, and a client sending 250 KiB bodies without a key would cost
 * the server the reading and the garbage of every one. From the refusal on, nothing more is
 * read from the socket, and it is closed as soon as the answer is handed to the kernel rather
 * than after Node has shut its side down: every read copies up to 64 KiB into a buffer that
 * lives until V8 next collects, and 32 connections sending 250 KiB bodies had grown the
 * resident set by 50-80 MB that way (by 15-30 MB with this; Node.js 24.21). A client still
 * sending gets a reset after the answer, as it did when the connection closed a moment later.
 */
export function closeUnreadLargeBodies(app: FastifyInstance): void {
  app.addHook('onSend', function closeUnreadBody(request, reply, payload, done) {
    if (request.raw.complete || reply.statusCode < 400) {
      done(null, payload);
      return;
    }
    const declared = request.headers['content-length'];
    if (declared === undefined || Number(declared) > request.routeOptions.bodyLimit) {
      reply.header('connection', 'close');
      // inject()'s requests (tests) have a stand-in socket, without these.
      const socket = request.raw.socket as Partial<Socket>;
      if (socket.pause !== undefined && socket.destroy !== undefined) {
        socket.pause();
        reply.raw.once('finish', () => socket.destroy?.());
      }
    }
    done(null, payload);
  });
}
