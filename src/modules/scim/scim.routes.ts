// SCIM 2.0 at /scim/v2/<client_id>: discovery, Users, and the search of every resource type
// (POST /.search). Groups are in scim-groups.routes.ts.

import { scimOrigin } from '../request-origin.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CursorCodec } from '../../http/pagination.js';
import { ifMatchCondition, sendVersioned } from '../../http/preconditions.js';
import type { GroupRecord, UserQueryPage, UserRecord } from '../../store/store.js';
import { listResponse, resourceTypes, schemas, serviceProviderConfig } from './scim.discovery.js';
import { ScimError, scimBadRequest } from './scim.errors.js';
import type { ScimGroupsService } from './scim-groups.service.js';
import { toScimGroup, wantsMembers } from './scim.groups.js';
import { baseUrl, sendScim } from './scim.http.js';
import { readOperations } from './scim.patch.js';
import { type ListPaging, pagedResponse, readPaging } from './scim.paging.js';
import { type Projection, project, readProjection } from './scim.projection.js';
import {
  ListQuery,
  ProjectionQuery,
  ResourceParams,
  ResourceTypeParams,
  SCIM_MEDIA_TYPE,
  SchemaParams,
  ScimUserBody,
  ScimUserPatchBody,
  ScimParams,
  ScimResponse,
  SearchRequest,
  scimErrors,
  scimSecurity,
  searchQuery,
} from './scim.schemas.js';
import type { ScimScope, ScimService } from './scim.service.js';
import { toScimUser } from './scim.users.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['scim'];

