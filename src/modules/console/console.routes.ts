// The admin console at /console: server-rendered pages, enhanced by htmx (served from this
// origin), in one Fastify scope of its own. Every response carries a strict CSP; every page
// but sign-in needs a session; every POST needs the session's CSRF token and a same-origin
// Origin. Every route declares who may use it (`config.role`, as the API's routes do, or
// `consolePublic`), checked in one hook. The pages call the services directly, with the API's
// schemas and the caller's key.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../../clock.js';
import { BODY_LIMITS } from '../../http/body-limits.js';
import { assertRoles } from '../../http/auth.js';
import type { AuthFailureLimiter } from '../../http/auth-failures.js';
import { toProblem } from '../../http/error-handler.js';
import { type ProblemError, problem } from '../../problems.js';
import {
  CONSOLE_PREFIX,
  SESSION_COOKIE,
  clearSessionCookie,
  setSessionCookie,
} from './console-cookies.js';
import { registerConsoleApplicationRoutes } from './console-applications.routes.js';
import { registerConsoleEventRoutes } from './console-events.routes.js';
import { registerConsoleKeyRoutes } from './console-keys.routes.js';
import { accountPage, usersHomePage } from './console-account.view.js';
import {
  type ConsoleServices,
  formOf,
  formProblem,
  redirectAfterPost,
  requireApplication,
  sendPage,
  sessionOf,
  viewerOf,
} from './console-kit.js';
import { pagesOf } from './console-layout.view.js';
import { errorPage, signInPage } from './console-sign-in.view.js';
import { registerConsoleUserRoutes } from './console-users.routes.js';
import { registerConsoleImportRoutes } from './console-imports.routes.js';
import { ConsoleUploads } from './console-uploads.js';
import { MAX_IMPORT_BYTES } from '../imports/imports.service.js';
import { registerConsoleWebhookRoutes } from './console-webhooks.routes.js';
import { ApplicationChoice, assertBody, formText, parseForm } from './console.schemas.js';
import { type ConsoleSessions, csrfTokenMatches } from './console.service.js';
import type { ConsoleOidc } from './console-oidc.service.js';
import { registerConsoleOidcRoutes } from './console-oidc.routes.js';
import { operatorAccountPage } from './console-oidc.view.js';

/** Every console response: this origin only, never framed, forms post only here. */
export const CONSOLE_CSP =
  "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

export interface ConsoleDeps {
  services: ConsoleServices;
  clock: Clock;
  sessions: ConsoleSessions;
  /** Failed sign-ins count with failed API keys, per address. */
  failures: AuthFailureLimiter;
  /** Sign-in through the organisation's OpenID provider; null: API keys only. */
  oidc: ConsoleOidc | null;
}

/**
 * Refuses, when the app is built, a console route that declares neither the roles it needs
 * (`config.role`; `[]`: any signed-in key) nor `consolePublic`: none is left open by omission.
 */
export function requireDeclaredAccess(route: RouteOptions): void {
  if (route.config?.consolePublic !== true && route.config?.role === undefined) {
    throw new Error(
      `The console route ${String(route.method)} ${route.url} declares no role (config.role, or consolePublic)`,
    );
  }
}

/**
 * 403 unless the signed-in key carries the route's roles and, for a route of one
 * application, may act on it: checked before the handler looks anything up.
 */
function authorizeConsoleRequest(request: FastifyRequest): void {
  const key = sessionOf(request).key;
  assertRoles(key.roles, request.routeOptions.config.role ?? []);
  const clientId = (request.params as { client_id?: unknown } | undefined)?.client_id;
  if (typeof clientId === 'string') requireApplication(request, clientId);
}

