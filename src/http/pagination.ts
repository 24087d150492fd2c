// Keyset pagination over HTTP: opaque, tamper-evident cursors and the `Link: rel="next"`
// header. A cursor names the last row of a page and the list it came from; it carries an
// HMAC under a secret kept in the store, so every instance accepts every other's cursors.

import { type KeyObject, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { invalid } from '../problems.js';
import { DEFAULT_PAGE_SIZE, type PageQuery } from './schemas.js';
import { requestPath } from './request-path.js';

const MAC_LENGTH = 16;

/** The store setting holding the cursors' HMAC secret (created on first start). */
export const CURSOR_SECRET_SETTING = 'cursor-secret';

export class CursorCodec {
  /** A key object, made once: given the raw bytes, every HMAC would make its own. */
  readonly #secret: KeyObject;

  constructor(secret: string) {
    this.#secret = createSecretKey(Buffer.from(secret, 'base64url'));
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

/** What serving a page of a list takes, however its items are written. */
interface PageOptions<Position> {
  request: FastifyRequest;
  reply: FastifyReply;
  cursors: CursorCodec;
  /** Identifies the list (and its filters): a cursor is valid only where it was issued. */
  scope: string;
  query: Static<typeof PageQuery>;
  /** The position a decoded cursor holds, or invalidCursor() for anything else. */
  toPosition: (decoded: unknown) => Position;
  count: () => Promise<number>;
}

/**
 * Serves one page of a keyset-paginated list: decodes the cursor into a position, fetches
 * the page, encodes the next cursor from the page's last item, sets the Link header, and
 * counts everything when asked.
 */
export async function servePage<Item, Position, Resource>(
  options: RowsPageOptions<Item, Position, Resource>,
): Promise<RowsPage<Resource>> {
  const { after, limit } = pageStart(options);
  return pageFromRows(options, after, limit);
}

/** What servePage takes beyond PageOptions: how the list's items are read and shown. */
type RowsPageOptions<Item, Position, Resource> = PageOptions<Position> & {
  positionOf: (item: Item) => unknown;
  /** Up to `limit` items after the position. */
  fetch: (after: Position | null, limit: number) => Promise<Item[]>;
  toResource: (item: Item) => Resource;
};

type RowsPage<Resource> = { items: Resource[]; next_cursor: string | null; total?: number };

/** The page of up to `limit` items after `after`, read as items (servePage). */
async function pageFromRows<Item, Position, Resource>(
  options: RowsPageOptions<Item, Position, Resource>,
  after: Position | null,
  limit: number,
): Promise<RowsPage<Resource>> {
  // One row more than the page tells whether there is a next page.
  const rows = await options.fetch(after, limit + 1);
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const nextCursor = nextPage(
    options,
    rows.length > limit && last !== undefined ? options.positionOf(last) : undefined,
  );
  return {
    items: items.map(options.toResource),
    next_cursor: nextCursor,
    ...(options.query.include_total === true ? { total: await options.count() } : {}),
  };
}

/**
 * servePage for a list whose store may write the page's items as JSON text: the page's JSON,
 * byte for byte what the rows' page serializes to. When the store writes none, `rows` reads
 * the page as items and `serialize` writes it (the cursor is decoded once either way).
 */
export async function servePageText<Item, Position, Resource>(
  options: PageOptions<Position> & {
    positionOf: (position: Position) => unknown;
    /** Up to `limit` items after the position, as text, and whether more follow; or null. */
    fetch: (
      after: Position | null,
      limit: number,
    ) => Promise<{ items: string; last: Position | null; more: boolean } | null>;
    rows: Omit<RowsPageOptions<Item, Position, Resource>, keyof PageOptions<Position>>;
    serialize: (page: RowsPage<Resource>) => string;
  },
): Promise<string> {
  const { after, limit } = pageStart(options);
  const page = await options.fetch(after, limit);
  if (page === null) {
    return options.serialize(await pageFromRows({ ...options, ...options.rows }, after, limit));
  }
  const nextCursor = nextPage(
    options,
    page.more && page.last !== null ? options.positionOf(page.last) : undefined,
  );
  const total = options.query.include_total === true ? `,"total":${await options.count()}` : '';
  return `{"items":[${page.items}],"next_cursor":${JSON.stringify(nextCursor)}${total}}`;
}

/** Where a page starts (the cursor's position, or the beginning) and how long it is. */
function pageStart<Position>(options: PageOptions<Position>): {
  after: Position | null;
  limit: number;
} {
  const { cursors, scope, query } = options;
  return {
    after:
      query.cursor === undefined ? null : options.toPosition(cursors.decode(scope, query.cursor)),
    limit: query.limit ?? DEFAULT_PAGE_SIZE,
  };
}

/** The next page's cursor (null when `position` is undefined: no next page), linked. */
function nextPage(options: PageOptions<unknown>, position: unknown): string | null {
  const nextCursor =
    position === undefined ? null : options.cursors.encode(options.scope, position);
  linkNextPage(options.request, options.reply, nextCursor);
  return nextCursor;
}

/** toPosition for lists keyed by one string (client_id, key id). */
export function stringPosition(decoded: unknown): string {
  if (typeof decoded !== 'string') throw invalidCursor();
  return decoded;
}
