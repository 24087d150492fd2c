// The signing keys under /iam/api/v1, for operators: list them (never a private part), rotate
// (a new key, published now, signing later) and, when one has leaked, revoke it. The CLI and
// the console call the same service.

import { requestOrigin } from '../request-origin.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { JsonResponse, NoQuery, apiKeySecurity, problemResponses } from '../../http/schemas.js';
import { problem } from '../../problems.js';
import { requestPath } from '../../http/request-path.js';
import type { SigningKeys } from './signing-keys.service.js';
import {
  SigningKey,
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

  api.get(
    '/signing-keys/:kid',
    {
      config: { role: 'keys:read' },
      schema: {
        tags,
        operationId: 'getSigningKey',
        summary: 'Get a signing key',
        description: 'The key with its state and times; never its private part.',
        security: apiKeySecurity,
        params: SigningKeyParams,
        querystring: NoQuery,
        response: {
          200: JsonResponse(SigningKey, 'The signing key'),
          ...problemResponses(403, 404),
        },
      },
    },
    async function getSigningKey(request) {
      return toSigningKeyResource(await deps.signingKeys.findSigningKey(request.params.kid));
    },
  );

  api.post(
    '/signing-keys/rotate',
    {
      config: { role: 'keys:write' },
      schema: {
        tags,
        operationId: 'rotateSigningKey',
        summary: 'Rotate: add a signing key that signs 10 minutes from now',
        description:
          'The new key (of the configured algorithm, IAM_TOKEN_ALG) is published in the JWKS at ' +
          'once and starts signing at `activates_at`, 10 minutes later, so every instance and ' +
          'every verifier caching the JWKS has it before a token carries its kid (the first key ' +
          'of an empty store signs at once). The key signing now keeps signing until then, and ' +
          'stays published until every token it signed has expired. Recorded as ' +
          '`signing_key.rotated`. Signing keys serve every application, so a key restricted ' +
          'to some applications gets 403. Takes no body.',
        security: apiKeySecurity,
        querystring: NoQuery,
        response: {
          201: JsonResponse(SigningKey, 'The new signing key', ['location']),
          ...problemResponses(403),
        },
      },
    },
    async function rotateSigningKey(request, reply) {
      // Checked before anything else, like every restriction.
      requireUnrestricted(request.apiKey!.applications);
      const added = await deps.signingKeys.rotate(requestOrigin(request));
      reply.header('location', `${requestPath(request).replace(/\/rotate$/, '')}/${added.kid}`);
      reply.code(201);
      return toSigningKeyResource(await deps.signingKeys.findSigningKey(added.kid));
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
      requireUnrestricted(request.apiKey!.applications);
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

/** Signing keys serve every application: a key restricted to some may only look at them. */
function requireUnrestricted(applications: readonly string[] | null): void {
  if (applications !== null) {
    throw problem(
      'forbidden',
      'This API key is restricted to some applications; signing keys serve them all.',
    );
  }
}
