import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requestOrigin } from '../request-origin.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type CursorCodec, invalidCursor, servePageText } from '../../http/pagination.js';
import { ifMatchCondition, sendVersioned } from '../../http/preconditions.js';
import { assertEchoesPath } from '../../http/path-echoes.js';
import { requestPath } from '../../http/request-path.js';
import {
  IfMatchHeaders,
  IfNoneMatchHeaders,
  JsonResponse,
  mergePatchMediaTypes,
  NoContent,
  NoQuery,
  NotModified,
  apiKeySecurity,
  problemResponses,
} from '../../http/schemas.js';
import type { UserFilter, UserIdentity, UserPosition, UserRecord } from '../../store/store.js';
import {
  CreateUserBody,
  ListUsersQuery,
  PatchUserBody,
  ReplaceUserBody,
  User,
  UserPage,
  UserParams,
  toUserResource,
  userPageJson,
} from './users.schemas.js';
import type { UserInput, UserProfile } from './users.domain.js';
import type { UserPatch, UsersService } from './users.service.js';
import { ApplicationParams } from '../applications/applications.schemas.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

const tags = ['users'];
/** What Fastify sends JSON as. */
const JSON_UTF8 = 'application/json; charset=utf-8';
const USER_PATH = '/applications/:client_id/users/:provider/:identifier';

function sendUser(request: FastifyRequest, reply: FastifyReply, user: UserRecord, status = 200) {
  return sendVersioned(request, reply, user.etag, toUserResource(user), status);
}

function identityOf(params: UserParams): UserIdentity {
  return { clientId: params.client_id, provider: params.provider, identifier: params.identifier };
}

/** A create body without the read-only members a client may echo back. */
function inputOf(clientId: string, body: CreateUserBody): UserInput {
  assertEchoesPath({ client_id: clientId }, body);
  const {
    id: _id,
    client_id: _clientId,
    created_at: _createdAt,
    updated_at: _updatedAt,
    ...input
  } = body;
  return input;
}

/** The members of a PUT or PATCH body that change the user; its identity may only repeat the path. */
function changesOf<T extends ReplaceUserBody | PatchUserBody>(
  params: UserParams,
  body: T,
): Omit<T, 'id' | 'client_id' | 'provider' | 'identifier' | 'created_at' | 'updated_at'> {
  assertEchoesPath(params, body);
  const {
    id: _id,
    client_id: _clientId,
    provider: _provider,
    identifier: _identifier,
    created_at: _createdAt,
    updated_at: _updatedAt,
    ...changes
  } = body;
  return changes;
}

/** Cursors are bound to the list they came from: the application and every filter. */
export function cursorScope(filter: UserFilter): string {
  return JSON.stringify([
    'users',
    filter.clientId,
    filter.provider,
    filter.email,
    filter.role,
    filter.scope,
    filter.active,
  ]);
}

/** The serializer of a body that is JSON text already. */
const asIs = (text: string) => text;

function toPosition(value: unknown): UserPosition {
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    typeof value[0] === 'string' &&
    typeof value[1] === 'string'
  ) {
    return { provider: value[0], identifier: value[1] };
  }
  throw invalidCursor();
}

