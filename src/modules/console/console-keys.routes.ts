// API keys and signing keys in the console. A new or rotated key's secret is in that one
// response (never stored, never cached: no-store, and htmx keeps no page history).

import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Clock } from '../../clock.js';
import { DomainError } from '../../domain-error.js';
import { ProblemError, invalid, problem } from '../../problems.js';
import type { Role } from '../../roles.js';
import {
  type CreateApiKeyBody,
  CreateApiKeyBody as CreateApiKeySchema,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
} from '../api-keys/api-keys.schemas.js';
import {
  type ApiKeyFormValues,
  EXPIRY_CHOICES,
  apiKeysPage,
  revokeKeyPage,
  secretPage,
} from './console-api-keys.view.js';
import { confirmed } from './console-confirm.view.js';
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
import { type FieldErrors, can } from './console-layout.view.js';
import { revokeSigningKeyPage, signingKeysPage } from './console-signing-keys.view.js';
import { assertBody, formList, formText } from './console.schemas.js';

const PAGE_SIZE = 50;

const NOTICES: Record<string, string> = {
  revoked: 'The key was revoked; it no longer works anywhere.',
  'signing-rotated': 'A new signing key was added; it starts signing shortly.',
  'signing-revoked': 'The signing key was revoked and left the published key set.',
};

