// Applications in the console: search by client_id prefix with keyset paging, create, edit
// (external_token_validation as checked JSON), the token dry run, the authorization model (checked
// JSON) and its dry run "would this user be allowed?", delete by typing the client_id.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toProblem } from '../../http/error-handler.js';
import type { ApplicationRecord } from '../../store/store.js';
import {
  type AuthorizationModel,
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
  type AuthorizationFormView,
  type DecisionChoices,
  type DecisionDryRunView,
  type DecisionFormValues,
  authorizationTextOf,
  emptyDecisionForm,
  explainDecision,
} from './console-decisions.view.js';
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
import { type FieldErrors, can, fieldErrorsOf } from './console-layout.view.js';
import {
  ApplicationSearch,
  DecisionQuestion,
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
  'authorization-saved': 'The authorization was saved: the next decision follows it.',
};

/** Users the dry run suggests: enough to pick from; any other is typed. */
const SUGGESTED_USERS = 50;

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

function decisionValuesFrom(form: FormFields): DecisionFormValues {
  return {
    subject: formText(form, 'subject').trim(),
    action: formText(form, 'action').trim(),
    resource_type: formText(form, 'resource_type').trim(),
    resource_id: formText(form, 'resource_id').trim(),
    resource_properties: formText(form, 'resource_properties'),
  };
}

/** The dry run's form as a question: empty members left out, so the schema names them. */
function questionFrom(values: DecisionFormValues): Record<string, unknown> {
  const present = (name: keyof DecisionFormValues) =>
    values[name] === '' ? {} : { [name]: values[name] };
  const properties = formJson(values.resource_properties, '/resource_properties');
  return {
    ...present('subject'),
    ...present('action'),
    ...present('resource_type'),
    ...present('resource_id'),
    ...(properties === null ? {} : { resource_properties: properties }),
  };
}

/**
 * The model's errors, all on its one field, each saying where in the JSON it is
 * (`/authorization/actions/x/owner` reads "at /actions/x/owner: …").
 */
function locatedErrors(error: unknown, errors: FieldErrors): FieldErrors {
  const all = toProblem(error as Error).errors ?? [];
  const nested = all.filter((invalid) => invalid.pointer?.startsWith('/authorization/'));
  if (nested.length === 0) return errors;
  const whole = fieldErrorsOf(all.filter((invalid) => !nested.includes(invalid)));
  const located = nested.map(
    (invalid) => `at ${invalid.pointer!.slice('/authorization'.length)}: ${invalid.detail}`,
  );
  return new Map([
    ...whole,
    ['authorization', [...(whole.get('authorization') ?? []), ...located]],
  ]);
}

export function registerConsoleApplicationRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
): void {
  const { applications, tokenExchange, authzen, users } = services;

  /** What the dry run suggests: the first users (for a key that may read them), the actions. */
  async function decisionChoices(
    request: FastifyRequest,
    application: ApplicationRecord,
  ): Promise<DecisionChoices> {
    const model = application.authorization as AuthorizationModel | null;
    const listed = can(viewerOf(request), 'users:read')
      ? await users.listUsers(
          {
            clientId: application.clientId,
            provider: null,
            email: null,
            role: null,
            scope: null,
            active: null,
          },
          null,
          SUGGESTED_USERS,
        )
      : [];
    return { users: listed, actions: model === null ? [] : Object.keys(model.actions) };
  }

  async function renderApplication(
    request: FastifyRequest,
    reply: FastifyReply,
    clientId: string,
    view: Partial<Omit<ApplicationView, 'application' | 'authorization' | 'decision'>> & {
      /** The authorization form as sent; its text left out: the stored model. */
      authorization?: Omit<AuthorizationFormView, 'text'> & { text?: string };
      decision?: DecisionDryRunView;
    } = {},
    status = 200,
  ) {
    const application = await applications.findApplication(clientId);
    const viewer = viewerOf(request);
    return sendPage(
      reply,
      status,
      applicationPage(
        viewer,
        {
          application,
          values: view.values ?? formValuesOf(application),
          errors: view.errors ?? new Map(),
          message: view.message ?? null,
          deleteError: view.deleteError ?? null,
          dryRun: view.dryRun ?? null,
          authorization: {
            text: view.authorization?.text ?? authorizationTextOf(application),
            errors: view.authorization?.errors ?? new Map(),
            message: view.authorization?.message ?? null,
          },
          decision: can(viewer, 'decisions:read')
            ? {
                view: view.decision ?? {
                  values: emptyDecisionForm(),
                  errors: new Map(),
                  outcome: null,
                },
                choices: await decisionChoices(request, application),
              }
            : null,
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
  app.post(
    '/applications/:client_id/authorization',
    { config: { role: 'applications:write' }, schema: { hide: true } },
    async function saveAuthorization(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
      const form = formOf(request);
      const text = formText(form, 'authorization');
      const etag = formText(form, 'etag');
      try {
        const authorization = formJson(text, '/authorization') as AuthorizationModel | null;
        const before = await applications.findApplication(clientId);
        // Every other setting as it is stored; the version check keeps a change made
        // meanwhile (in the settings form, or through the API) from being undone.
        const saved = await applications.replaceApplication(
          clientId,
          {
            display_name: before.displayName,
            description: before.description,
            mode: before.mode,
            jwt_expiration_in_minutes: before.jwtExpirationInMinutes,
            external_token_validation: before.externalTokenValidation,
            scim_provider: before.scimProvider,
            authorization,
          },
          (version) => version === etag,
          consoleOrigin(request),
        );
        const notice = saved.etag === before.etag ? 'unchanged' : 'authorization-saved';
        return redirectAfterPost(
          reply,
          `/console/applications/${clientId}?notice=${notice}#authorization`,
        );
      } catch (error) {
        const { errors, message, status } = formProblem(error);
        // After a 412 the form shows the stored model, so the operator sees what changed.
        return renderApplication(
          request,
          reply,
          clientId,
          {
            authorization:
              status === 412
                ? { errors, message }
                : { text, errors: locatedErrors(error, errors), message },
          },
          status,
        );
      }
    },
  );

  app.post(
    '/applications/:client_id/decision',
    { config: { role: ['applications:read', 'decisions:read'] }, schema: { hide: true } },
    async function decisionDryRun(request, reply) {
      const { client_id: clientId } = request.params as { client_id: string };
      const values = decisionValuesFrom(formOf(request));
      let question: {
        subject: string;
        action: string;
        resource_type?: string;
        resource_id?: string;
        resource_properties?: Record<string, unknown>;
      };
      try {
        question = assertBody(DecisionQuestion, questionFrom(values));
      } catch (error) {
        const { errors } = formProblem(error);
        return renderApplication(
          request,
          reply,
          clientId,
          { decision: { values, errors, outcome: null } },
          400,
        );
      }
      const application = await applications.findApplication(clientId);
      const properties = question.resource_properties;
      const explained = await authzen.explain({
        clientId,
        subject: { type: 'user', id: question.subject },
        action: question.action,
        resource: {
          type: question.resource_type ?? '',
          ...(properties === undefined ? {} : { properties }),
        },
      });
      const outcome = {
        decision: { decision: explained.decision, reason: explained.reason },
        user: explained.user,
        explanation: explainDecision(
          application.authorization as AuthorizationModel | null,
          explained.user,
          question.action,
          properties,
          explained,
        ),
      };
      return renderApplication(request, reply, clientId, {
        decision: { values, errors: new Map(), outcome },
      });
    },
  );
}
