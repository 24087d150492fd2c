// The audit trail in the console: the event feed with the API's filters, newest first and
// paged on to older events by id, with a live head (a long poll per request) so new events
// appear at the top as they are committed; one event in full.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem } from '../../problems.js';
import type { EventFilter } from '../../store/store.js';
import { EventQuery } from '../events/events.schemas.js';
import {
  EVENT_FILTERS,
  type EventFilterValues,
  actorKeyIds,
  eventPage,
  eventRows,
  eventsPage,
  liveHead,
} from './console-events.view.js';
import {
  type ConsoleServices,
  formProblem,
  requireApplication,
  sendPage,
  viewerOf,
} from './console-kit.js';
import type { FieldErrors } from './console-layout.view.js';
import { assertBody } from './console.schemas.js';
import { html as markup } from './html.js';

const PAGE_SIZE = 50;
/** How long one live request waits for a new event before answering with none. */
const LIVE_WAIT_MS = 20_000;
/** The longest resource id the filter takes (ids are UUIDs; anything longer matches nothing). */
const MAX_RESOURCE_ID = 200;

function filtersOf(request: FastifyRequest): EventFilterValues {
  const query = request.query as Record<string, string | undefined>;
  return Object.fromEntries(
    EVENT_FILTERS.map((name) => [name, (query[name] ?? '').trim()]),
  ) as EventFilterValues;
}

/** The filters as the store's, checked by the API's own query schema (errors by field). */
function checkedFilter(
  request: FastifyRequest,
  filters: EventFilterValues,
): { filter: EventFilter; errors: FieldErrors } {
  // resource_id is the console's own filter: the API's query schema does not know it.
  const given = Object.fromEntries(
    Object.entries(filters).filter(([name, value]) => value !== '' && name !== 'resource_id'),
  );
  let errors: FieldErrors = new Map();
  try {
    assertBody(EventQuery, given);
  } catch (error) {
    errors = formProblem(error).errors;
  }
  if (filters.resource_id.length > MAX_RESOURCE_ID) {
    errors.set('resource_id', [`must be at most ${MAX_RESOURCE_ID} characters`]);
  }
  if (filters.client_id !== '') requireApplication(request, filters.client_id);
  const types =
    filters.type === ''
      ? null
      : [...new Set(filters.type.split(','))].map((type) =>
          type.endsWith('.*') ? type.slice(0, -1) : type,
        );
  return {
    errors,
    filter: {
      types,
      clientId: filters.client_id || null,
      actorId: filters.actor_id || null,
      resourceType: filters.resource_type || null,
      resourceId: filters.resource_id || null,
      since: filters.since === '' ? null : Date.parse(filters.since),
      until: null,
      visibleClientIds: viewerOf(request).applications,
    },
  };
}

export function registerConsoleEventRoutes(app: FastifyInstance, services: ConsoleServices): void {
  const { events, apiKeys } = services;

  app.get(
    '/events',
    { config: { role: 'events:read' }, schema: { hide: true } },
    async function showEvents(request, reply) {
      const filters = filtersOf(request);
      const { filter, errors } = checkedFilter(request, filters);
      const before = (request.query as { before?: string }).before ?? null;
      const rows =
        errors.size > 0 ? [] : await events.listEventsNewestFirst(filter, before, PAGE_SIZE + 1);
      const shown = rows.slice(0, PAGE_SIZE);
      const newest = before === null;
      return sendPage(
        reply,
        errors.size > 0 ? 400 : 200,
        eventsPage(viewerOf(request), {
          filters,
          errors,
          events: shown,
          names: await apiKeys.findKeyNames(actorKeyIds(shown)),
          older: rows.length > PAGE_SIZE ? shown.at(-1)!.id : null,
          paged: !newest,
          // An empty feed follows from its newest event (a filter may hide them all).
          liveAfter: shown[0]?.id ?? (await events.lastEventId()),
          live: newest && errors.size === 0,
        }),
      );
    },
  );

  app.get(
    '/events/live',
    // A page left open must not keep its session alive: polling is not activity.
    { config: { role: 'events:read', consolePassive: true }, schema: { hide: true } },
    async function followEvents(request, reply) {
      const filters = filtersOf(request);
      const { filter, errors } = checkedFilter(request, filters);
      if (errors.size > 0) return sendPage(reply, 400, markup``);
      const after = (request.query as { after?: string }).after ?? null;
      const rows = await events.listEvents({
        filter,
        after,
        limit: PAGE_SIZE,
        waitMs: LIVE_WAIT_MS,
      });
      const next = rows.at(-1)?.id ?? after;
      const newestFirst = rows.toReversed();
      const names = await apiKeys.findKeyNames(actorKeyIds(rows));
      return sendPage(
        reply,
        200,
        markup`${liveHead(filters, next)}${rows.length > 0 ? markup`<tbody class="new-events">${eventRows(viewerOf(request), newestFirst, names)}</tbody>` : ''}`,
      );
    },
  );

  app.get(
    '/events/:id',
    { config: { role: 'events:read' }, schema: { hide: true } },
    async function showEvent(request, reply) {
      const { id } = request.params as { id: string };
      const event = await events.findEvent(id, viewerOf(request).applications);
      if (event === undefined) {
        throw problem('not-found', `There is no event ${id}, or it is not for this key.`);
      }
      const names = await apiKeys.findKeyNames(actorKeyIds([event]));
      return sendPage(reply, 200, eventPage(viewerOf(request), event, names));
    },
  );
}
