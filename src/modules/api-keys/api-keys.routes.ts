import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requestOrigin } from '../request-origin.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type CursorCodec, servePage, stringPosition } from '../../http/pagination.js';
import { ifMatchCondition, sendVersioned } from '../../http/preconditions.js';
import { requestPath } from '../../http/request-path.js';
import {
  IfMatchHeaders,
  IfNoneMatchHeaders,
  JsonResponse,
  NoContent,
  NoQuery,
  NotModified,
  apiKeySecurity,
  problemResponses,
} from '../../http/schemas.js';
import type { ApiKeyRecord } from '../../store/store.js';
import {
  ApiKey,
  ApiKeyListQuery,
  ApiKeyPage,
  ApiKeyParams,
  CreateApiKeyBody,
  CreatedApiKey,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  RotateApiKeyBody,
  toApiKeyResource,
} from './api-keys.schemas.js';
import { type ApiKeysService, type KeyCaller, apiKeyVersion } from './api-keys.service.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['api-keys'];
const CURSOR_SCOPE = 'api-keys';

function callerOf(request: FastifyRequest): KeyCaller {
  // Every route here declares a role, so authentication has set the key.
  return request.apiKey!;
}

export function registerApiKeyRoutes(
  app: FastifyInstance,
  deps: { apiKeys: ApiKeysService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { apiKeys, cursors } = deps;

  api.post(
    '/api-keys',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'keys:write' },
      schema: {
        tags,
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description:
          'The secret is in `key`, in this response only. A key can grant only a subset of its own ' +
          'roles, applications and lifetime.',
        security: apiKeySecurity,
        querystring: NoQuery,
        body: CreateApiKeyBody,
        response: {
          201: JsonResponse(CreatedApiKey, 'The key, with its secret', ['location', 'etag']),
          ...problemResponses(403, 413, 415),
        },
      },
    },
    async function createApiKey(request, reply) {
      const { name, roles, applications = null, expires_at: expiresAt = null } = request.body;
      const issued = await apiKeys.createApiKey(
        callerOf(request),
        {
          name: name.trim(),
          roles,
          applications,
          expiresAt: expiresAt === null ? null : Date.parse(expiresAt),
        },
        requestOrigin(request),
      );
      reply.header('location', `${requestPath(request)}/${issued.record.id}`);
      reply.header('cache-control', 'no-store');
      const representation = { ...toApiKeyResource(issued.record), key: issued.secret };
      return sendVersioned(request, reply, apiKeyVersion(issued.record), representation, 201);
    },
  );

  api.get(
    '/api-keys',
    {
      config: { role: 'keys:read' },
      schema: {
        tags,
        operationId: 'listApiKeys',
        summary: 'List API keys, oldest first',
        description:
          'A restricted key sees only keys restricted within its own applications. Revoked keys ' +
          'are kept, with `revoked_at`, and listed with `include_revoked=true`.',
        security: apiKeySecurity,
        querystring: ApiKeyListQuery,
        response: {
          200: JsonResponse(ApiKeyPage, 'A page of keys', ['link']),
          ...problemResponses(403),
        },
      },
    },
    async function listApiKeys(request, reply) {
      const caller = callerOf(request);
      const { include_revoked: includeRevoked = false, ...page } = request.query;
      const filter = { includeRevoked };
      return servePage({
        request,
        reply,
        cursors,
        // A cursor of one list is not valid in the other.
        scope: includeRevoked ? `${CURSOR_SCOPE}:with-revoked` : CURSOR_SCOPE,
        query: page,
        toPosition: stringPosition,
        positionOf: (key: ApiKeyRecord) => key.id,
        fetch: (after, limit) => apiKeys.listApiKeys(caller, filter, after, limit),
        count: () => apiKeys.countApiKeys(caller, filter),
        toResource: toApiKeyResource,
      });
    },
  );

  api.get(
    '/api-keys/:id',
    {
      config: { role: 'keys:read' },
      schema: {
        tags,
        operationId: 'getApiKey',
        summary: 'Get an API key (never its secret)',
        security: apiKeySecurity,
        params: ApiKeyParams,
        querystring: NoQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: JsonResponse(ApiKey, 'The key', ['etag']),
          304: NotModified,
          ...problemResponses(403, 404),
        },
      },
    },
    async function getApiKey(request, reply) {
      const key = await apiKeys.findApiKey(callerOf(request), request.params.id);
      return sendVersioned(request, reply, apiKeyVersion(key), toApiKeyResource(key));
    },
  );

  api.delete(
    '/api-keys/:id',
    {
      config: { role: 'keys:write' },
      schema: {
        tags,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description:
          'Takes effect on every instance within one second. The key is kept, with `revoked_at`; ' +
          'revoking it again changes nothing. A key can revoke only keys whose roles and ' +
          'restriction lie within its own (else 403). The last working key with every role and ' +
          'no application restriction is never revoked: 409 `last-admin-key` (create another ' +
          'such key first), so the service always has an administrator.',
        security: apiKeySecurity,
        params: ApiKeyParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...problemResponses(403, 404, 409, 412) },
      },
    },
    async function revokeApiKey(request, reply) {
      await apiKeys.revokeApiKey(
        callerOf(request),
        request.params.id,
        requestOrigin(request),
        ifMatchCondition(request),
      );
      return reply.code(204).send(null);
    },
  );

  api.post(
    '/api-keys/:id/rotate',
    {
      config: { role: 'keys:write' },
      schema: {
        tags,
        operationId: 'rotateApiKey',
        summary: 'Give an API key a new secret, the old one working for a while longer',
        description:
          'The new secret is in `key`, in this response only. The previous secret keeps working ' +
          'until `previous_expires_at` (`previous_valid_for_seconds`, default one day; 0 ends it ' +
          'at once); rotating again ends that overlap. A key can rotate only keys it could have ' +
          'created (roles, restriction and lifetime within its own, else 403).',
        security: apiKeySecurity,
        params: ApiKeyParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        body: RotateApiKeyBody,
        response: {
          200: JsonResponse(CreatedApiKey, 'The key, with its new secret', ['etag']),
          ...problemResponses(403, 404, 409, 412, 413, 415),
        },
      },
    },
    async function rotateApiKey(request, reply) {
      const seconds = request.body.previous_valid_for_seconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
      const rotated = await apiKeys.rotateApiKey(
        callerOf(request),
        request.params.id,
        seconds * 1000,
        requestOrigin(request),
        ifMatchCondition(request),
      );
      reply.header('cache-control', 'no-store');
      const representation = { ...toApiKeyResource(rotated.record), key: rotated.secret };
      return sendVersioned(request, reply, apiKeyVersion(rotated.record), representation);
    },
  );
}