/**
 * Whether a state-changing request comes from this console's own pages: the browser's
 * Sec-Fetch-Site when it sends one (another port of this host is "same-site", not
 * "same-origin"), else its Origin when it sends one. Clients that send neither still need the
 * CSRF token.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.host}`;
}

function loadAssets(): Map<string, { body: Buffer; type: string }> {
  const here = new URL('../../../src/modules/console/assets/', import.meta.url);
  const require = createRequire(import.meta.url);
  return new Map([
    [
      'htmx.min.js',
      {
        body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')),
        type: 'text/javascript; charset=utf-8',
      },
    ],
    [
      'console.js',
      { body: readFileSync(new URL('console.js', here)), type: 'text/javascript; charset=utf-8' },
    ],
    ['favicon.svg', { body: readFileSync(new URL('favicon.svg', here)), type: 'image/svg+xml' }],
    [
      'console.css',
      { body: readFileSync(new URL('console.css', here)), type: 'text/css; charset=utf-8' },
    ],
  ]);
}

export async function registerConsole(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const assets = loadAssets();
  await app.register(
    async function consoleScope(scope) {
      await scope.register(cookie);
      scope.decorateRequest('consoleSession', null);
      scope.addHook('onRoute', requireDeclaredAccess);
      // The signed-in forms carry what the API's bodies carry (an application's token
      // validation, a key's applications); the sign-in form, read before any session, a key.
      scope.addHook('onRoute', function limitFormBodies(route) {
        route.bodyLimit ??=
          route.config?.consolePublic === true ? BODY_LIMITS.default : BODY_LIMITS.large;
      });
      scope.addContentTypeParser(
        'application/x-www-form-urlencoded',
        { parseAs: 'string' },
        function parseFormBody(_request, body, done) {
          done(null, parseForm(body as string));
        },
      );

      scope.addHook('onRequest', async function guardConsole(_request, reply) {
        reply.header('content-security-policy', CONSOLE_CSP);
        reply.header('x-frame-options', 'DENY');
        reply.header('referrer-policy', 'same-origin');
        reply.header('cache-control', 'no-store');
      });

      // The time the server spent on each console response (the benchmark reads it).
      scope.addHook('onSend', async function reportServerTime(_request, reply) {
        reply.header('server-timing', `app;dur=${reply.elapsedTime.toFixed(1)}`);
      });

      scope.addHook('preHandler', async function requireSession(request, reply) {
        if (request.routeOptions.config.consolePublic === true) return;
        const sessionId = request.cookies[SESSION_COOKIE];
        const session =
          sessionId === undefined
            ? null
            : await deps.sessions.findSession(sessionId, {
                touch: request.routeOptions.config.consolePassive !== true,
              });
        if (session === null) {
          if (sessionId !== undefined) clearSessionCookie(reply);
          const location = `${CONSOLE_PREFIX}/sign-in${sessionId === undefined ? '' : '?ended=1'}`;
          if (request.headers['hx-request'] === 'true') {
            return reply.header('hx-redirect', location).code(401).send('');
          }
          return request.method === 'GET'
            ? reply.redirect(location, 303)
            : reply
                .code(401)
                .type('text/html; charset=utf-8')
                .send(
                  errorPage(
                    null,
                    401,
                    'Your session has ended (signed out, timed out, or its key was revoked). Sign in again.',
                  ).text,
                );
        }
        request.consoleSession = session;
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          const header = request.headers['x-csrf-token'] as string | undefined;
          // An upload's body is still unread here: its form's token is checked as it is read,
          // before its file (readUpload); a header token is checked here like any other.
          const checkedLater =
            header === undefined && request.routeOptions.config.consoleUpload === true;
          const sent = header ?? formText(formOf(request), '_csrf');
          if (
            !sameOrigin(request) ||
            (!checkedLater && !csrfTokenMatches(session.record, sent || undefined))
          ) {
            throw problem(
              'forbidden',
              'This form did not come from this console page (its CSRF token is missing or wrong). Reload the page and try again.',
            );
          }
        }
        authorizeConsoleRequest(request);
      });

      scope.setErrorHandler(function renderConsoleError(error, request, reply) {
        const failure: ProblemError = toProblem(error, request);
        if (failure.status >= 500) request.log.error({ err: error }, 'console request failed');
        const viewer = request.consoleSession === null ? null : viewerOf(request);
        return reply
          .code(failure.status)
          .headers(failure.headers)
          .type('text/html; charset=utf-8')
          .send(
            errorPage(
              viewer,
              failure.status,
              failure.status >= 500 ? 'Something went wrong; try again.' : failure.detail,
            ).text,
          );
      });

      scope.get(
        '/assets/:name',
        { config: { consolePublic: true }, schema: { hide: true } },
        function serveAsset(request, reply) {
          const asset = assets.get((request.params as { name: string }).name);
          if (asset === undefined) throw problem('not-found', 'No such console asset.');
          return reply
            .header('cache-control', 'public, max-age=3600')
            .type(asset.type)
            .send(asset.body);
        },
      );

      scope.get(
        '/',
        { config: { role: [] }, schema: { hide: true } },
        function openConsole(request, reply) {
          // The first page the key's roles open (a users key of one application: its users).
          const home = pagesOf(viewerOf(request))[0]?.href ?? `${CONSOLE_PREFIX}/account`;
          return reply.redirect(home, 303);
        },
      );

      scope.get(
        '/account',
        { config: { role: [] }, schema: { hide: true } },
        function showAccount(request, reply) {
          const { key, operator } = sessionOf(request);
          return sendPage(
            reply,
            200,
            operator === null
              ? accountPage(viewerOf(request), key)
              : operatorAccountPage(viewerOf(request), operator),
          );
        },
      );

      scope.get(
        '/users',
        { config: { role: 'users:read' }, schema: { hide: true } },
        function openUsers(request, reply) {
          const clientId = ((request.query as { client_id?: string }).client_id ?? '').trim();
          if (clientId === '')
            return sendPage(reply, 200, usersHomePage(viewerOf(request), '', new Map()));
          try {
            assertBody(ApplicationChoice, { client_id: clientId });
          } catch (error) {
            const { errors } = formProblem(error);
            return sendPage(reply, 400, usersHomePage(viewerOf(request), clientId, errors));
          }
          requireApplication(request, clientId);
          return reply.redirect(`${CONSOLE_PREFIX}/applications/${clientId}/users`, 303);
        },
      );

      scope.get(
        '/sign-in',
        { config: { consolePublic: true }, schema: { hide: true } },
        async function showSignIn(request, reply) {
          const sessionId = request.cookies[SESSION_COOKIE];
          if (sessionId !== undefined && (await deps.sessions.findSession(sessionId)) !== null) {
            return reply.redirect(CONSOLE_PREFIX, 303);
          }
          const query = request.query as Record<string, string | undefined>;
          const notice =
            query['signed-out'] !== undefined
              ? 'You are signed out.'
              : query.revoked !== undefined
                ? 'You revoked the key this session ran on, which ended it. Sign in with another key.'
                : query.ended !== undefined
                  ? 'Your session has ended; sign in again.'
                  : null;
          return reply
            .type('text/html; charset=utf-8')
            .send(signInPage({ notice, provider: deps.oidc?.providerName ?? null }).text);
        },
      );

      scope.post(
        '/sign-in',
        { config: { consolePublic: true }, schema: { hide: true } },
        async function signIn(request, reply) {
          if (!sameOrigin(request)) {
            throw problem('forbidden', 'Sign in from this console page.');
          }
          const tooManySignIns = (waitMs: number) =>
            problem('rate-limited', 'Too many failed sign-ins from this address; wait a minute.', {
              headers: { 'retry-after': String(Math.ceil(waitMs / 1000)) },
            });
          const waitMs = await deps.failures.retryAfterMs(request.ip);
          if (waitMs > 0) throw tooManySignIns(waitMs);
          const secret = formText(formOf(request), 'key').trim();
          const result = secret === '' ? null : await deps.sessions.signIn(secret);
          if (result === null || !result.ok) {
            if (result !== null) {
              // Past the limit (counted by another instance until now): refused as over it.
              const overFor = await deps.failures.recordFailure(request.ip);
              if (overFor > 0) throw tooManySignIns(overFor);
            }
            return reply
              .code(secret === '' ? 400 : 401)
              .type('text/html; charset=utf-8')
              .send(
                signInPage({
                  provider: deps.oidc?.providerName ?? null,
                  keyError:
                    secret === ''
                      ? 'API key is required.'
                      : 'API key does not work: it is unknown, revoked or expired.',
                }).text,
              );
          }
          setSessionCookie(request, reply, result.sessionId);
          return redirectAfterPost(reply, CONSOLE_PREFIX);
        },
      );

      scope.post(
        '/sign-out',
        { config: { role: [] }, schema: { hide: true } },
        async function signOut(request, reply) {
          await deps.sessions.signOut(request.cookies[SESSION_COOKIE]!);
          clearSessionCookie(reply);
          return redirectAfterPost(reply, `${CONSOLE_PREFIX}/sign-in?signed-out=1`);
        },
      );

      if (deps.oidc !== null) {
        registerConsoleOidcRoutes(scope, { oidc: deps.oidc, sessions: deps.sessions });
      }
      registerConsoleApplicationRoutes(scope, deps.services);
      registerConsoleUserRoutes(scope, deps.services);
      const uploads = new ConsoleUploads({ clock: deps.clock, maxBytes: MAX_IMPORT_BYTES });
      scope.addHook('onClose', () => uploads.close());
      registerConsoleImportRoutes(scope, deps.services, { clock: deps.clock, uploads });
      registerConsoleKeyRoutes(scope, deps.services, deps.clock);
      registerConsoleEventRoutes(scope, deps.services);
      registerConsoleWebhookRoutes(scope, deps.services);
    },
    { prefix: CONSOLE_PREFIX },
  );
}
