import { type Static, Type } from 'typebox';
import {
  CONTROL_AND_SURROGATES,
  Nullable,
  StringEnum,
  Timestamp,
  toTimestamp,
} from '../../http/schemas.js';
import { ClientId } from '../applications/applications.schemas.js';
import { named } from '../../http/openapi.js';
import { RULE_KEYWORD } from '../../http/validation.js';
import type { EventRecord } from '../../store/store.js';

export const ACTOR_TYPES = [
  'api_key',
  'operator',
  'token_exchange',
  'scim',
  'cli',
  'system',
  'import',
] as const;
export const RESOURCE_TYPES = [
  'application',
  'user',
  'api_key',
  'signing_key',
  'webhook',
  'secret_key',
  'cluster_setting',
] as const;

/** The longest `wait` of a long poll, in seconds. */
export const MAX_WAIT_SECONDS = 30;

const EventId = Type.String({
  pattern: '^[0-9]{1,16}$',
  [RULE_KEYWORD]: 'an event id (up to 16 digits)',
  description: 'An event id: only events after it are listed (ids sort in commit order).',
});

/** `user.created`, `user.*`, comma-separated. */
const TYPE_LIST = '[a-z_]+\\.(?:[a-z_]+|\\*)';

export const EventQuery = Type.Object(
  {
    type: Type.Optional(
      Type.String({
        maxLength: 1000,
        pattern: `^${TYPE_LIST}(?:,${TYPE_LIST})*$`,
        [RULE_KEYWORD]: 'event types separated by commas, such as user.created,application.*',
        description:
          'Event types, comma-separated; `application.*` matches every application event.',
      }),
    ),
    client_id: Type.Optional(ClientId),
    // An API key id or a word such as `cli`: no control characters, which no id holds (and
    // PostgreSQL refuses a NUL in a query's text).
    actor_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: `^[^${CONTROL_AND_SURROGATES}]*$`,
        [RULE_KEYWORD]: '1–128 characters without control characters',
      }),
    ),
    resource_type: Type.Optional(StringEnum(RESOURCE_TYPES)),
    since: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Events that occurred at or after this time.',
      }),
    ),
    until: Type.Optional(
      Type.String({ format: 'date-time', description: 'Events that occurred before this time.' }),
    ),
    after: Type.Optional(EventId),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1–1000.' }),
    ),
    wait: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_WAIT_SECONDS,
        description:
          'Long poll: when no event matches yet, wait up to this many seconds (1–30) for one.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventQuery = Static<typeof EventQuery>;

export const Event = named(
  'Event',
  Type.Object({
    id: Type.String({ description: 'Sorts in commit order; pass as `after` to read on.' }),
    type: Type.String({ examples: ['user.updated'] }),
    occurred_at: Timestamp,
    actor: Type.Object({
      type: StringEnum(ACTOR_TYPES),
      id: Nullable(Type.String({ description: 'The API key id (api_key, scim), or null.' })),
    }),
    client_id: Nullable(Type.String()),
    resource: Type.Object({
      type: StringEnum(RESOURCE_TYPES),
      id: Type.Object({}, { additionalProperties: true, description: 'Its identifying members.' }),
    }),
    changes: Nullable(
      Type.Array(
        Type.Object({
          member: Type.String(),
          before: Type.Unknown(),
          after: Type.Unknown(),
        }),
      ),
    ),
    request_id: Nullable(Type.String()),
  }),
);
export type Event = Static<typeof Event>;

export const EventPage = named(
  'EventPage',
  Type.Object({
    items: Type.Array(Event),
    next_after: Nullable(
      Type.String({
        description:
          'The id of the last event listed (or the `after` given, when none was): pass it as `after` to read on.',
      }),
    ),
  }),
);

export function toEventResource(event: EventRecord): Event {
  return {
    id: event.id,
    type: event.type,
    occurred_at: toTimestamp(event.occurredAt),
    actor: event.actor,
    client_id: event.clientId,
    resource: event.resource,
    changes: event.changes,
    request_id: event.requestId,
  };
}
