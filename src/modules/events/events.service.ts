import type { Clock } from '../../clock.js';
import type { EventFilter, EventRecord, Store } from '../../store/store.js';
import { FeedWaiters } from './feed-waiters.js';

/** How often old events are pruned (and once at start). */
const PRUNE_INTERVAL_MS = 3_600_000;

/** Events pruned per statement, so retention never holds the write lock long. */
const PRUNE_BATCH = 1000;

export interface EventListing {
  filter: EventFilter;
  after: string | null;
  limit: number;
  /** Wait up to this long for a first matching event; 0: answer at once. */
  waitMs: number;
}

/** The audit trail, read: the change feed with its filters and long poll, and retention. */
export class EventsService {
  #stopping = false;
  readonly #stop = new AbortController();
  /** Every long poll of this instance waits here, on one watch of the store's commits. */
  readonly waiters: FeedWaiters;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      /** How often long polls look without being notified (SAFETY_POLL_MS; tests set more). */
      feedPollMs?: number;
    },
  ) {
    this.waiters = new FeedWaiters(deps.store, deps.feedPollMs);
  }

  /**
   * Events after `after` in commit order; with waitMs, waits for the first one to commit. A
   * long poll reads the feed again only when the newest event id has moved (a commit here or,
   * notified, on another instance): an idle one costs nothing per waiter.
   */
  async listEvents(listing: EventListing): Promise<EventRecord[]> {
    const page = { after: listing.after, limit: listing.limit };
    const deadline = Date.now() + listing.waitMs;
    for (;;) {
      const seen = this.waiters.mark();
      const events = await this.deps.store.events.listEvents(listing.filter, page);
      if (events.length > 0 || this.#stopping || Date.now() >= deadline) return events;
      await this.waiters.wait(seen, deadline, this.#stop.signal);
    }
  }

  /** Events matching the filter, newest first, older than the event `before` (null: the newest). */
  listEventsNewestFirst(
    filter: EventFilter,
    before: string | null,
    limit: number,
  ): Promise<EventRecord[]> {
    return this.deps.store.events.listEventsNewestFirst(filter, { before, limit });
  }

  /**
   * One event, or undefined when there is none by that id or it is not for a caller restricted
   * to `visibleClientIds` (an event of no application included: such keys see none of those).
   */
  async findEvent(
    id: string,
    visibleClientIds: readonly string[] | null,
  ): Promise<EventRecord | undefined> {
    const event = await this.deps.store.events.findEvent(id);
    if (event === undefined || visibleClientIds === null) return event;
    return event.clientId !== null && visibleClientIds.includes(event.clientId) ? event : undefined;
  }

  /** The id of the newest event, or null when there is none. */
  lastEventId(): Promise<string | null> {
    return this.deps.store.events.lastEventId();
  }

  /** Ends every long poll now (the server is stopping): they answer with what they have. */
  stopWaiting(): void {
    this.#stopping = true;
    this.#stop.abort();
  }

  /**
   * Prunes events older than `retentionDays`, and the webhook delivery log's entries for them,
   * now and every hour, in the background (every instance may do it: deleting what another
   * instance deleted deletes nothing). Returns stop.
   */
  prunePeriodically(retentionDays: number, onError: (error: unknown) => void): () => void {
    const prune = () =>
      void (async () => {
        await this.pruneEvents(retentionDays);
        await this.pruneDeliveries(retentionDays);
      })().catch(onError);
    const first = setTimeout(prune, 1000);
    const timer = setInterval(prune, PRUNE_INTERVAL_MS);
    first.unref();
    timer.unref();
    return () => {
      clearTimeout(first);
      clearInterval(timer);
    };
  }

  /** Deletes events older than `retentionDays`; returns how many it deleted. */
  pruneEvents(retentionDays: number): Promise<number> {
    return this.#pruneInBatches(retentionDays, (before) =>
      this.deps.store.events.pruneEvents(before, PRUNE_BATCH),
    );
  }

  /**
   * Deletes webhook deliveries (delivered or failed) last attempted more than `retentionDays`
   * ago: the log keeps no longer than the events it records. Pending ones stay. Returns how many.
   */
  pruneDeliveries(retentionDays: number): Promise<number> {
    return this.#pruneInBatches(retentionDays, (before) =>
      this.deps.store.webhooks.pruneDeliveries(before, PRUNE_BATCH),
    );
  }

  /** Runs `deleteBatch` (up to PRUNE_BATCH rows older than `before`) until a batch comes short. */
  async #pruneInBatches(
    retentionDays: number,
    deleteBatch: (before: number) => Promise<number>,
  ): Promise<number> {
    const before = this.deps.clock.now() - retentionDays * 86_400_000;
    let total = 0;
    for (;;) {
      const deleted = await deleteBatch(before);
      total += deleted;
      if (deleted < PRUNE_BATCH || this.#stopping) return total;
    }
  }
}
