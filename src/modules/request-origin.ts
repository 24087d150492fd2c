import type { FastifyRequest } from 'fastify';
import type { ChangeOrigin } from './changes.js';

/** The origin of a change an API request asks for: its authenticated key and request id. */
export function requestOrigin(request: FastifyRequest): ChangeOrigin {
  return { actor: { type: 'api_key', id: request.apiKey?.id ?? null }, requestId: request.id };
}

/** The origin of a change a SCIM client pushes (authenticated by an API key, too). */
export function scimOrigin(request: FastifyRequest): ChangeOrigin {
  return { actor: { type: 'scim', id: request.apiKey?.id ?? null }, requestId: request.id };
}
