// Applications in the console: search by client_id prefix with keyset paging, create, edit
// (external_token_validation as checked JSON), the token dry run, delete by typing the client_id.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
import {
  type ConsoleServices,
  consoleOrigin,
  formOf,
  formProblem,
  noticeOf,
  redirectAfterPost,
  requireApplication,
  sendPage,
  viewerOf,
} from './console-kit.js';
import type { FieldErrors } from './console-layout.view.js';
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

export function registerConsoleApplicationRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
): void {
  const { applications, tokenExchange } = services;

  async function renderApplication(
    request: FastifyRequest,
    reply: FastifyReply,
    clientId: string,
    view: Partial<Omit<ApplicationView, 'application'>> = {},
    status = 200,
  ) {
    const application = await applications.findApplication(clientId);
    return sendPage(
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
    { config: { role: 'applications:read' }, schema: { hide: true } },
    async function listApplications(request, reply) {
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
      return sendPage(
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
    { config: { role: 'applications:write' }, schema: { hide: true } },
    async function newApplication(request, reply) {
      return sendPage(
        reply,
        200,
        newApplicationPage(viewerOf(request), valuesFrom({}), new Map(), null),
      );
    },
  );

  app.post(
    '/applications',
    { config: { role: 'applications:write' }, schema: { hide: true } },
    async function createApplication(request, reply) {
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
        return sendPage(
          reply,
          status,
          newApplicationPage(viewerOf(request), values, errors, message),
        );
      }
    },
  );

  app.get(
    '/applications/:client_id',
    { config: { role: 'applications:read' }, schema: { hide: true } },
    async function showApplication(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
      return renderApplication(request, reply, clientId);
    },
  );

  app.post(
    '/applications/:client_id',
    { config: { role: 'applications:write' }, schema: { hide: true } },
    async function saveApplication(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
      const form = formOf(request);
      const values = { ...valuesFrom(form), client_id: clientId };
      const etag = formText(form, 'etag');
      try {
        const body = assertBody<ReplaceApplicationBody>(
          ReplaceApplicationSchema,
          bodyFrom(values, false),
        );
        const before = await applications.findApplication(clientId);
        // The settings form leaves the authorization alone (its own form changes it); the
        // version check keeps a change made meanwhile from being undone.
        const saved = await applications.replaceApplication(
          clientId,
          {
            ...body,
            authorization: before.authorization as ReplaceApplicationBody['authorization'],
          },
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
    { config: { role: 'applications:write' }, schema: { hide: true } },
    async function deleteApplication(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
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
    { config: { role: 'applications:read' }, schema: { hide: true } },
    async function dryRun(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
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
