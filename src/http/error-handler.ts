// The one error handler. Whatever fails — validation, a service, the store, Fastify itself,
// an unknown route — leaves as RFC 9457 problem details. A 5xx never shows its cause: the
// log gets the error, the client gets the request id to quote.

import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../domain-error.js';
import { type ProblemError, invalid, problem, quoteInput, toProblemBody } from '../problems.js';
import { DuplicateError, MissingParentError, StoreUnavailableError } from '../store/errors.js';
import { describeBodyLimit } from './body-limits.js';
import { isDebugEnabled } from './logging.js';
import { nodeHttp } from './node-http.js';
import { requestPath } from './request-path.js';
import type { RouteIndex } from './route-index.js';
import { toInvalidParams } from './validation.js';

const { STATUS_CODES } = nodeHttp;

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Seconds a client should wait before retrying after the store was unavailable. */
const STORE_RETRY_AFTER_SECONDS = 2;

const fastifyCodes: Record<
  string,
  (error: FastifyError, request: FastifyRequest | undefined) => ProblemError
> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    problem('unsupported-media-type', 'Send the body as application/json.'),
  FST_ERR_CTP_BODY_TOO_LARGE: (_error, request) =>
    problem(
      'payload-too-large',
      request === undefined
        ? 'The request body exceeds the limit of this route.'
        : `The request body exceeds the limit of this route, ${describeBodyLimit(request.routeOptions.bodyLimit)}.`,
    ),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    problem('malformed-request', 'Content-Length does not match the body.'),
  FST_ERR_BAD_URL: () => problem('malformed-request', 'The URL is not validly percent-encoded.'),
  FST_ERR_MAX_PARAM_LENGTH: () => problem('malformed-request', 'A path segment is too long.'),
};

const statusKinds: Record<number, Parameters<typeof problem>[0]> = {
  400: 'malformed-request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  409: 'conflict',
  412: 'precondition-failed',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
  429: 'rate-limited',
  431: 'headers-too-large',
  503: 'store-unavailable',
};

/** A service's domain error as the API's problem: its field errors point into the body. */
function domainProblem(error: DomainError): ProblemError {
  switch (error.code) {
    case 'invalid':
      return error.fields.length === 0
        ? problem('validation-failed', error.detail)
        : invalid(error.fields.map((field) => ({ pointer: field.path, detail: field.detail })));
    case 'not_found':
      return problem('not-found', error.detail);
    case 'conflict':
      return problem('conflict', error.detail);
    case 'version_mismatch':
      return problem('precondition-failed', error.detail);
    case 'inactive':
      return problem('user-inactive', error.detail);
    case 'last_admin_key':
      return problem('last-admin-key', error.detail);
    case 'busy':
      return problem('write-contention', error.detail, {
        headers: { 'retry-after': String(error.retryAfterSeconds ?? 1) },
        cause: error,
      });
  }
}

/** Any error → the problem to send (the request, when known, names its route's body limit). */
export function toProblem(error: unknown, request?: FastifyRequest): ProblemError {
  if (error instanceof Error && error.name === 'ProblemError') return error as ProblemError;
  if (error instanceof DomainError) return domainProblem(error);
  const fastifyError = error as FastifyError;
  if (fastifyError.validation !== undefined) {
    return invalid(
      toInvalidParams(fastifyError.validation as never, fastifyError.validationContext ?? 'body'),
    );
  }
  if (error instanceof StoreUnavailableError) {
    const detail =
      error.scope === 'writes'
        ? 'The database cannot accept changes right now (out of space or read-only); reads still work. Retry later.'
        : 'The database is unavailable; retry shortly.';
    return problem('store-unavailable', detail, {
      headers: { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) },
      cause: error,
    });
  }
  if (error instanceof DuplicateError) return problem('conflict', 'The resource already exists.');
  if (error instanceof MissingParentError)
    return problem('not-found', 'The application does not exist.');
  const byCode = fastifyError.code === undefined ? undefined : fastifyCodes[fastifyError.code];
  if (byCode !== undefined) return byCode(fastifyError, request);
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return problem(statusKinds[status] ?? 'malformed-request', fastifyError.message);
  }
  return problem('internal', 'An unexpected error occurred.', { cause: error });
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, failure: ProblemError) {
  const body = toProblemBody(failure, requestPath(request));
  if (failure.status === 500) body.detail = `${failure.detail} Quote request id ${request.id}.`;
  // Sent as bytes: Fastify would append "; charset=utf-8" to any JSON-like type it
  // serializes, and application/problem+json is registered without parameters (RFC 9457).
  return reply
    .status(failure.status)
    .headers(failure.headers)
    .header('content-type', PROBLEM_MEDIA_TYPE)
    .send(Buffer.from(JSON.stringify(body)));
}

