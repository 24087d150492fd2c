import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
  mergePatchMediaTypes,
  problemResponses,
} from '../../http/schemas.js';
import type { DeliveryRecord, WebhookRecord } from '../../store/store.js';
import type { KeyCaller } from '../api-keys/api-keys.service.js';
import { requestOrigin } from '../request-origin.js';
import {
  CreateWebhookBody,
  DeliveryListQuery,
  DeliveryPage,
  PatchWebhookBody,
  ReplayBody,
  ReplayResult,
  Webhook,
  WebhookListQuery,
  WebhookPage,
  WebhookParams,
  WebhookWithSecret,
  toDeliveryResource,
  toWebhookResource,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['webhooks'];
const CURSOR_SCOPE = 'webhooks';

function callerOf(request: FastifyRequest): KeyCaller {
  // Every route here declares a role, so authentication has set the key.
  return request.apiKey!;
}

/** The ETag of a webhook: its stored version. */
function sendWebhook(
  request: FastifyRequest,
  reply: FastifyReply,
  webhook: WebhookRecord,
  status = 200,
): FastifyReply {
  return sendVersioned(request, reply, webhook.etag, toWebhookResource(webhook), status);
}

export function registerWebhookRoutes(
  app: FastifyInstance,
  deps: { webhooks: WebhooksService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { webhooks, cursors } = deps;

  api.post(
    '/webhooks',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Create a webhook',
        description:
          'Events that occur from now on and match `event_types` (and `client_ids`) are POSTed ' +
          'to `url`, signed per the Standard Webhooks specification with the secret in ' +
          '`secret` — in this response only.',
        security: apiKeySecurity,
        querystring: NoQuery,
        body: CreateWebhookBody,
        response: {
          201: JsonResponse(WebhookWithSecret, 'The webhook, with its secret', [
            'location',
            'etag',
          ]),
          ...problemResponses(403, 413, 415),
        },
      },
    },
    async function createWebhook(request, reply) {
      const body = request.body;
      const created = await webhooks.createWebhook(
        callerOf(request),
        {
          url: body.url,
          eventTypes: body.event_types,
          clientIds: body.client_ids ?? null,
          description: body.description ?? '',
          enabled: body.enabled ?? true,
        },
        requestOrigin(request),
      );
      reply.header('location', `${requestPath(request)}/${created.record.id}`);
      reply.header('cache-control', 'no-store');
      const representation = { ...toWebhookResource(created.record), secret: created.secret };
      return sendVersioned(request, reply, created.record.etag, representation, 201);
    },
  );

  api.get(
    '/webhooks',
    {
      config: { role: 'webhooks:read' },
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List webhooks',
        description: 'A restricted key sees only webhooks confined to its applications.',
        security: apiKeySecurity,
        querystring: WebhookListQuery,
        response: {
          200: JsonResponse(WebhookPage, 'A page of webhooks', ['link']),
          ...problemResponses(403),
        },
      },
    },
    async function listWebhooks(request, reply) {
      const caller = callerOf(request);
      return servePage({
        request,
        reply,
        cursors,
        scope: CURSOR_SCOPE,
        query: request.query,
        toPosition: stringPosition,
        positionOf: (webhook: WebhookRecord) => webhook.id,
        fetch: (after, limit) => webhooks.listWebhooks(caller, after, limit),
        count: () => webhooks.countWebhooks(caller),
        toResource: toWebhookResource,
      });
    },
  );

  api.get(
    '/webhooks/:id',
    {
      config: { role: 'webhooks:read' },
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'Get a webhook (never its secret)',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: NoQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: JsonResponse(Webhook, 'The webhook', ['etag']),
          304: NotModified,
          ...problemResponses(403, 404),
        },
      },
    },
    async function getWebhook(request, reply) {
      return sendWebhook(
        request,
        reply,
        await webhooks.findWebhook(callerOf(request), request.params.id),
      );
    },
  );

  api.patch(
    '/webhooks/:id',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'patchWebhook',
        summary: 'Change some members of a webhook (JSON Merge Patch)',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        consumes: mergePatchMediaTypes,
        body: PatchWebhookBody,
        response: {
          200: JsonResponse(Webhook, 'The webhook, changed', ['etag']),
          ...problemResponses(403, 404, 412, 413, 415),
        },
      },
    },
    async function patchWebhook(request, reply) {
      const body = request.body;
      const webhook = await webhooks.patchWebhook(
        callerOf(request),
        request.params.id,
        {
          ...(body.url === undefined ? {} : { url: body.url }),
          ...(body.event_types === undefined ? {} : { eventTypes: body.event_types }),
          ...(body.client_ids === undefined ? {} : { clientIds: body.client_ids }),
          ...(body.description === undefined ? {} : { description: body.description }),
          ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
        },
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return sendWebhook(request, reply, webhook);
    },
  );

  api.delete(
    '/webhooks/:id',
    {
      config: { role: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook and its delivery log',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...problemResponses(403, 404, 412) },
      },
    },
    async function deleteWebhook(request, reply) {
      await webhooks.deleteWebhook(
        callerOf(request),
        request.params.id,
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return reply.code(204).send(null);
    },
  );

  api.post(
    '/webhooks/:id/rotate-secret',
    {
      config: { role: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Give a webhook a new signing secret; the old one signs too for 24 hours',
        description:
          'The new secret is in `secret`, in this response only. Until `previous_secret_expires_at` ' +
          'every delivery carries two signatures (`v1,<new> v1,<old>`), so receivers can switch ' +
          'at their own pace.',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        response: {
          200: JsonResponse(WebhookWithSecret, 'The webhook, with its new secret', ['etag']),
          ...problemResponses(403, 404, 412),
        },
      },
    },
    async function rotateWebhookSecret(request, reply) {
      const rotated = await webhooks.rotateSecret(
        callerOf(request),
        request.params.id,
        ifMatchCondition(request),
        requestOrigin(request),
      );
      reply.header('cache-control', 'no-store');
      const representation = { ...toWebhookResource(rotated.record), secret: rotated.secret };
      return sendVersioned(request, reply, rotated.record.etag, representation);
    },
  );

  api.post(
    '/webhooks/:id/replay',
    {
      config: { role: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'replayWebhook',
        summary: 'Deliver again every matching event after a given one',
        description:
          'Delivery restarts after `after` (null: from the oldest event kept), in order; a ' +
          'delivery waiting for its next attempt is dropped. Answers at once; deliveries follow.',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: NoQuery,
        body: ReplayBody,
        response: {
          202: JsonResponse(ReplayResult, 'Replay scheduled'),
          ...problemResponses(403, 404, 413, 415),
        },
      },
    },
    async function replayWebhook(request, reply) {
      await webhooks.replay(callerOf(request), request.params.id, request.body.after);
      return reply.code(202).send({ webhook_id: request.params.id, after: request.body.after });
    },
  );

  api.get(
    '/webhooks/:id/deliveries',
    {
      config: { role: 'webhooks:read' },
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: "A webhook's delivery log, newest event first",
        description:
          'One entry per event attempted: its status (`pending` waits for `next_attempt_at`), ' +
          'the number of attempts and the latest attempts with the status code each got.',
        security: apiKeySecurity,
        params: WebhookParams,
        querystring: DeliveryListQuery,
        response: {
          200: JsonResponse(DeliveryPage, 'A page of deliveries', ['link']),
          ...problemResponses(403, 404),
        },
      },
    },
    async function listWebhookDeliveries(request, reply) {
      const caller = callerOf(request);
      const { status, ...page } = request.query;
      const filter = { webhookId: request.params.id, status: status ?? null };
      // A cursor is valid only for the webhook and status it was issued for.
      const scope = `deliveries:${filter.webhookId}:${filter.status ?? 'all'}`;
      return servePage({
        request,
        reply,
        cursors,
        scope,
        query: page,
        toPosition: stringPosition,
        positionOf: (delivery: DeliveryRecord) => delivery.eventId,
        fetch: (before, limit) => webhooks.listDeliveries(caller, filter, before, limit),
        count: () => webhooks.countDeliveries(filter),
        toResource: toDeliveryResource,
      });
    },
  );
}
