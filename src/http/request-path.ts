import type { FastifyRequest } from 'fastify';

/** The request path as the client sent it (still percent-encoded), without the query. */
export function requestPath(request: FastifyRequest): string {
  const query = request.url.indexOf('?');
  return query === -1 ? request.url : request.url.slice(0, query);
}
