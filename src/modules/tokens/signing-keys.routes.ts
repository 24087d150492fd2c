// The signing keys under /iam/api/v1, for operators: list them (never a private part) and,
// when one has leaked, revoke it.

import { requestOrigin } from '../request-origin.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { JsonResponse, NoQuery, apiKeySecurity, problemResponses } from '../../http/schemas.js';
import { problem } from '../../problems.js';
import type { SigningKeys } from './signing-keys.service.js';
import {
  SigningKeyList,
  SigningKeyParams,
  SigningKeyRevocation,
  toSigningKeyResource,
} from './signing-keys.schemas.js';

const tags = ['tokens'];

export function registerSigningKeyRoutes(
  app: FastifyInstance,
  deps: { signingKeys: SigningKeys },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/signing-keys',
    {
      config: { role: 'keys:read' },
      schema: {
        tags,
        operationId: 'listSigningKeys',
        summary: 'List the keys that sign access tokens, oldest first',
        description: 'Each key with its state and times; never a private key.',
        security: apiKeySecurity,
        querystring: NoQuery,
        response: {
          200: JsonResponse(SigningKeyList, 'Every signing key'),
          ...problemResponses(403),
        },
      },
    },
    async function listSigningKeys() {
      const keys = await deps.signingKeys.listSigningKeys();
      return { items: keys.map(toSigningKeyResource) };
    },
  );

  api.post(
    '/signing-keys/:kid/revoke',
    {
      config: { role: 'keys:write' },
      schema: {
        tags,
        operationId: 'revokeSigningKey',
        summary: 'Revoke a leaked signing key: it leaves the JWKS at once',
        description:
          'Tokens the key signed stop verifying as soon as verifiers refetch the JWKS (they do ' +
          'on the first token with an unknown kid). When the key is the one signing, a new key ' +
          'that signs at once is stored first. Revoking a revoked key changes nothing. Signing ' +
          'keys serve every application, so a key restricted to some applications gets 403.',
        security: apiKeySecurity,
        params: SigningKeyParams,
        querystring: NoQuery,
        response: {
          200: JsonResponse(SigningKeyRevocation, 'The revoked key and the key that signs now'),
          ...problemResponses(403, 404),
        },
      },
    },
    async function revokeSigningKey(request) {
      // Checked before any lookup, like every restriction.
      if (request.apiKey!.applications !== null) {
        throw problem(
          'forbidden',
          'This API key is restricted to some applications; signing keys serve them all.',
        );
      }
      const revocation = await deps.signingKeys.revokeSigningKey(
        request.params.kid,
        requestOrigin(request),
      );
      return {
        revoked: toSigningKeyResource(revocation.revoked),
        active: toSigningKeyResource(revocation.active),
      };
    },
  );
}
