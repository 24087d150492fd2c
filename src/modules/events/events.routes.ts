import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { allowedApplications, assertApplicationAllowed } from '../../http/auth.js';
import { JsonResponse, apiKeySecurity, problemResponses } from '../../http/schemas.js';
import type { EventFilter } from '../../store/store.js';
import { EventPage, EventQuery, toEventResource } from './events.schemas.js';
import type { EventsService } from './events.service.js';

const tags = ['events'];

/** `user.*` → the prefix `user.`; other types as they are. */
function typeFilter(types: string | undefined): string[] | null {
  if (types === undefined) return null;
  return [...new Set(types.split(','))].map((type) =>
    type.endsWith('.*') ? type.slice(0, -1) : type,
  );
}

function filterOf(query: EventQuery, visible: readonly string[] | null): EventFilter {
  return {
    types: typeFilter(query.type),
    clientId: query.client_id ?? null,
    actorId: query.actor_id ?? null,
    resourceType: query.resource_type ?? null,
    since: query.since === undefined ? null : Date.parse(query.since),
    until: query.until === undefined ? null : Date.parse(query.until),
    visibleClientIds: visible,
  };
}

export function registerEventRoutes(app: FastifyInstance, deps: { events: EventsService }): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/events',
    {
      config: { role: 'events:read' },
      schema: {
        tags,
        operationId: 'listEvents',
        summary: 'Read the audit trail: every change, in commit order',
        description:
          'Ascending by id. Page on with `after` (the `next_after` of the previous page); with ' +
          '`wait`, an empty answer waits up to that many seconds for a matching event (a change ' +
          'feed). A restricted API key sees only the events of its applications.',
        security: apiKeySecurity,
        querystring: EventQuery,
        response: {
          200: JsonResponse(EventPage, 'A page of events'),
          ...problemResponses(403),
        },
      },
    },
    async function listEvents(request) {
      const { query } = request;
      // Checked before any read, so a restricted key learns nothing of other applications.
      if (query.client_id !== undefined) assertApplicationAllowed(request, query.client_id);
      const events = await deps.events.listEvents({
        filter: filterOf(query, allowedApplications(request)),
        after: query.after ?? null,
        limit: query.limit ?? 100,
        waitMs: (query.wait ?? 0) * 1000,
      });
      return {
        items: events.map(toEventResource),
        next_after: events.at(-1)?.id ?? query.after ?? null,
      };
    },
  );
}
