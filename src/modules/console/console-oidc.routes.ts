// Sign-in through the organisation's OpenID provider (console-oidc.service.ts does the
// protocol): GET /console/oidc/start sends the browser to the provider, and the provider sends
// it back to GET /console/oidc/callback, which opens a console session or shows why it did not.
// Both are public: the person has no session yet.

import type { FastifyInstance } from 'fastify';
import {
  CONSOLE_PREFIX,
  SIGN_IN_COOKIE,
  clearSignInCookie,
  setSessionCookie,
  setSignInCookie,
} from './console-cookies.js';
import { signedInPage, signInFailedPage } from './console-oidc.view.js';
import {
  type ConsoleOidc,
  type OidcFailure,
  ProviderUnreachableError,
  SIGN_IN_LIFETIME_MS,
} from './console-oidc.service.js';
import { sendPage } from './console-kit.js';
import type { ConsoleSessions } from './console.service.js';

/** The status of each way a callback can fail. */
const FAILURE_STATUS: Record<OidcFailure, number> = {
  'unknown-state': 400,
  'other-browser': 400,
  expired: 400,
  'provider-error': 401,
  'provider-unreachable': 502,
  rejected: 401,
  'missing-claim': 403,
  'no-access': 403,
};

export function registerConsoleOidcRoutes(
  scope: FastifyInstance,
  deps: { oidc: ConsoleOidc; sessions: ConsoleSessions },
): void {
  scope.get(
    '/oidc/start',
    { config: { consolePublic: true }, schema: { hide: true } },
    async function startOidcSignIn(request, reply) {
      try {
        const started = await deps.oidc.begin();
        setSignInCookie(request, reply, started.browserBinding, SIGN_IN_LIFETIME_MS / 1000);
        return reply.redirect(started.authorizationUrl, 303);
      } catch (error) {
        if (!(error instanceof ProviderUnreachableError)) throw error;
        request.log.warn(
          { reason: error.message },
          'console sign-in: the OpenID provider is unreachable',
        );
        return sendPage(reply, 502, signInFailedPage(deps.oidc.providerName, error.message));
      }
    },
  );

  scope.get(
    '/oidc/callback',
    { config: { consolePublic: true }, schema: { hide: true } },
    async function finishOidcSignIn(request, reply) {
      const query = request.url.includes('?')
        ? request.url.slice(request.url.indexOf('?') + 1)
        : '';
      const result = await deps.oidc.complete(query, request.cookies[SIGN_IN_COOKIE]);
      clearSignInCookie(reply);
      if (!result.ok) {
        // The failure's kind and its words (which name a check, never a token or a code).
        request.log.warn(
          { failure: result.failure, reason: result.detail },
          'console sign-in through the OpenID provider refused',
        );
        return sendPage(
          reply,
          FAILURE_STATUS[result.failure],
          signInFailedPage(deps.oidc.providerName, result.detail),
        );
      }
      const { sessionId, session } = await deps.sessions.signInOperator(result.operator);
      request.log.info(
        { operator: result.operator.subject, roles: session.key.roles },
        'console operator signed in through the OpenID provider',
      );
      setSessionCookie(request, reply, sessionId);
      // A page, not a redirect: this navigation began on the provider's site, so a browser
      // would not send the new SameSite=Strict cookie with a redirect that follows it; the
      // page's own refresh is a navigation of this console's, which does.
      return sendPage(reply, 200, signedInPage(result.operator.name, CONSOLE_PREFIX));
    },
  );
}
