// Webhooks in the console: list and create them (the signing secret shown once), each one's
// deliveries, replay, enable or disable, delete.

import type { FastifyInstance, FastifyReply } from 'fastify';
import { ProblemError } from '../../problems.js';
import type { WebhookHealth } from '../../store/store.js';
import {
  type CreateWebhookBody,
  CreateWebhookBody as CreateWebhookSchema,
} from '../webhooks/webhooks.schemas.js';
import {
  type ConsoleServices,
  consoleOrigin,
  formOf,
  formProblem,
  noticeOf,
  redirectAfterPost,
  sendPage,
  sessionOf,
  viewerOf,
} from './console-kit.js';
import type { FieldErrors } from './console-layout.view.js';
import { confirmed } from './console-confirm.view.js';
import {
  type WebhookFormValues,
  deleteWebhookPage,
  webhookPage,
  webhookSecretPage,
  webhooksPage,
} from './console-webhooks.view.js';
import { assertBody, formList, formText } from './console.schemas.js';

const PAGE_SIZE = 100;

const NOTICES: Record<string, string> = {
  enabled: 'The webhook is enabled.',
  disabled: 'The webhook is disabled.',
  replayed: 'The events are queued for delivery again.',
  deleted: 'The webhook was deleted.',
};

export function registerConsoleWebhookRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
): void {
  const { webhooks } = services;

  async function renderList(
    request: Parameters<typeof viewerOf>[0],
    reply: FastifyReply,
    form: { values: WebhookFormValues; errors: FieldErrors; message: string | null },
    status = 200,
  ) {
    const caller = sessionOf(request).key;
    const list = await webhooks.listWebhooks(caller, null, PAGE_SIZE);
    const health = new Map<string, WebhookHealth>();
    for (const webhook of list) {
      health.set(webhook.id, await webhooks.findWebhookHealth(caller, webhook.id));
    }
    return sendPage(
      reply,
      status,
      webhooksPage(viewerOf(request), { webhooks: list, health, form }, noticeOf(request, NOTICES)),
    );
  }

  app.get(
    '/webhooks',
    { config: { role: 'webhooks:read' }, schema: { hide: true } },
    async function listWebhooks(request, reply) {
      return renderList(request, reply, {
        values: { url: '', event_types: '', client_ids: '', description: '' },
        errors: new Map(),
        message: null,
      });
    },
  );

  app.post(
    '/webhooks',
    { config: { role: ['webhooks:read', 'webhooks:write'] }, schema: { hide: true } },
    async function createWebhook(request, reply) {
      const form = formOf(request);
      const values: WebhookFormValues = {
        url: formText(form, 'url').trim(),
        event_types: formText(form, 'event_types'),
        client_ids: formText(form, 'client_ids'),
        description: formText(form, 'description'),
      };
      try {
        const clientIds = formList(form, 'client_ids');
        const body = assertBody<CreateWebhookBody>(CreateWebhookSchema, {
          url: values.url,
          event_types: formList(form, 'event_types'),
          client_ids: clientIds.length === 0 ? null : clientIds,
          description: values.description,
        });
        const created = await webhooks.createWebhook(
          sessionOf(request).key,
          {
            url: body.url,
            eventTypes: body.event_types,
            clientIds: body.client_ids ?? null,
            description: body.description ?? '',
            enabled: true,
          },
          consoleOrigin(request),
        );
        return sendPage(
          reply,
          201,
          webhookSecretPage(viewerOf(request), created.record, created.secret),
        );
      } catch (error) {
        if (error instanceof ProblemError && error.status === 403) {
          return renderList(
            request,
            reply,
            { values, errors: new Map(), message: error.detail },
            403,
          );
        }
        const { errors, message, status } = formProblem(error);
        return renderList(request, reply, { values, errors, message }, status);
      }
    },
  );

  app.get(
    '/webhooks/:id',
    { config: { role: 'webhooks:read' }, schema: { hide: true } },
    async function showWebhook(request, reply) {
      const { id } = request.params as { id: string };
      const caller = sessionOf(request).key;
      const webhook = await webhooks.findWebhook(caller, id);
      const deliveries = await webhooks.listDeliveries(
        caller,
        { webhookId: id, status: null },
        null,
        PAGE_SIZE,
      );
      const health = await webhooks.findWebhookHealth(caller, id);
      return sendPage(
        reply,
        200,
        webhookPage(viewerOf(request), webhook, health, deliveries, noticeOf(request, NOTICES)),
      );
    },
  );

  app.post(
    '/webhooks/:id/enabled',
    { config: { role: 'webhooks:write' }, schema: { hide: true } },
    async function toggle(request, reply) {
      const { id } = request.params as { id: string };
      const enabled = formText(formOf(request), 'enabled') === 'true';
      await webhooks.patchWebhook(
        sessionOf(request).key,
        id,
        { enabled },
        () => true,
        consoleOrigin(request),
      );
      return redirectAfterPost(
        reply,
        `/console/webhooks/${id}?notice=${enabled ? 'enabled' : 'disabled'}`,
      );
    },
  );

  app.post(
    '/webhooks/:id/replay',
    { config: { role: 'webhooks:write' }, schema: { hide: true } },
    async function replay(request, reply) {
      const { id } = request.params as { id: string };
      const after = formText(formOf(request), 'after').trim();
      await webhooks.replay(sessionOf(request).key, id, after === '' ? null : after);
      return redirectAfterPost(reply, `/console/webhooks/${id}?notice=replayed`);
    },
  );

  app.get(
    '/webhooks/:id/delete',
    { config: { role: ['webhooks:read', 'webhooks:write'] }, schema: { hide: true } },
    async function confirmDelete(request, reply) {
      const { id } = request.params as { id: string };
      const webhook = await webhooks.findWebhook(sessionOf(request).key, id);
      return sendPage(reply, 200, deleteWebhookPage(viewerOf(request), webhook, null));
    },
  );

  app.post(
    '/webhooks/:id/delete',
    { config: { role: ['webhooks:read', 'webhooks:write'] }, schema: { hide: true } },
    async function remove(request, reply) {
      const { id } = request.params as { id: string };
      const caller = sessionOf(request).key;
      if (!confirmed(formText(formOf(request), 'confirm'))) {
        const webhook = await webhooks.findWebhook(caller, id);
        return sendPage(
          reply,
          400,
          deleteWebhookPage(
            viewerOf(request),
            webhook,
            'Confirm with the button on this page; nothing was deleted.',
          ),
        );
      }
      await webhooks.deleteWebhook(caller, id, () => true, consoleOrigin(request));
      return redirectAfterPost(reply, '/console/webhooks?notice=deleted');
    },
  );
}
