// An application's users in the console: the list's filters and keyset paging (a page deep in
// a million users costs what the first does), create, edit with roles and scopes as chips,
// activate or deactivate, delete.

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem } from '../../problems.js';
import type { UserFilter, UserPosition } from '../../store/store.js';
import { toExportLine } from '../imports/imports.schemas.js';
import type { UserProfile } from '../users/users.domain.js';
import {
  type ConsoleServices,
  consoleOrigin,
  formOf,
  formProblem,
  noticeOf,
  redirectAfterPost,
  sendPage,
  viewerOf,
} from './console-kit.js';
import { type FieldErrors, type Viewer, can } from './console-layout.view.js';
import { actorKeyIds, historySection } from './console-events.view.js';
import { html } from './html.js';
import {
  USER_FILTERS,
  type UserFilterValues,
  type UserFormValues,
  newUserPage,
  userPage,
  userValuesOf,
  usersPage,
} from './console-users.view.js';
import {
  type FormFields,
  UserFilters,
  assertBody,
  formList,
  formText,
  uniqueList,
} from './console.schemas.js';

const PAGE_SIZE = 50;
/** Events shown on a user's page; the rest are a link away. */
const HISTORY_SIZE = 10;

const NOTICES: Record<string, string> = {
  created: 'The user was created.',
  saved: 'The changes were saved.',
  unchanged: 'Nothing changed.',
  activated: 'The user is active.',
  deactivated: 'The user is inactive.',
  deleted: 'The user was deleted.',
};

/** The position after which the next page starts, as an opaque cursor of the page's links. */
export function encodeUserCursor(position: UserPosition): string {
  return Buffer.from(JSON.stringify([position.provider, position.identifier])).toString(
    'base64url',
  );
}

function decodeUserCursor(cursor: string): UserPosition {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      value.every((part) => typeof part === 'string')
    ) {
      return { provider: value[0] as string, identifier: value[1] as string };
    }
  } catch {
    // answered below
  }
  throw problem('validation-failed', 'This page link is damaged; start from the first page.');
}

function valuesFrom(form: FormFields): UserFormValues {
  return {
    provider: formText(form, 'provider').trim(),
    identifier: formText(form, 'identifier'),
    name: formText(form, 'name'),
    email: formText(form, 'email').trim(),
    locale: formText(form, 'locale').trim(),
    avatar: formText(form, 'avatar').trim(),
    roles: uniqueList([...(form.roles ?? []), ...formList(form, 'roles_new')]),
    scopes: uniqueList([...(form.scopes ?? []), ...formList(form, 'scopes_new')]),
    roles_new: '',
    scopes_new: '',
  };
}

/** The form's profile: the service checks it, and its errors' pointers name the form's fields. */
function profileOf(values: UserFormValues): UserProfile {
  return {
    name: values.name,
    email: values.email,
    locale: values.locale,
    avatar: values.avatar === '' ? null : values.avatar,
    roles: values.roles,
    scopes: values.scopes,
  };
}

