// Paging of a SCIM list, shared by Users and Groups: index paging (startIndex, count; RFC 7644
// §3.4.2.4) or cursor paging (RFC 9865), and the ListResponse of a page.

import type { CursorCodec } from '../../http/pagination.js';
import { ProblemError } from '../../problems.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, listResponse } from './scim.discovery.js';
import { scimBadRequest } from './scim.errors.js';
import type { ListQuery } from './scim.schemas.js';

/** One page of a list: index paging (startIndex, count) or cursor paging (RFC 9865). */
export interface ListPaging {
  /** Index mode: the 1-based index of the first row. Null in cursor mode. */
  startIndex: number | null;
  /** Cursor mode: the decoded position, or null for the first page. */
  after: string | null;
  count: number;
}

/**
 * The largest startIndex taken: larger ones (`99999999999999999999`) page from here, past any
 * list, and still fit the stores' offsets (a PostgreSQL bigint; a JavaScript number is exact).
 */
export const MAX_START_INDEX = Number.MAX_SAFE_INTEGER;

export function readPaging(
  query: ListQuery,
  cursors: CursorCodec,
  cursorScope: string,
): ListPaging {
  if (query.sortBy !== undefined || query.sortOrder !== undefined) {
    throw scimBadRequest('invalidValue', 'Sorting is not supported (see /ServiceProviderConfig).');
  }
  const count = Math.min(Math.max(query.count ?? DEFAULT_PAGE_SIZE, 0), MAX_PAGE_SIZE);
  if (query.cursor === undefined)
    return {
      startIndex: Math.min(Math.max(query.startIndex ?? 1, 1), MAX_START_INDEX),
      after: null,
      count,
    };
  if (query.startIndex !== undefined) {
    throw scimBadRequest('invalidValue', 'Use either startIndex or cursor, not both.');
  }
  if (query.cursor === '') return { startIndex: null, after: null, count };
  let decoded: unknown;
  try {
    decoded = cursors.decode(cursorScope, query.cursor);
  } catch (error) {
    if (error instanceof ProblemError) {
      throw scimBadRequest(
        'invalidCursor',
        'The cursor was not issued for this list (malformed or altered).',
      );
    }
    throw error;
  }
  if (typeof decoded !== 'string')
    throw scimBadRequest('invalidCursor', 'The cursor is not valid.');
  return { startIndex: null, after: decoded, count };
}

/** A ListResponse for a page; `positionOf` gives the cursor position of the last item. */
export function pagedResponse<T>(options: {
  paging: ListPaging;
  items: T[];
  total: number;
  render: (item: T) => Record<string, unknown>;
  positionOf: (item: T) => string;
  cursors: CursorCodec;
  cursorScope: string;
}) {
  const { paging, total } = options;
  const items = options.items.slice(0, paging.count);
  const resources = items.map(options.render);
  if (paging.startIndex !== null)
    return listResponse(resources, { totalResults: total, startIndex: paging.startIndex });
  const last = items.at(-1);
  const more = options.items.length > paging.count && last !== undefined;
  const { startIndex: _unused, ...response } = listResponse(resources, { totalResults: total });
  return {
    ...response,
    ...(more
      ? { nextCursor: options.cursors.encode(options.cursorScope, options.positionOf(last)) }
      : {}),
  };
}
