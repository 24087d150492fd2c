// Strong ETags and conditional requests (RFC 9110 §13). A resource's version token is its
// ETag; writes are conditional UPDATEs on that token, so the database arbitrates races.

import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { problem } from '../problems.js';

export interface Versioned {
  etag: string;
}

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

/** If-None-Match with weak comparison: true when the client's copy is current (→ 304). */
export function ifNoneMatchMatches(header: string | undefined, version: string): boolean {
  if (header === undefined) return false;
  const tags = parseEntityTags(header);
  if (tags === '*') return true;
  return tags !== null && tags.some((tag) => tag.opaque === version);
}

// A write loses its race only when another write landed between our read and our UPDATE;
// a handful of attempts settles any realistic contention.
const MAX_ATTEMPTS = 8;

function preconditionFailed() {
  return problem(
    'precondition-failed',
    'If-Match does not match the current ETag of the resource.',
  );
}

function tooMuchContention() {
  return problem(
    'conflict',
    'The resource changed repeatedly while this request was applied; retry.',
  );
}

/**
 * Read → check If-Match → compute → conditional write, retried when another write won the
 * race. With If-Match, a lost race surfaces as 412 on the next read, as it must.
 * `change` returns null when nothing would change: then nothing is written and the
 * resource (with its updated_at and ETag) is returned as it is.
 */
export async function updateConditionally<R extends Versioned>(options: {
  load: () => Promise<R | undefined>;
  notFound: () => Error;
  ifMatch: string | undefined;
  change: (current: R) => R | null;
  save: (next: R, expectedVersion: string) => Promise<boolean>;
}): Promise<R> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = await options.load();
    if (current === undefined) throw options.notFound();
    if (!ifMatchAllows(options.ifMatch, current.etag)) throw preconditionFailed();
    const next = options.change(current);
    if (next === null) return current;
    if (await options.save(next, current.etag)) return next;
  }
  throw tooMuchContention();
}

/** Read → check If-Match → conditional delete, retried like updateConditionally. */
export async function deleteConditionally<R extends Versioned>(options: {
  load: () => Promise<R | undefined>;
  notFound: () => Error;
  ifMatch: string | undefined;
  remove: (current: R) => Promise<boolean>;
}): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = await options.load();
    if (current === undefined) throw options.notFound();
    if (!ifMatchAllows(options.ifMatch, current.etag)) throw preconditionFailed();
    if (await options.remove(current)) return;
  }
  throw tooMuchContention();
}

/** A fresh version token: 96 random bits, so a recreated resource never reuses an ETag. */
export function newVersion(): string {
  return randomBytes(12).toString('base64url');
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
