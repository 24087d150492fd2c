import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { allowedApplications, assertApplicationAllowed } from '../../http/auth.js';
import { type CursorCodec, servePage, stringPosition } from '../../http/pagination.js';
import { ifMatchCondition, sendVersioned } from '../../http/preconditions.js';
import { requestPath } from '../../http/request-path.js';
import {
  IfMatchHeaders,
  IfNoneMatchHeaders,
  JsonResponse,
  mergePatchMediaTypes,
  NoContent,
  NoQuery,
  NotModified,
  PageQuery,
  apiKeySecurity,
  problemResponses,
} from '../../http/schemas.js';
import { assertEchoesPath } from '../../http/path-echoes.js';
import type { ApplicationRecord } from '../../store/store.js';
import type { ApplicationInput, ApplicationSettings } from './applications.domain.js';
import {
  Application,
  ApplicationPage,
  ApplicationParams,
  CreateApplicationBody,
  PatchApplicationBody,
  ReplaceApplicationBody,
  toApplicationResource,
} from './applications.schemas.js';
import type { ApplicationPatch, ApplicationsService } from './applications.service.js';
import { requestOrigin } from '../request-origin.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['applications'];
const CURSOR_SCOPE = 'applications';

function sendApplication(
  request: FastifyRequest,
  reply: FastifyReply,
  application: ApplicationRecord,
  status = 200,
) {
  return sendVersioned(
    request,
    reply,
    application.etag,
    toApplicationResource(application),
    status,
  );
}

/** A create body without the read-only members a client may echo back. */
function inputOf(body: CreateApplicationBody): ApplicationInput {
  const { created_at: _createdAt, updated_at: _updatedAt, ...input } = body;
  return input;
}

/** A replace body's settings; its client_id may only repeat the path's. */
function settingsOf(clientId: string, body: ReplaceApplicationBody): ApplicationSettings {
  assertEchoesPath({ client_id: clientId }, body);
  const { client_id: _clientId, created_at: _createdAt, updated_at: _updatedAt, ...rest } = body;
  return rest;
}

/** A merge patch's changes; its client_id may only repeat the path's. */
function patchOf(clientId: string, body: PatchApplicationBody): ApplicationPatch {
  assertEchoesPath({ client_id: clientId }, body);
  const { client_id: _clientId, created_at: _createdAt, updated_at: _updatedAt, ...rest } = body;
  return rest;
}

export function registerApplicationRoutes(
  app: FastifyInstance,
  deps: { applications: ApplicationsService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { applications, cursors } = deps;

  api.post(
    '/applications',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'applications:write' },
      schema: {
        tags,
        operationId: 'createApplication',
        summary: 'Create an application',
        security: apiKeySecurity,
        querystring: NoQuery,
        body: CreateApplicationBody,
        response: {
          201: JsonResponse(Application, 'The application, created', ['location', 'etag']),
          ...problemResponses(403, 409, 413, 415),
        },
      },
    },
    async function createApplication(request, reply) {
      assertApplicationAllowed(request, request.body.client_id);
      const application = await applications.createApplication(
        inputOf(request.body),
        requestOrigin(request),
      );
      reply.header('location', `${requestPath(request)}/${application.clientId}`);
      return sendApplication(request, reply, application, 201);
    },
  );

  api.get(
    '/applications',
    {
      config: { role: 'applications:read' },
      schema: {
        tags,
        operationId: 'listApplications',
        summary: 'List applications, by client_id',
        description: 'Keyset-paginated. A restricted API key sees only its applications.',
        security: apiKeySecurity,
        querystring: PageQuery,
        response: {
          200: JsonResponse(ApplicationPage, 'A page of applications', ['link']),
          ...problemResponses(403),
        },
      },
    },
    async function listApplications(request, reply) {
      const visible = allowedApplications(request);
      return servePage({
        request,
        reply,
        cursors,
        scope: CURSOR_SCOPE,
        query: request.query,
        toPosition: stringPosition,
        positionOf: (application: ApplicationRecord) => application.clientId,
        fetch: (after, limit) => applications.listApplications({ visible, after, limit }),
        count: () => applications.countApplications(visible),
        toResource: toApplicationResource,
      });
    },
  );

  api.get(
    '/applications/:client_id',
    {
      config: { role: 'applications:read' },
      schema: {
        tags,
        operationId: 'getApplication',
        summary: 'Get an application',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: JsonResponse(Application, 'The application', ['etag']),
          304: NotModified,
          ...problemResponses(403, 404),
        },
      },
    },
    async function getApplication(request, reply) {
      const application = await applications.findApplication(request.params.client_id);
      return sendApplication(request, reply, application);
    },
  );

  api.put(
    '/applications/:client_id',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'applications:write' },
      schema: {
        tags,
        operationId: 'replaceApplication',
        summary: 'Replace an application',
        description: 'Omitted optional members return to their defaults.',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        body: ReplaceApplicationBody,
        response: {
          200: JsonResponse(Application, 'The application, changed', ['etag']),
          ...problemResponses(403, 404, 412, 413, 415),
        },
      },
    },
    async function replaceApplication(request, reply) {
      const application = await applications.replaceApplication(
        request.params.client_id,
        settingsOf(request.params.client_id, request.body),
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return sendApplication(request, reply, application);
    },
  );

  api.patch(
    '/applications/:client_id',
    {
      bodyLimit: BODY_LIMITS.large,
      config: { role: 'applications:write' },
      schema: {
        tags,
        operationId: 'patchApplication',
        summary: 'Change some members of an application (JSON Merge Patch)',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        consumes: mergePatchMediaTypes,
        body: PatchApplicationBody,
        response: {
          200: JsonResponse(Application, 'The application, changed', ['etag']),
          ...problemResponses(403, 404, 412, 413, 415),
        },
      },
    },
    async function patchApplication(request, reply) {
      const application = await applications.patchApplication(
        request.params.client_id,
        patchOf(request.params.client_id, request.body),
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return sendApplication(request, reply, application);
    },
  );

  api.delete(
    '/applications/:client_id',
    {
      config: { role: 'applications:write' },
      schema: {
        tags,
        operationId: 'deleteApplication',
        summary: 'Delete an application and all its users',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...problemResponses(403, 404, 412) },
      },
    },
    async function deleteApplication(request, reply) {
      await applications.deleteApplication(
        request.params.client_id,
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return reply.code(204).send(null);
    },
  );
}