export function registerUserRoutes(
  app: FastifyInstance,
  deps: { users: UsersService; cursors: CursorCodec },
): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { users, cursors } = deps;

  api.post(
    '/applications/:client_id/users',
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'createUser',
        summary: 'Enrol a user in an application',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: NoQuery,
        body: CreateUserBody,
        response: {
          201: JsonResponse(User, 'The user, created', ['location', 'etag']),
          ...problemResponses(403, 404, 409, 413, 415),
        },
      },
    },
    async function createUser(request, reply) {
      const { client_id: clientId } = request.params;
      const user = await users.createUser(
        clientId,
        inputOf(clientId, request.body),
        requestOrigin(request),
      );
      const location = `${requestPath(request)}/${encodeURIComponent(user.provider)}/${encodeURIComponent(user.identifier)}`;
      reply.header('location', location);
      return sendUser(request, reply, user, 201);
    },
  );

  api.get(
    '/applications/:client_id/users',
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'listUsers',
        summary: "List an application's users, by (provider, identifier)",
        description:
          'Keyset-paginated, in byte order of provider then identifier. Filters combine with AND; ' +
          '`email` matches exactly, ignoring case; `active` picks active or inactive users.',
        security: apiKeySecurity,
        params: ApplicationParams,
        querystring: ListUsersQuery,
        response: {
          200: JsonResponse(UserPage, 'A page of users', ['link']),
          ...problemResponses(403, 404),
        },
      },
    },
    async function listUsers(request, reply) {
      const filter: UserFilter = {
        clientId: request.params.client_id,
        provider: request.query.provider ?? null,
        email: request.query.email ?? null,
        role: request.query.role ?? null,
        scope: request.query.scope ?? null,
        active: request.query.active ?? null,
      };
      // PostgreSQL writes the page's JSON itself (sparing pg's parsing of every column);
      // otherwise, and for the rare page it does not write, the page is built from rows.
      const text = await servePageText({
        request,
        reply,
        cursors,
        scope: cursorScope(filter),
        query: request.query,
        toPosition,
        count: () => users.countUsers(filter),
        positionOf: (position: UserPosition) => [position.provider, position.identifier],
        fetch: (after, limit) => users.listUsersText(filter, after, limit),
        rows: {
          positionOf: (user: UserRecord) => [user.provider, user.identifier],
          fetch: (after, limit) => users.listUsers(filter, after, limit),
          toResource: toUserResource,
        },
        serialize: userPageJson,
      });
      // The text is the page's JSON already: the serializer passes it on as it is.
      return reply
        .type(JSON_UTF8)
        .serializer(asIs)
        .send(text as never);
    },
  );

  api.get(
    USER_PATH,
    {
      config: { role: 'users:read' },
      schema: {
        tags,
        operationId: 'getUser',
        summary: 'Get a user',
        security: apiKeySecurity,
        params: UserParams,
        querystring: NoQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: JsonResponse(User, 'The user', ['etag']),
          304: NotModified,
          ...problemResponses(403, 404),
        },
      },
    },
    async function getUser(request, reply) {
      const user = await users.findUser(identityOf(request.params));
      return sendUser(request, reply, user);
    },
  );

  api.put(
    USER_PATH,
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'replaceUser',
        summary: 'Replace a user',
        description: 'Omitted optional members return to their defaults (`avatar` → null).',
        security: apiKeySecurity,
        params: UserParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        body: ReplaceUserBody,
        response: {
          200: JsonResponse(User, 'The user, changed', ['etag']),
          ...problemResponses(403, 404, 412, 413, 415),
        },
      },
    },
    async function replaceUser(request, reply) {
      const profile: UserProfile = changesOf(request.params, request.body);
      const user = await users.replaceUser(
        identityOf(request.params),
        profile,
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return sendUser(request, reply, user);
    },
  );

  api.patch(
    USER_PATH,
    {
      bodyLimit: BODY_LIMITS.user,
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'patchUser',
        summary: 'Change some members of a user (JSON Merge Patch)',
        security: apiKeySecurity,
        params: UserParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        consumes: mergePatchMediaTypes,
        body: PatchUserBody,
        response: {
          200: JsonResponse(User, 'The user, changed', ['etag']),
          ...problemResponses(403, 404, 412, 413, 415),
        },
      },
    },
    async function patchUser(request, reply) {
      const patch: UserPatch = changesOf(request.params, request.body);
      const user = await users.patchUser(
        identityOf(request.params),
        patch,
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return sendUser(request, reply, user);
    },
  );

  api.delete(
    USER_PATH,
    {
      config: { role: 'users:write' },
      schema: {
        tags,
        operationId: 'deleteUser',
        summary: 'Delete a user',
        security: apiKeySecurity,
        params: UserParams,
        querystring: NoQuery,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...problemResponses(403, 404, 412) },
      },
    },
    async function deleteUser(request, reply) {
      await users.deleteUser(
        identityOf(request.params),
        ifMatchCondition(request),
        requestOrigin(request),
      );
      return reply.code(204).send(null);
    },
  );
}
