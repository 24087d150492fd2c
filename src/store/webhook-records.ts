// The store's side of webhooks: their configuration, the delivery state each one keeps over
// the event feed (a cursor, and a lease that lets one instance at a time work it), and the
// log of deliveries. Part of the Store interface (store.ts), in its own file for its size.

import type { NewEvent } from './event-records.js';
import type { PageQuery } from './page-query.js';

export interface WebhookRecord {
  id: string;
  url: string;
  /** Exact event types, `<prefix>.*`, or `*`. */
  eventTypes: string[];
  /** Only events of these applications; null: every event, including those of no application. */
  clientIds: string[] | null;
  description: string;
  enabled: boolean;
  /** Why Tessera itself disabled the webhook ('gone': the receiver answered 410), or null. */
  disabledReason: string | null;
  /** The signing secret as stored: `whsec_…`, or that text sealed with IAM_SECRET_KEY. */
  secret: string;
  /** The secret a rotation replaced, stored like `secret`; it signs too until it expires. */
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
  etag: string;
}

export interface WebhookFilter {
  /** When set, only webhooks whose client_ids lie within these (an API key's restriction). */
  visibleClientIds: readonly string[] | null;
}

/** Where a webhook's delivery stands: what the lease holder needs to work it. */
export interface WebhookCursor {
  webhookId: string;
  /** The last event id dealt with (delivered, or failed for good); null: none yet. */
  cursor: string | null;
  /** Moves on with each replay: a holder that read an older generation writes nothing. */
  generation: number;
}

/** An enabled webhook's cursor and who holds its lease, to decide whether to claim it. */
export interface WebhookState {
  id: string;
  cursor: string | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryAttempt {
  at: number;
  /** The receiver's HTTP status, or null when there was no answer (refused, timed out). */
  statusCode: number | null;
  /** Why the attempt failed, in a few words; null when it succeeded. */
  error: string | null;
  durationMs: number;
}

/** One event's delivery to one webhook, over all its attempts. */
export interface DeliveryRecord {
  webhookId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  firstAttemptAt: number;
  lastAttemptAt: number;
  /** When the next attempt is due (pending), else null. */
  nextAttemptAt: number | null;
  /** The most recent attempts, oldest first (at most MAX_LOGGED_ATTEMPTS). */
  log: DeliveryAttempt[];
}

export const MAX_LOGGED_ATTEMPTS = 20;

export interface DeliveryFilter {
  webhookId: string;
  status: DeliveryStatus | null;
}

/** The outcome a lease holder records: deliveries done, and how far the cursor moves. */
export interface DeliveryProgress {
  deliveries: readonly DeliveryRecord[];
  /** The new cursor; null leaves it where it is. */
  cursor: string | null;
  /**
   * Set when the receiver asked to stop (410): the webhook is disabled with this reason, and
   * `events` (its webhook.updated) are recorded with it.
   */
  disable?: { reason: string; at: number; etag: string; events: readonly NewEvent[] };
}

export interface WebhookRepository {
  /**
   * Inserts a webhook whose deliveries start after the event `startAfter` (null: the first).
   * DuplicateError when its id exists.
   */
  insertWebhook(
    webhook: WebhookRecord,
    startAfter: string | null,
    events: readonly NewEvent[],
  ): Promise<void>;
  /** The webhook, or undefined. */
  findWebhook(id: string): Promise<WebhookRecord | undefined>;
  /** Webhooks ordered by id, after the given id. */
  listWebhooks(filter: WebhookFilter, page: PageQuery<string>): Promise<WebhookRecord[]>;
  countWebhooks(filter: WebhookFilter): Promise<number>;
  /**
   * Replaces the configuration and secrets when the etag is still `expectedEtag`; the
   * delivery state is left alone. False when it is not (changed meanwhile, or gone).
   */
  replaceWebhook(
    next: WebhookRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /** Deletes the webhook and its delivery log when its etag is still `expectedEtag`. */
  deleteWebhook(id: string, expectedEtag: string, events: readonly NewEvent[]): Promise<boolean>;

  /** The delivery state of every enabled webhook, ordered by id. */
  listWebhookStates(): Promise<WebhookState[]>;
  /**
   * Takes or renews the lease of an enabled webhook for `owner` until `until`, when nobody
   * else holds an unexpired one at `now`. Atomic across instances: of two claimants, one
   * wins. The webhook's cursor when it did; undefined when it did not.
   */
  claimWebhook(
    id: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<WebhookCursor | undefined>;
  /** Gives the lease up (when `owner` still holds it). */
  releaseWebhook(id: string, owner: string): Promise<void>;
  /**
   * In one transaction: upserts the deliveries, moves the cursor, disables when asked — only
   * while `owner` holds the lease and the generation is unchanged (else false, nothing written).
   */
  recordDeliveries(
    id: string,
    owner: string,
    generation: number,
    progress: DeliveryProgress,
  ): Promise<boolean>;
  /**
   * Moves the cursor back (or on) to `after`, a new generation, and drops pending deliveries,
   * so what follows `after` is delivered again. False when the webhook does not exist.
   */
  replayWebhook(id: string, after: string | null): Promise<boolean>;
  /** The pending delivery at the head of the webhook's queue (after its cursor), if any. */
  findPendingDelivery(id: string, after: string | null): Promise<DeliveryRecord | undefined>;
  /**
   * Deletes up to `limit` delivered or failed deliveries last attempted before `before` (epoch
   * ms), oldest first; pending ones stay (they head their webhook's queue). Returns how many.
   */
  pruneDeliveries(before: number, limit: number): Promise<number>;
  /** Deliveries newest first (by event id), before the given event id. */
  listDeliveries(filter: DeliveryFilter, page: PageQuery<string>): Promise<DeliveryRecord[]>;
  countDeliveries(filter: DeliveryFilter): Promise<number>;
  /** How far the enabled webhooks are behind the feed (for metrics). */
  measureBacklog(): Promise<WebhookBacklog>;
  /** How the webhook's deliveries are going (for operators), or undefined when it does not exist. */
  findWebhookHealth(id: string): Promise<WebhookHealth | undefined>;
}

/** How one webhook's deliveries are going. */
export interface WebhookHealth {
  /**
   * The latest attempt: the last one of the delivery of the newest event attempted (deliveries
   * go in event order, so no other is more recent); null when nothing was attempted yet.
   */
  lastAttempt: (DeliveryAttempt & { eventId: string; status: DeliveryStatus }) | null;
  /**
   * When the first failed attempt of the delivery now failing was made (still retried, or
   * given up); null when the latest delivery went through, or none was attempted.
   */
  failingSince: number | null;
  /** Events in the feed after the last one it dealt with (whether they match it or not). */
  eventsBehind: number;
}

/** How far the enabled webhooks are behind the event feed. */
export interface WebhookBacklog {
  /** Events after each enabled webhook's cursor, summed over them (matching it or not). */
  events: number;
  /** When the oldest event after any enabled webhook's cursor occurred; null: none behind. */
  oldestEventAt: number | null;
}
