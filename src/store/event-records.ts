// The store's side of the audit trail: the events every write records with its change, and
// the feed they are read back from. Part of the Store interface (store.ts), in its own file so
// that every repository can name NewEvent without importing the whole interface.

import type { PageQuery } from './page-query.js';

/**
 * Who made a change: an API key (by id), a SCIM client (its key id), the CLI, an operator
 * signed in to the console through the OpenID provider (by their subject there), an import
 * (its job id), …
 */
export interface EventActor {
  type: 'api_key' | 'operator' | 'token_exchange' | 'scim' | 'cli' | 'system' | 'import';
  id: string | null;
}

/** One changed member of a resource: its value before and after (null when absent). */
export interface EventChange {
  member: string;
  before: unknown;
  after: unknown;
}

export type EventResourceType =
  'application' | 'user' | 'api_key' | 'signing_key' | 'webhook' | 'secret_key' | 'cluster_setting';

/**
 * An event to record with a write: every write method takes the events of its change and
 * stores them in the same transaction, only when the change happens. Never holds a secret.
 */
export interface NewEvent {
  type: string;
  occurredAt: number;
  actor: EventActor;
  clientId: string | null;
  resource: { type: EventResourceType; id: Record<string, unknown> };
  changes: EventChange[] | null;
  requestId: string | null;
}

/** A recorded event; ids are fixed-width digit strings whose order is commit order. */
export interface EventRecord extends NewEvent {
  id: string;
}

export interface EventFilter {
  /** Exact types, or prefixes ending in '.' (from `user.*`); null: every type. */
  types: readonly string[] | null;
  clientId: string | null;
  actorId: string | null;
  resourceType: string | null;
  since: number | null;
  until: number | null;
  /**
   * Only events about the resource whose own `id` member is this (a user's, an API key's, a
   * webhook's id: a user's stays when it is renamed); null or absent: any resource.
   */
  resourceId?: string | null;
  /** When set, only events of these client_ids (an API key's restriction; no null client_id). */
  visibleClientIds: readonly string[] | null;
}

export interface EventRepository {
  /** Events matching the filter, in id (commit) order, with ids greater than page.after. */
  listEvents(filter: EventFilter, page: PageQuery<string>): Promise<EventRecord[]>;
  /** Events matching the filter, newest first, with ids smaller than `before` (null: the newest). */
  listEventsNewestFirst(
    filter: EventFilter,
    page: { before: string | null; limit: number },
  ): Promise<EventRecord[]>;
  /** The event with this id, or undefined (never recorded, pruned, or not an event id). */
  findEvent(id: string): Promise<EventRecord | undefined>;
  /** The id of the newest event, or null when there is none. */
  lastEventId(): Promise<string | null>;
  /** Deletes up to `limit` events that occurred before `before`; returns how many it deleted. */
  pruneEvents(before: number, limit: number): Promise<number>;
  /**
   * Calls `onCommitted` soon after events are committed: at once for this process's writes,
   * and for other instances' writes where the database can say so (PostgreSQL LISTEN/NOTIFY,
   * on one connection per process, whatever the number of watchers). Also called when
   * notifications may have been missed (the listening connection came back). Best effort: a
   * watcher that must not miss an event also looks now and then. Returns a function that stops
   * watching.
   */
  watchEvents(onCommitted: () => void): () => void;
}
