// The SCIM edge's HTTP pieces: its scope under /scim/v2/<client_id> (Bearer or apikey keys,
// application/scim+json bodies, the rate limit, its own 404/405), and the one place SCIM error
// bodies are made (RFC 7644 §3.12) from every failure: SCIM's own, the services' problems,
// Fastify's and the store's.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { registerAuthentication, type Authenticate } from '../../http/auth.js';
import type { AuthFailureReason } from '../../http/metrics.js';
import type { AuthFailureLimiter } from '../../http/auth-failures.js';
import { JSON_MEDIA_TYPE, registerJsonBodies } from '../../http/content-types.js';
import { DomainError, type FieldError } from '../../domain-error.js';
import { toProblem } from '../../http/error-handler.js';
import { type RateLimitOptions, registerRateLimit } from '../../http/rate-limit.js';
import { requestPath } from '../../http/request-path.js';
import type { RouteIndex } from '../../http/route-index.js';
import { ERROR_SCHEMA } from './scim.catalog.js';
import { ScimError, type ScimType } from './scim.errors.js';
import { SCIM_MEDIA_TYPE } from './scim.schemas.js';

export const SCIM_PREFIX = '/scim/v2/:client_id';

const SCIM_TYPES: Partial<Record<string, ScimType>> = {
  'validation-failed': 'invalidValue',
  'malformed-request': 'invalidSyntax',
  conflict: 'uniqueness',
};

/** The SCIM attribute that carries each member of a user (users.domain.ts). */
const SCIM_ATTRIBUTES: Record<string, string> = {
  identifier: 'userName',
  name: 'displayName',
  email: 'emails',
  locale: 'locale',
  avatar: 'photos',
  external_id: 'externalId',
  active: 'active',
  roles: 'groups',
};

/** A field error in SCIM's words: the attribute that carries the member, then the rule. */
function describeField(field: FieldError): string {
  let [member = '', ...rest] = field.path.split('/').slice(1);
  // labels/email/type is the type of the e-mail address: emails[type].
  if (member === 'labels' && rest.length > 0) [member = '', ...rest] = rest;
  const attribute = SCIM_ATTRIBUTES[member] ?? member;
  const where = rest.length === 0 ? attribute : `${attribute}[${rest.join('/')}]`;
  return `"${where}" ${field.detail}`;
}

/** A service's domain error as SCIM says it (RFC 7644 §3.12). */
function domainScimError(error: DomainError): {
  error: ScimError;
  headers: Record<string, string>;
} {
  switch (error.code) {
    case 'invalid': {
      const detail =
        error.fields.length === 0
          ? error.detail
          : `${error.fields.slice(0, 3).map(describeField).join('; ')}.`;
      return { error: new ScimError(400, 'invalidValue', detail), headers: {} };
    }
    case 'conflict':
      return { error: new ScimError(409, 'uniqueness', error.detail), headers: {} };
    case 'not_found':
      return { error: new ScimError(404, null, error.detail), headers: {} };
    case 'version_mismatch':
      return { error: new ScimError(412, null, error.detail), headers: {} };
    case 'inactive':
    case 'last_admin_key':
      return { error: new ScimError(409, null, error.detail), headers: {} };
    case 'busy':
      return {
        error: new ScimError(503, null, error.detail),
        headers: { 'retry-after': String(error.retryAfterSeconds ?? 1) },
      };
  }
}

/** Any failure → the SCIM error to send, with the headers it needs (Retry-After, Allow…). */
export function toScimError(
  error: unknown,
  request?: FastifyRequest,
): { error: ScimError; headers: Record<string, string> } {
  if (error instanceof ScimError) return { error, headers: {} };
  if (error instanceof DomainError) return domainScimError(error);
  const failure = toProblem(error, request);
  return {
    error: new ScimError(failure.status, SCIM_TYPES[failure.kind] ?? null, failure.detail),
    headers: failure.headers,
  };
}

export function sendScimError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: ScimError,
  headers: Record<string, string> = {},
) {
  const detail =
    error.status >= 500 && error.status !== 503
      ? `An unexpected error occurred. Quote request id ${request.id}.`
      : error.detail;
  const body = {
    schemas: [ERROR_SCHEMA],
    status: String(error.status),
    ...(error.scimType === null ? {} : { scimType: error.scimType }),
    detail,
  };
  return reply
    .status(error.status)
    .headers(headers)
    .header('content-type', SCIM_MEDIA_TYPE)
    .send(Buffer.from(JSON.stringify(body)));
}

/** Sends a SCIM representation or message. */
export function sendScim(reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).type(SCIM_MEDIA_TYPE).send(body);
}

/** Scheme, host and path of this application's SCIM service: the base of meta.location. */
export function baseUrl(request: FastifyRequest, clientId: string): string {
  return `${request.protocol}://${request.host}/scim/v2/${encodeURIComponent(clientId)}`;
}

/** Sets up the SCIM scope's cross-cutting pieces; routes are added by the caller. */
export async function prepareScimScope(
  scope: FastifyInstance,
  deps: {
    authenticate: Authenticate;
    /** Failed authentication per address, counted with the API's. */
    failures: AuthFailureLimiter;
    rateLimit: RateLimitOptions;
    routes: RouteIndex;
    /** Told why each API key was refused (metrics). */
    onAuthFailure?: (reason: AuthFailureReason) => void;
  },
): Promise<void> {
  registerJsonBodies(scope, [SCIM_MEDIA_TYPE, JSON_MEDIA_TYPE]);
  // SCIM clients send `Authorization: Bearer <token>`; the token here is a Tessera API key.
  registerAuthentication(
    scope,
    deps.authenticate,
    deps.failures,
    { accepted: ['bearer', 'apikey'], challenge: 'Bearer' },
    deps.onAuthFailure,
  );
  await registerRateLimit(scope, deps.rateLimit);

  scope.setErrorHandler(function handleScimError(error, request, reply) {
    const { error: failure, headers } = toScimError(error, request);
    if (failure.status >= 500) request.log.error({ err: error }, 'SCIM request failed');
    return sendScimError(request, reply, failure, headers);
  });

  scope.setNotFoundHandler(function handleUnknownScimRoute(request, reply) {
    const allowed = deps.routes.allowedMethods(requestPath(request));
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      const detail = `${request.method} is not supported here; use ${allowed.join(', ')}.`;
      return sendScimError(request, reply, new ScimError(405, null, detail), {
        allow: allowed.join(', '),
      });
    }
    const detail = `No SCIM endpoint ${request.method} ${requestPath(request).slice(0, 200)}.`;
    return sendScimError(request, reply, new ScimError(404, null, detail));
  });
}
