// The audit trail in the console: the event feed with the API's filters, paged on by event id,
// and a live tail (a long poll per request) so new events appear as they are committed.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../../clock.js';
import type { EventFilter } from '../../store/store.js';
import { EventQuery } from '../events/events.schemas.js';
import {
  EVENT_FILTERS,
  type EventFilterValues,
  eventRows,
  eventsPage,
  liveTail,
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
const DAY_MS = 86_400_000;

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
  clock: Clock,
): { filter: EventFilter; errors: FieldErrors } {
  const given = Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== ''));
  let errors: FieldErrors = new Map();
  try {
    assertBody(EventQuery, given);
  } catch (error) {
    errors = formProblem(error).errors;
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
      since: filters.since === '' ? clock.now() - DAY_MS : Date.parse(filters.since),
      until: null,
      visibleClientIds: viewerOf(request).applications,
    },
  };
}

export function registerConsoleEventRoutes(
  app: FastifyInstance,
  services: ConsoleServices,
  clock: Clock,
): void {
  const { events } = services;

  app.get(
    '/events',
    { config: { role: 'events:read' }, schema: { hide: true } },
    async function showEvents(request, reply) {
      const filters = filtersOf(request);
      const { filter, errors } = checkedFilter(request, filters, clock);
      const after = (request.query as { after?: string }).after ?? null;
      const rows =
        errors.size > 0
          ? []
          : await events.listEvents({ filter, after, limit: PAGE_SIZE + 1, waitMs: 0 });
      const shown = rows.slice(0, PAGE_SIZE);
      const full = rows.length > PAGE_SIZE;
      return sendPage(
        reply,
        errors.size > 0 ? 400 : 200,
        eventsPage(viewerOf(request), {
          filters,
          errors,
          events: shown,
          next: full ? shown.at(-1)!.id : null,
          liveAfter: shown.at(-1)?.id ?? after,
          live: !full && errors.size === 0,
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
      const { filter, errors } = checkedFilter(request, filters, clock);
      if (errors.size > 0) return sendPage(reply, 400, markup``);
      const after = (request.query as { after?: string }).after ?? null;
      const rows = await events.listEvents({
        filter,
        after,
        limit: PAGE_SIZE,
        waitMs: LIVE_WAIT_MS,
      });
      const next = rows.at(-1)?.id ?? after;
      return sendPage(
        reply,
        200,
        markup`${rows.length > 0 ? markup`<tbody class="new-events">${eventRows(rows)}</tbody>` : ''}${liveTail(filters, next)}`,
      );
    },
  );
}
