// Applications in the console: search by client_id prefix with keyset paging, create, edit
// (external_token_validation as checked JSON), the token dry run, delete by typing the client_id.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../app.js';
import { ProblemError } from '../../problems.js';
import {
  type CreateApplicationBody,
  type ReplaceApplicationBody,
  CreateApplicationBody as CreateApplicationSchema,
  ReplaceApplicationBody as ReplaceApplicationSchema,
} from '../applications/applications.schemas.js';
import { ValidateTokenBody } from '../tokens/tokens.schemas.js';
import {
  type ApplicationFormValues,
  type ApplicationView,
  applicationPage,
  applicationsPage,
  formValuesOf,
  newApplicationPage,
} from './console-applications.view.js';
import { type FieldErrors, fieldErrorsOf } from './console-layout.view.js';
import {
  consoleOrigin,
  formOf,
  redirectAfterPost,
  requireApplication,
  requireRole,
  viewerOf,
} from './console.routes.js';
import {
  ApplicationSearch,
  type FormFields,
  assertBody,
  formInteger,
  formJson,
  formText,
} from './console.schemas.js';

const PAGE_SIZE = 25;

const NOTICES: Record<string, string> = {
  created: 'The application was created.',
  saved: 'The changes were saved.',
  unchanged: 'Nothing changed.',
  deleted: 'The application and its users were deleted.',
};

export function noticeOf(request: FastifyRequest, notices: Record<string, string>): string | null {
  const code = (request.query as Record<string, string | undefined>).notice;
  return code === undefined ? null : (notices[code] ?? null);
}

function html(reply: FastifyReply, status: number, body: { text: string }) {
  return reply.code(status).type('text/html; charset=utf-8').send(body.text);
}

/** A validation or conflict problem becomes field errors and a message; anything else is thrown. */
export function formProblem(error: unknown): {
  errors: FieldErrors;
  message: string | null;
  status: number;
} {
  if (!(error instanceof ProblemError) || ![400, 409, 412].includes(error.status)) throw error;
  const errors = fieldErrorsOf(error.errors);
  const message =
    error.status === 412
      ? 'Someone changed this meanwhile: the page now shows their version; apply your change again.'
      : errors.size === 0
        ? error.detail
        : null;
  return { errors, message, status: error.status };
}

function valuesFrom(form: FormFields): ApplicationFormValues {
  return {
    client_id: formText(form, 'client_id'),
    display_name: formText(form, 'display_name'),
    description: formText(form, 'description'),
    mode: formText(form, 'mode') || 'internal',
    jwt_expiration_in_minutes: formText(form, 'jwt_expiration_in_minutes'),
    scim_provider: formText(form, 'scim_provider'),
    external_token_validation: formText(form, 'external_token_validation'),
  };
}

/** The form as the API's body: the same schema checks it, the same pointers name its fields. */
function bodyFrom(values: ApplicationFormValues, creating: boolean): Record<string, unknown> {
  return {
    ...(creating ? { client_id: values.client_id } : {}),
    display_name: values.display_name,
    description: values.description,
    mode: values.mode,
    jwt_expiration_in_minutes:
      values.jwt_expiration_in_minutes.trim() === ''
        ? 60
        : formInteger(values.jwt_expiration_in_minutes),
    scim_provider: values.scim_provider.trim() === '' ? null : values.scim_provider.trim(),
    external_token_validation: formJson(
      values.external_token_validation,
      '/external_token_validation',
    ),
  };
}