export function registerErrorHandling(app: FastifyInstance, routes: RouteIndex): void {
  app.setErrorHandler(function handleError(error, request, reply) {
    const failure = toProblem(error, request);
    if (failure.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    } else if (isDebugEnabled(request.log)) {
      request.log.debug({ problem: failure.kind, detail: failure.detail }, 'request refused');
    }
    return sendProblem(request, reply, failure);
  });

  app.setNotFoundHandler(function handleUnknownRoute(request, reply) {
    return sendProblem(request, reply, unknownRouteProblem(request, routes));
  });
}

/**
 * A path under `prefix` that ends in a slash names no resource: 404, whatever the method.
 * Without this, `/applications/` reached the route for one application with an empty id (400)
 * and `/applications/a1/` no route at all (404). The detail names the path without the slash.
 */
export function trailingSlashProblem(request: FastifyRequest, prefix: string): ProblemError | null {
  const path = requestPath(request);
  if (!path.endsWith('/') || !path.startsWith(`${prefix}/`)) return null;
  return problem(
    'not-found',
    `No route ${request.method} ${quoteInput(path)}: paths take no trailing slash ` +
      `(use ${quoteInput(path.replace(/\/+$/, ''))}).`,
  );
}

/** The answer to a request no route serves: 405 with Allow on a known path, else 404. */
export function unknownRouteProblem(request: FastifyRequest, routes: RouteIndex): ProblemError {
  const path = requestPath(request);
  const allowed = routes.allowedMethods(path);
  // A route for this very method that still ended here (a missing static file under
  // /docs) is a plain 404, not a 405 that lists the method it was called with.
  if (allowed.length > 0 && !allowed.includes(request.method)) {
    return problem(
      'method-not-allowed',
      `${request.method} is not supported here; use ${allowed.join(', ')}.`,
      { headers: { allow: allowed.join(', ') } },
    );
  }
  return problem('not-found', `No route ${request.method} ${quoteInput(path)}.`);
}

/**
 * Errors Node.js meets before Fastify sees a request (headers too large, a request that
 * never finishes arriving, unparseable HTTP), answered as problem details too.
 */
export function handleClientError(
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const failure =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? problem('headers-too-large', 'The request headers exceed 16 KiB.')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? problem('request-timeout', 'The request did not arrive in time.')
        : problem('malformed-request', 'The request is not valid HTTP.');
  const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket : Buffer.alloc(0);
  const requestLine = packet.toString('latin1').split('\r\n', 1)[0] ?? '';
  const path = /^[A-Z]+ (\/[^ ?]*)/.exec(requestLine)?.[1];
  const body = JSON.stringify(toProblemBody(failure, path));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\n` +
        `Content-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** CONNECT asks for a tunnel, which Tessera is not: 405, as a problem, then close. */
export function answerConnect(_request: unknown, socket: Socket): void {
  const failure = problem('method-not-allowed', 'CONNECT is not supported: this is not a proxy.');
  const body = JSON.stringify(toProblemBody(failure, undefined));
  socket.end(
    `HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, POST, PUT, PATCH, DELETE\r\n` +
      `Content-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}
