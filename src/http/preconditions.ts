// Strong ETags and conditional requests over HTTP (RFC 9110 §13): the ETag header, If-Match
// turned into a test of a version (the services' write precondition), and If-None-Match
// answered with 304.

import type { FastifyReply, FastifyRequest } from 'fastify';

export function formatEtag(version: string): string {
  return `"${version}"`;
}

const ENTITY_TAG = /^\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*$/;

/** The entity tags listed in If-Match / If-None-Match; '*' as the string '*'; null if unparseable. */
function parseEntityTags(header: string): '*' | { weak: boolean; opaque: string }[] | null {
  if (header.trim() === '*') return '*';
  const tags = [];
  for (const part of header.split(',')) {
    const match = ENTITY_TAG.exec(part);
    if (match === null) return null;
    tags.push({ weak: match[1] !== undefined, opaque: match[2]! });
  }
  return tags;
}

/** If-Match with strong comparison. Absent → true; malformed → false (the condition fails). */
export function ifMatchAllows(header: string | undefined, version: string): boolean {
  if (header === undefined) return true;
  const tags = parseEntityTags(header);
  if (tags === '*') return true;
  return tags !== null && tags.some((tag) => !tag.weak && tag.opaque === version);
}

/**
 * The request's If-Match as a test of the resource's current version: what a service takes as
 * its write's precondition.
 */
export function ifMatchCondition(request: FastifyRequest): (version: string) => boolean {
  const header = request.headers['if-match'];
  return (version) => ifMatchAllows(header, version);
}

/** If-None-Match with weak comparison: true when the client's copy is current (→ 304). */
export function ifNoneMatchMatches(header: string | undefined, version: string): boolean {
  if (header === undefined) return false;
  const tags = parseEntityTags(header);
  if (tags === '*') return true;
  return tags !== null && tags.some((tag) => tag.opaque === version);
}

/**
 * Sends a single-resource representation with its strong ETag. On GET and HEAD, answers
 * 304 without a body when If-None-Match says the client's copy is current.
 */
export function sendVersioned(
  request: FastifyRequest,
  reply: FastifyReply,
  version: string,
  representation: unknown,
  status = 200,
): FastifyReply {
  reply.header('etag', formatEtag(version));
  const conditional = request.method === 'GET' || request.method === 'HEAD';
  if (conditional && ifNoneMatchMatches(request.headers['if-none-match'], version)) {
    return reply.code(304).send();
  }
  return reply.code(status).send(representation);
}