export function registerConsoleApplicationRoutes(app: FastifyInstance, services: Services): void {
  const { applications, tokenExchange } = services;

  async function renderApplication(
    request: FastifyRequest,
    reply: FastifyReply,
    clientId: string,
    view: Partial<Omit<ApplicationView, 'application'>> = {},
    status = 200,
  ) {
    const application = await applications.findApplication(clientId);
    return html(
      reply,
      status,
      applicationPage(
        viewerOf(request),
        {
          application,
          values: view.values ?? formValuesOf(application),
          errors: view.errors ?? new Map(),
          message: view.message ?? null,
          deleteError: view.deleteError ?? null,
          dryRun: view.dryRun ?? null,
        },
        noticeOf(request, NOTICES),
      ),
    );
  }

  app.get(
    '/applications',
    { schema: { hide: true } },
    async function listApplications(request, reply) {
      requireRole(request, 'applications:read');
      const query = request.query as Record<string, string | undefined>;
      const prefix = (query.prefix ?? '').trim();
      const after = query.after ?? null;
      let prefixErrors: FieldErrors = new Map();
      try {
        assertBody(ApplicationSearch, { prefix });
      } catch (error) {
        prefixErrors = formProblem(error).errors;
      }
      const visible = viewerOf(request).applications;
      const rows =
        prefixErrors.size > 0
          ? []
          : await applications.listApplications({
              visible,
              after,
              limit: PAGE_SIZE + 1,
              prefix: prefix === '' ? null : prefix,
            });
      const items = rows.slice(0, PAGE_SIZE);
      return html(
        reply,
        prefixErrors.size > 0 ? 400 : 200,
        applicationsPage(
          viewerOf(request),
          {
            prefix,
            prefixErrors,
            items,
            next: rows.length > PAGE_SIZE ? items.at(-1)!.clientId : null,
            paged: after !== null,
          },
          noticeOf(request, NOTICES),
        ),
      );
    },
  );

  app.get(
    '/applications/new',
    { schema: { hide: true } },
    async function newApplication(request, reply) {
      requireRole(request, 'applications:write');
      return html(
        reply,
        200,
        newApplicationPage(viewerOf(request), valuesFrom({}), new Map(), null),
      );
    },
  );

  app.post(
    '/applications',
    { schema: { hide: true } },
    async function createApplication(request, reply) {
      requireRole(request, 'applications:write');
      const values = valuesFrom(formOf(request));
      try {
        const body = assertBody<CreateApplicationBody>(
          CreateApplicationSchema,
          bodyFrom(values, true),
        );
        requireApplication(request, body.client_id);
        const application = await applications.createApplication(body, consoleOrigin(request));
        return redirectAfterPost(
          reply,
          `/console/applications/${application.clientId}?notice=created`,
        );
      } catch (error) {
        const { errors, message, status } = formProblem(error);
        return html(reply, status, newApplicationPage(viewerOf(request), values, errors, message));
      }
    },
  );

  app.get(
    '/applications/:client_id',
    { schema: { hide: true } },
    async function showApplication(request, reply) {
      requireRole(request, 'applications:read');
      const { client_id: clientId } = request.params as { client_id: string };
      requireApplication(request, clientId);
      return renderApplication(request, reply, clientId);
    },
  );

  app.post(
    '/applications/:client_id',
    { schema: { hide: true } },
    async function saveApplication(request, reply) {
      requireRole(request, 'applications:write');
      const { client_id: clientId } = request.params as { client_id: string };
      requireApplication(request, clientId);
      const form = formOf(request);
      const values = { ...valuesFrom(form), client_id: clientId };
      const etag = formText(form, 'etag');
      try {
        const body = assertBody<ReplaceApplicationBody>(
          ReplaceApplicationSchema,
          bodyFrom(values, false),
        );
        const before = await applications.findApplication(clientId);
        const saved = await applications.replaceApplication(
          clientId,
          body,
          (version) => version === etag,
          consoleOrigin(request),
        );
        const notice = saved.etag === before.etag ? 'unchanged' : 'saved';
        return redirectAfterPost(reply, `/console/applications/${clientId}?notice=${notice}`);
      } catch (error) {
        const { errors, message, status } = formProblem(error);
        // After a 412 the form shows the stored version, so the operator sees what changed.
        return renderApplication(
          request,
          reply,
          clientId,
          status === 412 ? { message } : { values, errors, message },
          status,
        );
      }
    },
  );

  app.post(
    '/applications/:client_id/delete',
    { schema: { hide: true } },
    async function deleteApplication(request, reply) {
      requireRole(request, 'applications:write');
      const { client_id: clientId } = request.params as { client_id: string };
      requireApplication(request, clientId);
      if (formText(formOf(request), 'confirm') !== clientId) {
        return renderApplication(
          request,
          reply,
          clientId,
          { deleteError: `Type ${clientId} exactly to confirm; nothing was deleted.` },
          400,
        );
      }
      await applications.deleteApplication(clientId, () => true, consoleOrigin(request));
      return redirectAfterPost(reply, '/console/applications?notice=deleted');
    },
  );

  app.post(
    '/applications/:client_id/dry-run',
    { schema: { hide: true } },
    async function dryRun(request, reply) {
      requireRole(request, 'applications:read');
      const { client_id: clientId } = request.params as { client_id: string };
      requireApplication(request, clientId);
      const token = formText(formOf(request), 'token').trim();
      try {
        assertBody(ValidateTokenBody, { token });
      } catch (error) {
        const { errors } = formProblem(error);
        const detail = errors.get('token')?.join('; ') ?? 'is not valid';
        return renderApplication(
          request,
          reply,
          clientId,
          { dryRun: { token, evaluation: null, error: detail } },
          400,
        );
      }
      const evaluation = await tokenExchange.evaluateForApplication(clientId, token);
      return renderApplication(request, reply, clientId, {
        dryRun: { token, evaluation, error: null },
      });
    },
  );
}
