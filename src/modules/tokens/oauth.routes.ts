// The public, key-less endpoints of access tokens: discovery (/.well-known/…) and the OAuth 2.0
// token endpoint. The token endpoint speaks RFC 6749, not RFC 9457: form-encoded requests,
// `{ "error", "error_description" }` answers, `Cache-Control: no-store`.

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AuthFailureLimiter, retryAfterSeconds } from '../../http/auth-failures.js';
import { assertUncompressed, decodeUtf8Body } from '../../http/content-types.js';
import { toProblem } from '../../http/error-handler.js';
import { JsonResponse, noSecurity, unreadableRequestResponse } from '../../http/schemas.js';
import { ProblemError, quoteInput } from '../../problems.js';
import type { AccessTokens } from './access-tokens.service.js';
import {
  JWKS_MAX_AGE_SECONDS,
  SIGNING_ALGORITHMS,
  type SigningKeys,
} from './signing-keys.service.js';
import {
  ID_TOKEN_TYPE,
  OAuthError,
  TOKEN_EXCHANGE_GRANT,
  type TokenExchange,
} from './token-exchange.service.js';
import {
  ExchangeForm,
  ExchangedToken,
  Jwks,
  OAuthErrorBody,
  OpenIdConfiguration,
} from './tokens.schemas.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

export const TOKEN_ENDPOINT = '/oauth2/token';
export const JWKS_PATH = '/.well-known/jwks.json';
const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';
/** Discovery and the JWKS may be cached as long as a rotated key waits before it signs. */
const PUBLIC_CACHE = `public, max-age=${JWKS_MAX_AGE_SECONDS}`;
const tags = ['tokens'];

function tooManyRefusals(waitMs: number): OAuthError {
  const seconds = retryAfterSeconds(waitMs);
  return new OAuthError(
    'temporarily_unavailable',
    `Too many refused token requests from this address; retry in ${seconds} s.`,
    429,
    { 'retry-after': String(seconds) },
  );
}

