// SCIM Groups at /scim/v2/<client_id>/Groups: the application's roles (scim-groups.service.ts).

import { scimOrigin } from '../request-origin.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CursorCodec } from '../../http/pagination.js';
import { formatEtag, ifMatchCondition, sendVersioned } from '../../http/preconditions.js';
import type { GroupRecord } from '../../store/store.js';
import type { ScimGroupsService } from './scim-groups.service.js';
import {
  groupChangesFrom,
  groupChangesFromPatch,
  toScimGroup,
  wantsMembers,
} from './scim.groups.js';
import { baseUrl, sendScim } from './scim.http.js';
import { readOperations } from './scim.patch.js';
import { project, readProjection } from './scim.projection.js';
import { pagedResponse, readPaging } from './scim.paging.js';
import {
  ListQuery,
  ProjectionQuery,
  ResourceParams,
  SCIM_MEDIA_TYPE,
  ScimGroupBody,
  ScimGroupPatchBody,
  ScimParams,
  ScimResponse,
  SearchRequest,
  scimErrors,
  scimSecurity,
  searchQuery,
} from './scim.schemas.js';
import type { ScimScope, ScimService } from './scim.service.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['scim'];

export function registerScimGroupRoutes(
  app: FastifyInstance,
  deps: { scim: ScimService; groups: ScimGroupsService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { scim, groups, cursors } = deps;

  async function representation(
    request: FastifyRequest,
    scope: ScimScope,
    group: GroupRecord,
    query = request.query as ProjectionQuery,
  ) {
    const projection = readProjection(query.attributes, query.excludedAttributes);
    const members = wantsMembers(projection)
      ? await groups.membersOf(scope, group.displayName)
      : null;
    return project(
      toScimGroup(group, members, baseUrl(request, scope.application.clientId)),
      projection,
    );
  }

  /** A ListResponse of Groups for a list query (GET /Groups, POST /Groups/.search). */
  async function listGroups(request: FastifyRequest, clientId: string, query: ListQuery) {
    const scope = await scim.scopeOf(clientId);
    const cursorScope = JSON.stringify(['scim-groups', clientId, query.filter ?? null]);
    const paging = readPaging(query, cursors, cursorScope);
    const all = await groups.listGroups(scope, query.filter, baseUrl(request, clientId));
    const after = paging.after;
    const from =
      paging.startIndex === null
        ? after === null
          ? 0
          : all.findIndex((group) => group.id > after)
        : paging.startIndex - 1;
    const rest = from === -1 ? [] : all.slice(from, from + paging.count + 1);
    const rendered = await Promise.all(
      rest.slice(0, paging.count).map((group) => representation(request, scope, group, query)),
    );
    const byId = new Map(rendered.map((body) => [body.id as string, body]));
    return pagedResponse({
      paging,
      items: rest,
      total: all.length,
      render: (group) => byId.get(group.id)!,
      positionOf: (group) => group.id,
      cursors,
      cursorScope,
    });
  }

  async function sendGroup(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ScimScope,
    group: GroupRecord,
    status = 200,
  ) {
    const body = await representation(request, scope, group);
    reply.type(SCIM_MEDIA_TYPE);
    if (status === 201) reply.header('location', (body.meta as { location: string }).location);
    return sendVersioned(request, reply, group.etag, body, status);
  }

  api.get(
    '/Groups',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'listScimGroups',
        summary: 'List or filter groups (roles)',
        security: scimSecurity,
        params: ScimParams,
        querystring: ListQuery,
        response: { 200: ScimResponse('A ListResponse'), ...scimErrors() },
      },
    },
    async function listScimGroups(request, reply) {
      const query = request.query;
      return sendScim(reply, 200, await listGroups(request, request.params.client_id, query));
    },
  );

  api.post(
    '/Groups/.search',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'searchScimGroups',
        summary: 'List or filter groups, the query in the body (RFC 7644 §3.4.3)',
        security: scimSecurity,
        params: ScimParams,
        body: SearchRequest,
        response: { 200: ScimResponse('A ListResponse'), ...scimErrors(413, 415) },
      },
    },
    async function searchScimGroups(request, reply) {
      const query = searchQuery(request.body);
      return sendScim(reply, 200, await listGroups(request, request.params.client_id, query));
    },
  );

  api.post(
    '/Groups',
    {
      bodyLimit: BODY_LIMITS.batch,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'createScimGroup',
        summary: 'Create a group (a role); members get the role',
        security: scimSecurity,
        params: ScimParams,
        querystring: ProjectionQuery,
        body: ScimGroupBody,
        response: {
          201: ScimResponse('The group', ['location', 'etag']),
          ...scimErrors(409, 413, 415),
        },
      },
    },
    async function createScimGroup(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const group = await groups.createGroup(
        scope,
        groupChangesFrom(request.body),
        scimOrigin(request),
      );
      return sendGroup(request, reply, scope, group, 201);
    },
  );

  api.get(
    '/Groups/:id',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'getScimGroup',
        summary: 'Get a group',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        response: {
          200: ScimResponse('The group', ['etag']),
          304: { description: 'Not modified', type: 'null' },
          ...scimErrors(),
        },
      },
    },
    async function getScimGroup(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      return sendGroup(request, reply, scope, await groups.findGroup(scope, request.params.id));
    },
  );

  api.put(
    '/Groups/:id',
    {
      bodyLimit: BODY_LIMITS.batch,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'replaceScimGroup',
        summary: 'Replace a group: its name and every member',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        body: ScimGroupBody,
        response: { 200: ScimResponse('The group', ['etag']), ...scimErrors(409, 412, 413, 415) },
      },
    },
    async function replaceScimGroup(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const changes = groupChangesFrom(request.body);
      const group = await groups.updateGroup(
        scope,
        request.params.id,
        changes,
        ifMatchCondition(request),
        scimOrigin(request),
      );
      return sendGroup(request, reply, scope, group);
    },
  );

  api.patch(
    '/Groups/:id',
    {
      bodyLimit: BODY_LIMITS.batch,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'patchScimGroup',
        summary: 'Change a group (PatchOp): rename it, add or remove members',
        description:
          'Answers 204 (with ETag), or 200 with the group when attributes or excludedAttributes is given.',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        body: ScimGroupPatchBody,
        response: {
          200: ScimResponse('The group', ['etag']),
          204: { description: 'Changed', type: 'null', headers: { etag: { type: 'string' } } },
          ...scimErrors(409, 412, 413, 415),
        },
      },
    },
    async function patchScimGroup(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const operations = readOperations(request.body);
      const current = await groups.findGroup(scope, request.params.id);
      const changes = groupChangesFromPatch(current, operations);
      const group = await groups.updateGroup(
        scope,
        request.params.id,
        changes,
        ifMatchCondition(request),
        scimOrigin(request),
      );
      if (
        request.query.attributes !== undefined ||
        request.query.excludedAttributes !== undefined
      ) {
        return sendGroup(request, reply, scope, group);
      }
      // Entra asks for 204 here; a body with every member would cost a scan of the role.
      return reply.code(204).header('etag', formatEtag(group.etag)).send(null);
    },
  );

  api.delete(
    '/Groups/:id',
    {
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'deleteScimGroup',
        summary: 'Delete a group: its members lose the role',
        security: scimSecurity,
        params: ResourceParams,
        response: { 204: { description: 'Deleted', type: 'null' }, ...scimErrors(412) },
      },
    },
    async function deleteScimGroup(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      await groups.deleteGroup(
        scope,
        request.params.id,
        ifMatchCondition(request),
        scimOrigin(request),
      );
      return reply.code(204).send(null);
    },
  );
}
