// What every console page's routes share: the services they call, the signed-in session and
// what it may do, the form of a POST, and how an answer is sent (a page, a redirect, a form
// with its field errors). The console's scope (console.routes.ts) fills in the session.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../domain-error.js';
import { toProblem } from '../../http/error-handler.js';
import { ProblemError, problem } from '../../problems.js';
import type { Role } from '../../roles.js';
import type { ApiKeysService } from '../api-keys/api-keys.service.js';
import type { ApplicationsService } from '../applications/applications.service.js';
import type { AuthzenService } from '../authzen/authzen.service.js';
import type { ChangeOrigin } from '../changes.js';
import type { EventsService } from '../events/events.service.js';
import type { ImportsService } from '../imports/imports.service.js';
import type { SigningKeys } from '../tokens/signing-keys.service.js';
import type { TokenExchange } from '../tokens/token-exchange.service.js';
import type { UsersService } from '../users/users.service.js';
import type { WebhooksService } from '../webhooks/webhooks.service.js';
import { type FieldErrors, type Viewer, fieldErrorsOf } from './console-layout.view.js';
import type { FormFields } from './console.schemas.js';
import type { ConsoleSession } from './console.service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Console routes served without a session (sign-in, assets). */
    consolePublic?: boolean;
    /** Console routes a page calls by itself (live updates): they do not count as activity. */
    consolePassive?: boolean;
    /**
     * A console upload (multipart, streamed to its handler): a form posted without script has
     * its CSRF token checked by the handler, before the file (see readUpload).
     */
    consoleUpload?: boolean;
  }
  interface FastifyRequest {
    consoleSession: ConsoleSession | null;
  }
}

/** The services the console's pages call: the API's own, with the signed-in key as caller. */
export interface ConsoleServices {
  applications: ApplicationsService;
  users: UsersService;
  imports: ImportsService;
  apiKeys: ApiKeysService;
  signingKeys: SigningKeys;
  tokenExchange: TokenExchange;
  events: EventsService;
  webhooks: WebhooksService;
  authzen: AuthzenService;
}

/** The session of a request that passed the session hook. */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  return request.consoleSession!;
}

/**
 * The origin of a change made in the console: the session's API key, or the operator signed in
 * through the OpenID provider (by their subject there); the request id.
 */
export function consoleOrigin(request: FastifyRequest): ChangeOrigin {
  const { key, operator } = sessionOf(request);
  return {
    actor:
      operator === null
        ? { type: 'api_key', id: key.id }
        : { type: 'operator', id: operator.subject },
    requestId: request.id,
  };
}

export function viewerOf(request: FastifyRequest): Viewer {
  const { key, record, operator } = sessionOf(request);
  return {
    keyId: key.id,
    keyName: key.name,
    provider: operator === null ? null : operator.issuer,
    roles: key.roles as Role[],
    applications: key.applications,
    csrfToken: record.csrfToken,
  };
}

/** 403 unless the key may act on the application; checked before any lookup. */
export function requireApplication(request: FastifyRequest, clientId: string): void {
  const allowed = sessionOf(request).key.applications;
  if (allowed !== null && !allowed.includes(clientId)) {
    throw problem('forbidden', 'This API key is restricted to other applications.');
  }
}

export function formOf(request: FastifyRequest): FormFields {
  return (request.body as FormFields | undefined) ?? {};
}

/** The notice a redirect asked for (`?notice=saved`), in the page's own words, or null. */
export function noticeOf(request: FastifyRequest, notices: Record<string, string>): string | null {
  const code = (request.query as Record<string, string | undefined>).notice;
  return code === undefined ? null : (notices[code] ?? null);
}

/** A validation or conflict problem becomes field errors and a message; anything else is thrown. */
export function formProblem(error: unknown): {
  errors: FieldErrors;
  message: string | null;
  status: number;
} {
  if (!(error instanceof ProblemError || error instanceof DomainError)) throw error;
  // The services' domain errors read as the API's problems: the same pointers name the fields.
  const failure = toProblem(error);
  if (![400, 409, 412].includes(failure.status)) throw error;
  const errors = fieldErrorsOf(failure.errors);
  const message =
    failure.status === 412
      ? 'Someone changed this meanwhile: the page now shows their version; apply your change again.'
      : errors.size === 0
        ? failure.detail
        : null;
  return { errors, message, status: failure.status };
}

/** Sends a rendered page (or part of one, for htmx) with its status. */
export function sendPage(reply: FastifyReply, status: number, body: { text: string }) {
  return reply.code(status).type('text/html; charset=utf-8').send(body.text);
}

/** After a successful POST: see the result with a GET (htmx follows it too). */
export function redirectAfterPost(reply: FastifyReply, location: string) {
  return reply.redirect(location, 303);
}