export function registerOAuthRoutes(
  app: FastifyInstance,
  deps: {
    signingKeys: SigningKeys;
    accessTokens: AccessTokens;
    tokenExchange: TokenExchange;
    /** Refused token requests per client address (the outside token is the credential). */
    failures: AuthFailureLimiter;
    /** Told the outcome of each exchange (metrics). */
    onExchange?: (outcome: string, failedCheck: string | null) => void;
  },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const issuer = deps.accessTokens.issuer;
  // The discovery document never changes while the process runs.
  const discovery = {
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    token_endpoint: `${issuer}${TOKEN_ENDPOINT}`,
    // Required by OpenID Connect Discovery. Tessera has no authorization endpoint, so no
    // response type; `sub` (<provider>|<identifier>) is the same for every application.
    response_types_supported: [],
    subject_types_supported: ['public'],
    grant_types_supported: [TOKEN_EXCHANGE_GRANT],
    token_endpoint_auth_methods_supported: ['none'],
    subject_token_types_supported: [ID_TOKEN_TYPE],
    access_token_signing_alg_values_supported: [...SIGNING_ALGORITHMS],
  };

  api.get(
    JWKS_PATH,
    {
      schema: {
        tags,
        operationId: 'getJwks',
        summary: "The public keys that verify Tessera's access tokens (RFC 7517)",
        security: noSecurity,
        response: { 200: JsonResponse(Jwks, 'JSON Web Key Set'), ...unreadableRequestResponse },
      },
    },
    async function serveJwks(_request, reply) {
      reply.header('cache-control', PUBLIC_CACHE);
      return { keys: await deps.signingKeys.publishedKeys() };
    },
  );

  api.get(
    '/.well-known/openid-configuration',
    {
      schema: {
        tags,
        operationId: 'getOpenIdConfiguration',
        summary: 'Discovery metadata: issuer, jwks_uri, token_endpoint',
        security: noSecurity,
        response: {
          200: JsonResponse(OpenIdConfiguration, 'Server metadata'),
          ...unreadableRequestResponse,
        },
      },
    },
    async function serveDiscovery(_request, reply) {
      reply.header('cache-control', PUBLIC_CACHE);
      return discovery;
    },
  );

  // The token endpoint gets a scope of its own: form bodies only, OAuth errors only.
  app.register(async function oauthTokenEndpoint(scope) {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      FORM_MEDIA_TYPE,
      { parseAs: 'buffer' },
      async function parseFormBody(request: FastifyRequest, body: Buffer) {
        assertUncompressed(request);
        return parseForm(decodeUtf8Body(request, body, 'form data'));
      },
    );
    // Before the body is read: past the limit, an address's tokens are not even parsed.
    scope.addHook('onRequest', async function limitRefusedRequests(request) {
      const waitMs = await deps.failures.retryAfterMs(request.ip);
      if (waitMs > 0) throw tooManyRefusals(waitMs);
    });
    scope.setErrorHandler(async function answerOAuthError(error, request, reply) {
      let failure = toOAuthError(error, request);
      if (failure.status === 400 || failure.status === 401) {
        // Past the limit (counted by another instance until now): refused as over the limit.
        const waitMs = await deps.failures.recordFailure(request.ip);
        if (waitMs > 0) failure = toOAuthError(tooManyRefusals(waitMs), request);
      }
      if (request.routeOptions.url === TOKEN_ENDPOINT) {
        deps.onExchange?.(
          failure.status === 429 ? 'rate_limited' : failure.error,
          failure.failedCheck,
        );
      }
      return sendOAuthError(request, reply, failure);
    });

    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      TOKEN_ENDPOINT,
      {
        bodyLimit: BODY_LIMITS.large,
        schema: {
          tags,
          operationId: 'exchangeToken',
          summary: 'RFC 8693 token exchange: an outside ID token for a Tessera access token',
          description:
            'Form-encoded. No API key: the ID token is the credential. Errors follow RFC 6749 ' +
            "§5.2; 503 `temporarily_unavailable` (with Retry-After) when the provider's keys " +
            'cannot be fetched.',
          consumes: [FORM_MEDIA_TYPE],
          security: noSecurity,
          body: ExchangeForm,
          response: {
            200: JsonResponse(ExchangedToken, 'The access token'),
            400: JsonResponse(
              OAuthErrorBody,
              'invalid_request, invalid_grant, unsupported_grant_type',
            ),
            401: JsonResponse(OAuthErrorBody, 'invalid_client'),
            429: JsonResponse(
              OAuthErrorBody,
              'temporarily_unavailable: too many refused requests from this address',
              ['retry-after'],
            ),
            503: JsonResponse(OAuthErrorBody, 'temporarily_unavailable', ['retry-after']),
          },
        },
      },
      async function exchangeToken(request, reply) {
        const result = await deps.tokenExchange.exchange(
          (request.body ?? {}) as Record<string, string>,
          request.id,
        );
        reply.header('cache-control', 'no-store');
        deps.onExchange?.('issued', null);
        return result;
      },
    );
  });
}

/** RFC 6749 §3.2: parameters without a value are omitted; none may be repeated. */
function parseForm(text: string): Record<string, string> {
  const parameters: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of new URLSearchParams(text)) {
    if (value === '') continue;
    if (Object.hasOwn(parameters, name)) {
      throw new OAuthError(
        'invalid_request',
        `The parameter ${quoteInput(name)} is given more than once.`,
      );
    }
    parameters[name] = value;
  }
  return { ...parameters };
}

function toOAuthError(error: unknown, request: FastifyRequest): OAuthError {
  if (error instanceof OAuthError) return error;
  const failure = toProblem(error, request);
  if (failure.status >= 500) {
    if (failure.status !== 503) request.log.error({ err: error }, 'token request failed');
    return failure.status === 503
      ? new OAuthError('temporarily_unavailable', failure.detail, 503, failure.headers)
      : new OAuthError(
          'server_error',
          `An unexpected error occurred. Quote request id ${request.id}.`,
          500,
        );
  }
  // Fastify's own 415 (another media type) names the one to send; ours name their cause.
  const detail =
    failure.status === 415 && !(error instanceof ProblemError)
      ? `Send the request as ${FORM_MEDIA_TYPE}.`
      : failure.detail;
  return new OAuthError('invalid_request', detail);
}

function sendOAuthError(request: FastifyRequest, reply: FastifyReply, failure: OAuthError) {
  if (failure.error === 'invalid_grant' || failure.error === 'temporarily_unavailable') {
    request.log.info(
      { oauthError: failure.error, detail: failure.description },
      'token exchange refused',
    );
  }
  return reply
    .status(failure.status)
    .headers(failure.headers)
    .header('cache-control', 'no-store')
    .send({ error: failure.error, error_description: failure.description });
}