export function registerConsoleKeyRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
  clock: Clock,
): void {
  const { apiKeys, signingKeys } = services;

  async function renderKeys(
    request: Parameters<typeof viewerOf>[0],
    reply: FastifyReply,
    form: { values: ApiKeyFormValues; errors: FieldErrors; message: string | null },
    status = 200,
  ) {
    const query = request.query as Record<string, string | undefined>;
    const includeRevoked = query.include_revoked === 'true';
    const after = query.after ?? null;
    const rows = await apiKeys.listApiKeys(
      sessionOf(request).key,
      { includeRevoked },
      after,
      PAGE_SIZE + 1,
    );
    const keys = rows.slice(0, PAGE_SIZE);
    const administratorKeyIds = can(viewerOf(request), 'keys:write')
      ? await apiKeys.listAdministratorKeyIds()
      : [];
    return sendPage(
      reply,
      status,
      apiKeysPage(
        viewerOf(request),
        {
          keys,
          includeRevoked,
          next: rows.length > PAGE_SIZE ? keys.at(-1)!.id : null,
          paged: after !== null,
          now: clock.now(),
          administratorKeyIds,
          form,
        },
        noticeOf(request, NOTICES),
      ),
    );
  }

  app.get(
    '/api-keys',
    { config: { role: 'keys:read' }, schema: { hide: true } },
    async function listApiKeys(request, reply) {
      return renderKeys(request, reply, {
        values: { name: '', roles: [], applications: '', expires: '', expires_at: '' },
        errors: new Map(),
        message: null,
      });
    },
  );

  app.post(
    '/api-keys',
    { config: { role: ['keys:read', 'keys:write'] }, schema: { hide: true } },
    async function createApiKey(request, reply) {
      const form = formOf(request);
      const values: ApiKeyFormValues = {
        name: formText(form, 'name'),
        roles: form.roles ?? [],
        applications: formText(form, 'applications'),
        expires: formText(form, 'expires'),
        expires_at: formText(form, 'expires_at').trim(),
      };
      try {
        const restriction = formList(form, 'applications');
        const body = assertBody<CreateApiKeyBody>(CreateApiKeySchema, {
          name: values.name,
          roles: values.roles,
          applications: restriction.length === 0 ? null : restriction,
          expires_at: expiryOf(values, clock.now()),
        });
        const issued = await apiKeys.createApiKey(
          sessionOf(request).key,
          {
            name: body.name.trim(),
            roles: body.roles as Role[],
            applications: body.applications ?? null,
            expiresAt: body.expires_at ? Date.parse(body.expires_at) : null,
          },
          consoleOrigin(request),
        );
        return sendPage(
          reply,
          201,
          secretPage(viewerOf(request), issued.record, issued.secret, false),
        );
      } catch (error) {
        if (error instanceof ProblemError && error.status === 403) {
          return renderKeys(
            request,
            reply,
            { values, errors: new Map(), message: error.message },
            403,
          );
        }
        const { errors, message, status } = formProblem(error);
        return renderKeys(request, reply, { values, errors, message }, status);
      }
    },
  );

  app.post(
    '/api-keys/:id/rotate',
    { config: { role: 'keys:write' }, schema: { hide: true } },
    async function rotateApiKey(request, reply) {
      const { id } = request.params as { id: string };
      const issued = await apiKeys.rotateApiKey(
        sessionOf(request).key,
        id,
        DEFAULT_ROTATION_OVERLAP_SECONDS * 1000,
        consoleOrigin(request),
      );
      return sendPage(
        reply,
        200,
        secretPage(viewerOf(request), issued.record, issued.secret, true),
      );
    },
  );

  app.get(
    '/api-keys/:id/revoke',
    { config: { role: ['keys:read', 'keys:write'] }, schema: { hide: true } },
    async function confirmRevokeApiKey(request, reply) {
      const { id } = request.params as { id: string };
      const key = await apiKeys.findApiKey(sessionOf(request).key, id);
      const administrators = await apiKeys.listAdministratorKeyIds();
      return sendPage(reply, 200, revokeKeyPage(viewerOf(request), key, administrators, null));
    },
  );

  app.post(
    '/api-keys/:id/revoke',
    { config: { role: ['keys:read', 'keys:write'] }, schema: { hide: true } },
    async function revokeApiKey(request, reply) {
      const { id } = request.params as { id: string };
      const caller = sessionOf(request).key;
      const refuse = async (status: number, message: string) => {
        const key = await apiKeys.findApiKey(caller, id);
        const administrators = await apiKeys.listAdministratorKeyIds();
        return sendPage(
          reply,
          status,
          revokeKeyPage(viewerOf(request), key, administrators, message),
        );
      };
      if (!confirmed(formText(formOf(request), 'confirm'))) {
        return refuse(400, 'Confirm with the button on this page; nothing was revoked.');
      }
      try {
        await apiKeys.revokeApiKey(caller, id, consoleOrigin(request));
      } catch (error) {
        if (error instanceof DomainError && error.code === 'last_admin_key') {
          return refuse(409, error.detail);
        }
        throw error;
      }
      // The session ran on this key: it has ended with it.
      if (id === caller.id) return redirectAfterPost(reply, '/console/sign-in?revoked=1');
      return redirectAfterPost(reply, '/console/api-keys?notice=revoked');
    },
  );

  app.get(
    '/signing-keys',
    { config: { role: 'keys:read' }, schema: { hide: true } },
    async function listSigningKeys(request, reply) {
      const keys = await signingKeys.listSigningKeys();
      return sendPage(
        reply,
        200,
        signingKeysPage(viewerOf(request), keys, noticeOf(request, NOTICES)),
      );
    },
  );

  function requireUnrestricted(request: Parameters<typeof sessionOf>[0]): void {
    if (sessionOf(request).key.applications !== null) {
      throw problem(
        'forbidden',
        'This API key is restricted to some applications; signing keys serve them all.',
      );
    }
  }

  app.post(
    '/signing-keys/rotate',
    { config: { role: 'keys:write' }, schema: { hide: true } },
    async function rotateSigningKey(request, reply) {
      requireUnrestricted(request);
      await signingKeys.rotate(consoleOrigin(request));
      return redirectAfterPost(reply, '/console/signing-keys?notice=signing-rotated');
    },
  );

  async function signingKeyOf(kid: string) {
    const key = (await signingKeys.listSigningKeys()).find((each) => each.kid === kid);
    if (key === undefined) throw problem('not-found', `No signing key with kid "${kid}".`);
    return key;
  }

  app.get(
    '/signing-keys/:kid/revoke',
    { config: { role: ['keys:read', 'keys:write'] }, schema: { hide: true } },
    async function confirmRevokeSigningKey(request, reply) {
      requireUnrestricted(request);
      const { kid } = request.params as { kid: string };
      const key = await signingKeyOf(kid);
      return sendPage(reply, 200, revokeSigningKeyPage(viewerOf(request), key, null));
    },
  );

  app.post(
    '/signing-keys/:kid/revoke',
    { config: { role: ['keys:read', 'keys:write'] }, schema: { hide: true } },
    async function revokeSigningKey(request, reply) {
      requireUnrestricted(request);
      const { kid } = request.params as { kid: string };
      if (!confirmed(formText(formOf(request), 'confirm'))) {
        const key = await signingKeyOf(kid);
        return sendPage(
          reply,
          400,
          revokeSigningKeyPage(
            viewerOf(request),
            key,
            'Confirm with the button on this page; nothing was revoked.',
          ),
        );
      }
      await signingKeys.revokeSigningKey(kid, consoleOrigin(request));
      return redirectAfterPost(reply, '/console/signing-keys?notice=signing-revoked');
    },
  );
}

/**
 * The key's expiry as the API's body takes it: null (never), a lifetime from now, or the date
 * and time the browser's picker gave (in UTC; a value with its own offset is taken as it is).
 */
function expiryOf(values: ApiKeyFormValues, now: number): string | null {
  if (values.expires === '') return null;
  const days = EXPIRY_CHOICES.find(([choice]) => choice === values.expires)?.[2];
  if (days !== undefined) return new Date(now + days * 86_400_000).toISOString();
  if (values.expires !== 'at') {
    throw invalid([{ pointer: '/expires', detail: 'must be one of the choices offered' }]);
  }
  const text = values.expires_at;
  if (text === '')
    throw invalid([{ pointer: '/expires_at', detail: 'is required for this choice' }]);
  const local = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(text);
  return local ? `${text.length === 16 ? `${text}:00` : text}Z` : text;
}
