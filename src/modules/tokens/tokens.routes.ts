// Token routes under /iam/api/v1, authorised by API keys like every other API route.

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { JsonResponse, NoQuery, apiKeySecurity, problemResponses } from '../../http/schemas.js';
import { ApplicationParams } from '../applications/applications.schemas.js';
import { UserParams } from '../users/users.schemas.js';
import type { AccessTokens } from './access-tokens.service.js';
import type { TokenExchange } from './token-exchange.service.js';
import {
  IssuedToken,
  ValidateTokenBody,
  ValidationReport,
  toValidationReport,
} from './tokens.schemas.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['tokens'];

export function registerTokenRoutes(
  app: FastifyInstance,
  deps: { accessTokens: AccessTokens; tokenExchange: TokenExchange },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/applications/:client_id/users/:provider/:identifier/tokens',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'tokens:write' },
      schema: {
        tags,
        operationId: 'issueUserToken',
        summary: 'Issue an access token for an existing user (trusted back ends)',
        description:
          'For a back end that has authenticated the user itself. The token is a JWT signed ' +
          'with the key published at /.well-known/jwks.json; it expires after the ' +
          "application's jwt_expiration_in_minutes. An inactive user gets none (409).",
        security: apiKeySecurity,
        params: UserParams,
        querystring: NoQuery,
        response: {
          201: JsonResponse(IssuedToken, 'A new access token'),
          ...problemResponses(403, 404, 409),
        },
      },
    },
    async function issueUserToken(request, reply) {
      const { client_id, provider, identifier } = request.params;
      const issued = await deps.accessTokens.issueForUser({
        clientId: client_id,
        provider,
        identifier,
      });
      reply.header('cache-control', 'no-store');
      return reply.code(201).send({
        access_token: issued.accessToken,
        token_type: 'Bearer' as const,
        expires_in: issued.expiresIn,
      });
    },
  );

  api.post(
    '/applications/:client_id/external-tokens/validate',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'applications:read' },
      schema: {
        tags,
        operationId: 'validateExternalToken',
        summary: "Dry run: check an outside ID token against the application's configuration",
        description:
          'Runs every check of a token exchange and reports the decoded header and claims, ' +
          'the matched external_token_validation entry, the user it maps to, whether that ' +
          'user exists, and the first check that failed. Issues nothing and creates nothing.',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        body: ValidateTokenBody,
        response: {
          200: JsonResponse(ValidationReport, 'What an exchange of this token would do'),
          ...problemResponses(403, 404, 413, 415),
        },
      },
    },
    async function validateExternalToken(request) {
      const evaluation = await deps.tokenExchange.evaluateForApplication(
        request.params.client_id,
        request.body.token,
      );
      return toValidationReport(evaluation);
    },
  );
}