export function registerScimRoutes(
  app: FastifyInstance,
  deps: { scim: ScimService; groups: ScimGroupsService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { scim, groups, cursors } = deps;

  const render =
    (request: FastifyRequest, clientId: string, groups: GroupRecord[], projection: Projection) =>
    (user: UserRecord) =>
      project(toScimUser(user, groups, baseUrl(request, clientId)), projection);

  async function sendUser(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ScimScope,
    user: UserRecord,
    status = 200,
  ) {
    const clientId = scope.application.clientId;
    const groups = await scim.groupsOf(scope);
    const query = request.query as ProjectionQuery;
    const body = render(
      request,
      clientId,
      groups,
      readProjection(query.attributes, query.excludedAttributes),
    )(user);
    reply.type(SCIM_MEDIA_TYPE);
    if (status === 201) reply.header('location', (body.meta as { location: string }).location);
    return sendVersioned(request, reply, user.etag, body, status);
  }

  /**
   * The lookup before every Okta and Entra create (`userName eq "…"`, `externalId eq "…"`) in
   * one read of the store. The same response as the general path below (a test compares them
   * byte for byte); null to take that path, which also reports every error in its order.
   */
  async function quickLookup(
    request: FastifyRequest,
    query: ListQuery,
    clientId: string,
    cursorScope: string,
  ) {
    if (query.filter === undefined || query.cursor !== undefined) return null;
    let paging: ListPaging;
    let projection: Projection;
    let predicate: ReturnType<ScimService['predicateOf']>;
    try {
      paging = readPaging(query, cursors, cursorScope);
      projection = readProjection(query.attributes, query.excludedAttributes);
      predicate = scim.lookupPredicateOf(query.filter);
    } catch {
      return null;
    }
    const found = await scim.lookupUsers(clientId, predicate, {
      offset: paging.startIndex! - 1,
      limit: paging.count,
    });
    if (found === null) return null;
    const base = baseUrl(request, clientId);
    return pagedResponse({
      paging,
      items: found.users,
      total: found.total,
      render: ({ user, groups }) => project(toScimUser(user, groups, base), projection),
      positionOf: ({ user }) => user.identifier,
      cursors,
      cursorScope,
    });
  }

  /** A ListResponse of Users for a list query (GET /Users, POST /Users/.search). */
  async function listUsers(request: FastifyRequest, clientId: string, query: ListQuery) {
    const cursorScope = JSON.stringify(['scim-users', clientId, query.filter ?? null]);
    const quick = await quickLookup(request, query, clientId, cursorScope);
    if (quick !== null) return quick;
    const { scope, groups } = await scim.scopeWithGroups(clientId);
    const paging = readPaging(query, cursors, cursorScope);
    const projection = readProjection(query.attributes, query.excludedAttributes);
    const page: UserQueryPage =
      paging.startIndex === null
        ? { after: paging.after, limit: paging.count + 1 }
        : { offset: paging.startIndex - 1, limit: paging.count };
    const { users, total } = await scim.listUsers(scope, query.filter, page);
    return pagedResponse({
      paging,
      items: users,
      total,
      render: render(request, clientId, groups, projection),
      positionOf: (user) => user.identifier,
      cursors,
      cursorScope,
    });
  }

  /**
   * POST /.search at the root: the Users matching the filter, then the Groups, as one list with
   * index paging. A filter only one of them can take (`members pr`) finds none of the other.
   */
  async function searchAll(request: FastifyRequest, clientId: string, query: ListQuery) {
    if (query.cursor !== undefined) {
      throw scimBadRequest(
        'invalidValue',
        'A search of every resource type pages by startIndex; cursors page /Users/.search and /Groups/.search.',
      );
    }
    const paging = readPaging(query, cursors, '');
    const start = paging.startIndex! - 1;
    const projection = readProjection(query.attributes, query.excludedAttributes);
    const { scope, groups: roles } = await scim.scopeWithGroups(clientId);
    const base = baseUrl(request, clientId);
    const [users, groupList] = await Promise.allSettled([
      scim.listUsers(scope, query.filter, { offset: start, limit: paging.count }),
      groups.listGroups(scope, query.filter, base),
    ]);
    if (users.status === 'rejected' && groupList.status === 'rejected') throw users.reason;
    for (const result of [users, groupList]) {
      if (result.status === 'rejected' && !(result.reason instanceof ScimError))
        throw result.reason;
    }
    const foundUsers = users.status === 'fulfilled' ? users.value : { users: [], total: 0 };
    const foundGroups = groupList.status === 'fulfilled' ? groupList.value : [];
    const groupsFrom = Math.max(0, start - foundUsers.total);
    const pageGroups = foundGroups.slice(
      groupsFrom,
      groupsFrom + paging.count - foundUsers.users.length,
    );
    const resources = [
      ...foundUsers.users.map(render(request, clientId, roles, projection)),
      ...(await Promise.all(
        pageGroups.map(async (group) =>
          project(
            toScimGroup(
              group,
              wantsMembers(projection) ? await groups.membersOf(scope, group.displayName) : null,
              base,
            ),
            projection,
          ),
        ),
      )),
    ];
    return listResponse(resources, {
      totalResults: foundUsers.total + foundGroups.length,
      startIndex: paging.startIndex,
    });
  }

  const discovery = (
    path: string,
    operationId: string,
    summary: string,
    build: (base: string) => unknown,
  ) =>
    api.get(
      path,
      {
        config: { role: 'users:read' },
        schema: {
          tags,
          operationId,
          summary,
          security: scimSecurity,
          params: ScimParams,
          response: { 200: ScimResponse(summary), ...scimErrors() },
        },
      },
      async function serveDiscovery(request, reply) {
        await scim.scopeOf(request.params.client_id);
        return sendScim(reply, 200, build(baseUrl(request, request.params.client_id)));
      },
    );
  discovery(
    '/ServiceProviderConfig',
    'getScimServiceProviderConfig',
    'What this SCIM service supports',
    serviceProviderConfig,
  );
  discovery('/ResourceTypes', 'listScimResourceTypes', 'The resource types (User, Group)', (base) =>
    listResponse(resourceTypes(base)),
  );
  discovery('/Schemas', 'listScimSchemas', 'The schemas of User and Group', (base) =>
    listResponse(schemas(base)),
  );

  /** One discovery resource by its id (RFC 7644 §4), as it appears in its list. */
  const discoveryById = (
    path: string,
    operationId: string,
    summary: string,
    what: string,
    params: typeof ResourceTypeParams,
    list: (base: string) => Record<string, unknown>[],
  ) =>
    api.get(
      path,
      {
        config: { role: 'users:read' },
        schema: {
          tags,
          operationId,
          summary,
          security: scimSecurity,
          params,
          response: { 200: ScimResponse(summary), ...scimErrors() },
        },
      },
      async function serveDiscoveryById(request, reply) {
        const { client_id: clientId, id } = request.params;
        await scim.scopeOf(clientId);
        const found = list(baseUrl(request, clientId)).find((resource) => resource.id === id);
        if (found === undefined) {
          throw new ScimError(404, null, `No ${what} "${id.slice(0, 200)}".`);
        }
        return sendScim(reply, 200, found);
      },
    );
  discoveryById(
    '/ResourceTypes/:id',
    'getScimResourceType',
    'A resource type by its name (User, Group)',
    'resource type',
    ResourceTypeParams,
    resourceTypes,
  );
  discoveryById(
    '/Schemas/:id',
    'getScimSchema',
    'A schema by its URN',
    'schema',
    SchemaParams,
    schemas,
  );

  api.get(
    '/Users',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'listScimUsers',
        summary: 'List or filter users (index or cursor paging)',
        security: scimSecurity,
        params: ScimParams,
        querystring: ListQuery,
        response: { 200: ScimResponse('A ListResponse'), ...scimErrors() },
      },
    },
    async function listScimUsers(request, reply) {
      return sendScim(
        reply,
        200,
        await listUsers(request, request.params.client_id, request.query),
      );
    },
  );

  api.post(
    '/Users/.search',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'searchScimUsers',
        summary: 'List or filter users, the query in the body (RFC 7644 §3.4.3)',
        security: scimSecurity,
        params: ScimParams,
        body: SearchRequest,
        response: { 200: ScimResponse('A ListResponse'), ...scimErrors(413, 415) },
      },
    },
    async function searchScimUsers(request, reply) {
      const query = searchQuery(request.body);
      return sendScim(reply, 200, await listUsers(request, request.params.client_id, query));
    },
  );

  api.post(
    '/.search',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'searchScim',
        summary: 'Search Users, then Groups (RFC 7644 §3.4.3; index paging)',
        security: scimSecurity,
        params: ScimParams,
        body: SearchRequest,
        response: { 200: ScimResponse('A ListResponse'), ...scimErrors(413, 415) },
      },
    },
    async function searchScim(request, reply) {
      const query = searchQuery(request.body);
      return sendScim(reply, 200, await searchAll(request, request.params.client_id, query));
    },
  );

  api.post(
    '/Users',
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'createScimUser',
        summary: 'Provision a user',
        security: scimSecurity,
        params: ScimParams,
        querystring: ProjectionQuery,
        body: ScimUserBody,
        response: {
          201: ScimResponse('The user', ['location', 'etag']),
          ...scimErrors(409, 413, 415),
        },
      },
    },
    async function createScimUser(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const user = await scim.createUser(scope, request.body, scimOrigin(request));
      return sendUser(request, reply, scope, user, 201);
    },
  );

  api.get(
    '/Users/:id',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'getScimUser',
        summary: 'Get a user',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        response: {
          200: ScimResponse('The user', ['etag']),
          304: { description: 'Not modified', type: 'null' },
          ...scimErrors(),
        },
      },
    },
    async function getScimUser(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const user = await scim.findUser(scope, request.params.id);
      return sendUser(request, reply, scope, user);
    },
  );

  api.put(
    '/Users/:id',
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'replaceScimUser',
        summary: 'Replace a user (active left out keeps its value)',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        body: ScimUserBody,
        response: { 200: ScimResponse('The user', ['etag']), ...scimErrors(409, 412, 413, 415) },
      },
    },
    async function replaceScimUser(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      const user = await scim.replaceUser(
        scope,
        request.params.id,
        request.body,
        ifMatchCondition(request),
        scimOrigin(request),
      );
      return sendUser(request, reply, scope, user);
    },
  );

  api.patch(
    '/Users/:id',
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'patchScimUser',
        summary: 'Change a user (PatchOp)',
        security: scimSecurity,
        params: ResourceParams,
        querystring: ProjectionQuery,
        body: ScimUserPatchBody,
        response: { 200: ScimResponse('The user', ['etag']), ...scimErrors(409, 412, 413, 415) },
      },
    },
    async function patchScimUser(request, reply) {
      const { client_id: clientId, id } = request.params;
      const scope = await scim.scopeOf(clientId);
      const operations = readOperations(request.body);
      const user = await scim.patchUser(
        scope,
        id,
        operations,
        ifMatchCondition(request),
        baseUrl(request, clientId),
        scimOrigin(request),
      );
      return sendUser(request, reply, scope, user);
    },
  );

  api.delete(
    '/Users/:id',
    {
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'deleteScimUser',
        summary: 'Delete a user',
        security: scimSecurity,
        params: ResourceParams,
        response: { 204: { description: 'Deleted', type: 'null' }, ...scimErrors(412) },
      },
    },
    async function deleteScimUser(request, reply) {
      const scope = await scim.scopeOf(request.params.client_id);
      await scim.deleteUser(
        scope,
        request.params.id,
        ifMatchCondition(request),
        scimOrigin(request),
      );
      return reply.code(204).send(null);
    },
  );
}