export function registerConsoleUserRoutes(app: FastifyInstance, services: ConsoleServices): void {
  const { users, applications } = services;
  const base = (clientId: string) => `/console/applications/${clientId}/users`;

  /** The page's application; the console's hook has checked the key may act on it. */
  function clientIdOf(request: FastifyRequest): string {
    return (request.params as { client_id: string }).client_id;
  }

  app.get(
    '/applications/:client_id/users',
    { config: { role: 'users:read' }, schema: { hide: true } },
    async function listUsers(request, reply) {
      const clientId = clientIdOf(request);
      const query = request.query as Record<string, string | undefined>;
      const { filter, filters, filterErrors } = readUserFilter(clientId, query);
      const application = await applications.findApplication(clientId);
      const after = query.after === undefined ? null : decodeUserCursor(query.after);
      const rows = filterErrors.size > 0 ? [] : await users.listUsers(filter, after, PAGE_SIZE + 1);
      const items = rows.slice(0, PAGE_SIZE);
      return sendPage(
        reply,
        filterErrors.size > 0 ? 400 : 200,
        usersPage(
          viewerOf(request),
          {
            clientId,
            displayName: application.displayName,
            filters,
            filterErrors,
            items,
            next: rows.length > PAGE_SIZE ? encodeUserCursor(items.at(-1)!) : null,
            paged: after !== null,
          },
          noticeOf(request, NOTICES),
        ),
      );
    },
  );

  app.get(
    '/applications/:client_id/users/export',
    { config: { role: 'users:read' }, schema: { hide: true } },
    async function exportUsers(request, reply) {
      const clientId = clientIdOf(request);
      const query = request.query as Record<string, string | undefined>;
      const { filter, filterErrors } = readUserFilter(clientId, query);
      // The list shows what is wrong with the filters.
      if (filterErrors.size > 0) {
        const search = new URLSearchParams(query as Record<string, string>).toString();
        return reply.redirect(`${base(clientId)}?${search}`, 303);
      }
      const pages = await users.exportUsers(filter, 1000);
      async function* lines() {
        for await (const page of pages) yield page.map(toExportLine).join('');
      }
      return reply
        .type('application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="${clientId}-users.ndjson"`)
        .send(Readable.from(lines()));
    },
  );

  app.get(
    '/applications/:client_id/users/new',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function newUser(request, reply) {
      const clientId = clientIdOf(request);
      await applications.findApplication(clientId);
      return sendPage(
        reply,
        200,
        newUserPage(viewerOf(request), clientId, valuesFrom({ locale: ['en'] }), new Map(), null),
      );
    },
  );

  app.post(
    '/applications/:client_id/users',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function createUser(request, reply) {
      const clientId = clientIdOf(request);
      const values = valuesFrom(formOf(request));
      try {
        const user = await users.createUser(
          clientId,
          { provider: values.provider, identifier: values.identifier, ...profileOf(values) },
          consoleOrigin(request),
        );
        return redirectAfterPost(reply, `${base(clientId)}/${user.id}?notice=created`);
      } catch (error) {
        const { errors, message, status } = formProblem(error);
        return sendPage(
          reply,
          status,
          newUserPage(viewerOf(request), clientId, values, errors, message),
        );
      }
    },
  );

  /** The user's own events, newest first (by its id: a renamed user keeps its history). */
  async function userHistory(viewer: Viewer, clientId: string, userId: string) {
    const found = await services.events.listEventsNewestFirst(
      {
        types: null,
        clientId,
        actorId: null,
        resourceType: 'user',
        resourceId: userId,
        since: null,
        until: null,
        visibleClientIds: viewer.applications,
      },
      null,
      HISTORY_SIZE + 1,
    );
    const shown = found.slice(0, HISTORY_SIZE);
    return historySection(viewer, {
      events: shown,
      names: await services.apiKeys.findKeyNames(actorKeyIds(shown)),
      more:
        found.length > HISTORY_SIZE
          ? `/console/events?${new URLSearchParams({ client_id: clientId, resource_type: 'user', resource_id: userId }).toString()}`
          : null,
    });
  }

  app.get(
    '/applications/:client_id/users/:id',
    { config: { role: 'users:read' }, schema: { hide: true } },
    async function showUser(request, reply) {
      const clientId = clientIdOf(request);
      const { id } = request.params as { id: string };
      const user = await users.findUser({ clientId, id });
      const viewer = viewerOf(request);
      return sendPage(
        reply,
        200,
        userPage(
          viewer,
          clientId,
          user,
          { values: userValuesOf(user), errors: new Map(), message: null },
          noticeOf(request, NOTICES),
          can(viewer, 'events:read') ? await userHistory(viewer, clientId, user.id) : html``,
        ),
      );
    },
  );

  app.post(
    '/applications/:client_id/users/:id',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function saveUser(request, reply) {
      const clientId = clientIdOf(request);
      const { id } = request.params as { id: string };
      const form = formOf(request);
      const values = valuesFrom(form);
      const etag = formText(form, 'etag');
      try {
        const before = await users.findUser({ clientId, id });
        const saved = await users.replaceUser(
          { clientId, id },
          profileOf(values),
          (version) => version === etag,
          consoleOrigin(request),
        );
        const notice = saved.etag === before.etag ? 'unchanged' : 'saved';
        return redirectAfterPost(reply, `${base(clientId)}/${id}?notice=${notice}`);
      } catch (error) {
        const { errors, message, status } = formProblem(error);
        const user = await users.findUser({ clientId, id });
        const form =
          status === 412
            ? { values: userValuesOf(user), errors, message }
            : {
                values: { ...values, provider: user.provider, identifier: user.identifier },
                errors,
                message,
              };
        return sendPage(reply, status, userPage(viewerOf(request), clientId, user, form, null));
      }
    },
  );

  app.post(
    '/applications/:client_id/users/:id/active',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function setActive(request, reply) {
      const clientId = clientIdOf(request);
      const { id } = request.params as { id: string };
      const active = formText(formOf(request), 'active') === 'true';
      await users.updateUser(
        { clientId, id },
        () => true,
        consoleOrigin(request),
        () => ({
          active,
        }),
      );
      return redirectAfterPost(
        reply,
        `${base(clientId)}/${id}?notice=${active ? 'activated' : 'deactivated'}`,
      );
    },
  );

  app.post(
    '/applications/:client_id/users/:id/delete',
    { config: { role: 'users:write' }, schema: { hide: true } },
    async function deleteUser(request, reply) {
      const clientId = clientIdOf(request);
      const { id } = request.params as { id: string };
      if (formText(formOf(request), 'confirm') !== 'yes') {
        throw problem(
          'validation-failed',
          'Tick the confirmation box to delete the user; nothing was deleted.',
        );
      }
      await users.deleteUser({ clientId, id }, () => true, consoleOrigin(request));
      return redirectAfterPost(reply, `${base(clientId)}?notice=deleted`);
    },
  );
}

/** The list's filters from a query: the store's filter, the form's values, and their errors. */
function readUserFilter(
  clientId: string,
  query: Record<string, string | undefined>,
): { filter: UserFilter; filters: UserFilterValues; filterErrors: FieldErrors } {
  const filters = Object.fromEntries(
    USER_FILTERS.map((name) => [name, (query[name] ?? '').trim()]),
  ) as UserFilterValues;
  const filter: UserFilter = {
    clientId,
    provider: filters.provider || null,
    email: filters.email || null,
    role: filters.role || null,
    scope: filters.scope || null,
    active:
      filters.active === ''
        ? null
        : filters.active === 'true'
          ? true
          : filters.active === 'false'
            ? false
            : null,
  };
  let filterErrors: FieldErrors = new Map();
  try {
    const { clientId: _clientId, ...checked } = filter;
    assertBody(UserFilters, {
      ...checked,
      active: filters.active === '' ? null : (filter.active ?? filters.active),
    });
  } catch (error) {
    filterErrors = formProblem(error).errors;
  }
  return { filter, filters, filterErrors };
}
