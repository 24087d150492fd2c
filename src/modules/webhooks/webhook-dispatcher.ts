// Delivery of events to webhooks, inside the service process: at least once, in event order
// per webhook, with retries.
//
// Each webhook keeps a cursor over the event feed (the last event it is done with) in the
// store. An instance works a webhook only while it holds the webhook's lease (a row-level
// compare-and-set with an expiry, renewed while it works), so with several instances on one
// PostgreSQL one of them at a time delivers to a receiver, and an instance that dies leaves
// the webhook to another once its lease expires. The worker reads the events after the
// cursor that match the webhook, POSTs them one by one, and records each outcome with the
// new cursor in one transaction — conditioned on still holding the lease — in batches: a
// crash between a delivery and its record means that event is delivered again (at least
// once; receivers deduplicate on webhook-id), never that it is skipped.
//
// A failed attempt (no 2xx) keeps the event at the head of the webhook's queue: the next
// events wait until it is delivered or, after RETRY.giveUpAfterMs of trying, marked failed.
// A 410 Gone disables the webhook, leaving the refused event first in line for when an
// operator enables it again.
//
// Webhooks are worked independently: one worker per webhook, each with its own connections
// (WebhookSender), so a receiver that hangs delays only its own webhook. Deleting or disabling
// a webhook, on any instance, cancels its attempt in flight (the next look for work finds it
// gone); stopping the instance cancels what is still in flight after a short grace. A
// cancelled attempt is not recorded: the event is delivered again (at least once).

import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock } from '../../clock.js';
import type {
  DeliveryRecord,
  EventFilter,
  EventRecord,
  Store,
  WebhookRecord,
} from '../../store/store.js';
import { type DeliveryProgress, MAX_LOGGED_ATTEMPTS } from '../../store/webhook-records.js';
import { newVersion } from '../conditional-writes.js';
import type { AttemptOutcome, WebhookSender } from './webhook-delivery.js';
import { SYSTEM_ORIGIN } from '../changes.js';
import { type WebhooksService, webhookEvent } from './webhooks.service.js';

export interface RetryPolicy {
  /** The delay before the first retry; each later one doubles it, up to maxDelayMs. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** After trying this long, the delivery is marked failed and the next event goes. */
  giveUpAfterMs: number;
}

/** First retry within 5 s, then 10 s, 20 s, … up to 6 h apart, for 3 days (about 24 attempts). */
export const RETRY: RetryPolicy = {
  firstDelayMs: 5_000,
  maxDelayMs: 6 * 3_600_000,
  giveUpAfterMs: 3 * 86_400_000,
};

/**
 * The delay before attempt `attempts + 1`: exponential, with jitter that keeps it between
 * half and all of the exponential value, so receivers coming back are not hit in lockstep.
 */
export function retryDelay(attempts: number, policy: RetryPolicy, random = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (attempts - 1));
  return Math.round(exponential * (0.5 + random() / 2));
}

export interface DispatcherOptions {
  /** How long a lease lasts unless renewed; another instance takes over after it. */
  leaseMs: number;
  /** How often the webhooks are looked for work without being woken (other instances' events). */
  pollMs: number;
  /** Events read per query. */
  batchSize: number;
  /** Outcomes are recorded at least this often while delivering (and at every failure). */
  flushEveryMs: number;
  retry: RetryPolicy;
}

export const DISPATCHER_DEFAULTS: DispatcherOptions = {
  leaseMs: 30_000,
  pollMs: 500,
  batchSize: 200,
  flushEveryMs: 200,
  retry: RETRY,
};

/** How long a stopping instance lets attempts in flight finish before it cancels them. */
const STOP_GRACE_MS = 1_000;

/**
 * What became of one attempt: delivered (2xx); failed (another answer, or none: retried);
 * timed_out (the deadline passed: retried); given_up (failed after the retry period, marked
 * failed); cancelled (the webhook was deleted or disabled, or the instance is stopping).
 */
export type AttemptResult = 'delivered' | 'failed' | 'timed_out' | 'given_up' | 'cancelled';

interface Worker {
  done: Promise<void>;
  /** Cancels the attempt in flight and stops the worker. */
  abort: AbortController;
}

interface Claim {
  cursor: string | null;
  generation: number;
}

export class WebhookDispatcher {
  /** This instance's name on the leases it holds. */
  readonly owner = randomUUID();
  readonly #options: DispatcherOptions;
  readonly #clock: Clock;
  readonly #workers = new Map<string, Worker>();
  /** Webhooks whose head event waits for its next attempt: not claimed before then. */
  readonly #notBefore = new Map<string, number>();
  #waiters = new Set<() => void>();
  #running = false;
  #loop: Promise<void> | null = null;
  #unwatch: (() => void) | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      webhooks: WebhooksService;
      sender: WebhookSender;
      /** Maps a stored event to the JSON a receiver gets (the API's representation). */
      toPayload: (event: EventRecord) => unknown;
      log: FastifyBaseLogger;
      /** Told what became of each attempt (metrics). */
      onAttempt?: (result: AttemptResult) => void;
      /** Real time: receivers check webhook-timestamp against their own clocks. */
      clock?: Clock;
      options?: Partial<DispatcherOptions>;
    },
  ) {
    this.#options = { ...DISPATCHER_DEFAULTS, ...deps.options };
    this.#clock = deps.clock ?? systemClock;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    // Commits here and, where the store is told, on other instances: work is looked for at once.
    this.#unwatch = this.deps.store.events.watchEvents(() => this.wake());
    this.#loop = this.#run();
  }

  /** A webhook was changed or replayed: its waits are over, look now. */
  reconsider(): void {
    this.#notBefore.clear();
    this.wake();
  }

  /** Something may have changed (an event committed): look now. */
  wake(): void {
    const waiters = this.#waiters;
    this.#waiters = new Set();
    for (const resolve of waiters) resolve();
  }

  /**
   * Stops promptly: attempts in flight get STOP_GRACE_MS to finish (and be recorded), then are
   * cancelled, so a receiver that hangs cannot hold up a shutdown. Leases are given up so
   * another instance goes on at once; a cancelled attempt is delivered again there.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#unwatch?.();
    this.wake();
    await this.#loop;
    const workers = [...this.#workers.values()];
    const finished = Promise.allSettled(workers.map((worker) => worker.done));
    let grace: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'cancel'>((resolve) => {
      grace = setTimeout(() => resolve('cancel'), STOP_GRACE_MS);
    });
    if ((await Promise.race([finished, graceOver])) === 'cancel') {
      for (const worker of workers) worker.abort.abort();
      await finished;
    }
    clearTimeout(grace);
    this.deps.sender.close();
  }

  /** Cancels the webhook's attempt in flight, if any, and closes its connections. */
  #cancel(id: string): void {
    const worker = this.#workers.get(id);
    if (worker !== undefined && !worker.abort.signal.aborted) worker.abort.abort();
    this.deps.sender.forget(id);
  }

  async #run(): Promise<void> {
    while (this.#running) {
      try {
        await this.#claimWork();
      } catch (error) {
        this.deps.log.warn({ err: error }, 'could not look for webhook work; retrying');
      }
      // Wakes come with every acknowledged write: a busy instance looks at most every 20 ms.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await this.#sleep(this.#options.pollMs);
    }
  }

  /** Claims every webhook that has work and nobody else works, and starts its worker. */
  async #claimWork(): Promise<void> {
    const { store } = this.deps;
    const states = await store.webhooks.listWebhookStates();
    // A webhook deleted or disabled (here or on another instance) has its attempt cancelled.
    if (this.#workers.size > 0) {
      const enabled = new Set(states.map((state) => state.id));
      for (const id of this.#workers.keys()) if (!enabled.has(id)) this.#cancel(id);
    }
    // No enabled webhook: the feed is not read (on PostgreSQL a read sequences events first).
    if (states.length === 0) return;
    const lastEventId = await store.events.lastEventId();
    for (const state of states) {
      const now = this.#clock.now();
      if (!this.#running) return;
      if (this.#workers.has(state.id)) continue;
      // Caught up: nothing after its cursor (an idle webhook costs no write).
      if (state.cursor !== null && state.cursor === lastEventId) continue;
      if (lastEventId === null) continue;
      if ((this.#notBefore.get(state.id) ?? 0) > now) continue;
      const held = state.leaseOwner !== null && state.leaseOwner !== this.owner;
      if (held && state.leaseUntil !== null && state.leaseUntil >= now) continue;
      const claim = await store.webhooks.claimWebhook(
        state.id,
        this.owner,
        now,
        now + this.#options.leaseMs,
      );
      if (claim === undefined) continue;
      const abort = new AbortController();
      const worker: Worker = {
        abort,
        done: this.#work(state.id, claim, abort.signal)
          .catch((error: unknown) => {
            this.deps.log.warn(
              { err: error, webhookId: state.id },
              'webhook delivery stopped; retrying',
            );
          })
          .finally(() => {
            if (this.#workers.get(state.id) === worker) this.#workers.delete(state.id);
          }),
      };
      this.#workers.set(state.id, worker);
    }
  }

  /** Works one webhook while this instance holds its lease and has something to deliver. */
  async #work(id: string, claim: Claim, signal: AbortSignal): Promise<void> {
    const { store } = this.deps;
    let holding = true;
    const renew = setInterval(() => {
      const now = this.#clock.now();
      store.webhooks.claimWebhook(id, this.owner, now, now + this.#options.leaseMs).then(
        (renewed) => {
          if (renewed === undefined || renewed.generation !== claim.generation) holding = false;
        },
        () => {
          holding = false;
        },
      );
    }, this.#options.leaseMs / 3);
    renew.unref();
    const recorder = new Recorder(store, id, this.owner, claim);
    let next = this.#read(id, claim.cursor);
    try {
      while (this.#running && holding && !recorder.lost && !signal.aborted) {
        const batch = await next;
        if (batch === undefined) return;
        const { webhook, events, lastEventId } = batch;
        if (events.length === 0) {
          // Nothing for this webhook up to lastEventId: the cursor moves there, so an idle
          // webhook is recognised as caught up without being claimed.
          if (lastEventId !== null && lastEventId !== recorder.queuedCursor) {
            await recorder.record([], lastEventId);
          }
          return;
        }
        // The next batch is read while this one is delivered: the database's time overlaps
        // the receiver's, and deliveries still go one at a time, in order.
        next = this.#read(id, events.at(-1)!.id);
        next.catch(() => undefined);
        const outcome = await this.#deliverBatch(
          webhook,
          recorder,
          events,
          batch.pending,
          () => holding,
          signal,
        );
        if (outcome !== 'more') return;
      }
    } finally {
      clearInterval(renew);
      // Every outcome is written (or its write has failed) before the lease is given up.
      const failed = await recorder.settled();
      if (failed !== undefined) {
        this.deps.log.warn({ err: failed, webhookId: id }, 'webhook delivery stopped; retrying');
      }
      // Given up when idle, waiting or cancelled, so whichever instance is woken first goes on.
      if (!recorder.lost && holding) await store.webhooks.releaseWebhook(id, this.owner);
    }
  }

  /**
   * The webhook (undefined when gone or disabled), its events after `after`, the pending
   * delivery at their head, and the last event id read before them.
   */
  async #read(id: string, after: string | null) {
    const { store } = this.deps;
    const webhook = await store.webhooks.findWebhook(id);
    if (webhook === undefined || !webhook.enabled) return undefined;
    // Read first: every event up to it is visible to the query that follows (event ids are
    // handed out in commit order), so a cursor moved up to it skips nothing.
    const lastEventId = await store.events.lastEventId();
    const [events, pending] = await Promise.all([
      store.events.listEvents(eventFilterOf(webhook), { after, limit: this.#options.batchSize }),
      store.webhooks.findPendingDelivery(id, after),
    ]);
    return { webhook, lastEventId, events, pending };
  }

  /**
   * Delivers events in order until one fails or the batch is done; records the outcomes
   * (in the background while deliveries succeed, waiting for the write when one fails).
   * 'more': go on; 'wait': the head event waits for its next attempt; 'stop': lease lost,
   * replayed or disabled.
   */
  async #deliverBatch(
    webhook: WebhookRecord,
    recorder: Recorder,
    events: readonly EventRecord[],
    headPending: DeliveryRecord | undefined,
    holding: () => boolean,
    signal: AbortSignal,
  ): Promise<'more' | 'wait' | 'stop'> {
    let pending = headPending;
    let done: DeliveryRecord[] = [];
    let cursor = recorder.queuedCursor;
    let lastFlush = this.#clock.now();
    /** Queues the outcomes so far (and `extra`) with the cursor; resolves once written. */
    const flush = (extra: DeliveryRecord[] = [], disable?: { reason: string }) => {
      const now = this.#clock.now();
      const written = recorder.record(
        [...done, ...extra],
        cursor,
        disable === undefined ? undefined : this.#disabling(webhook, disable.reason, now),
      );
      done = [];
      lastFlush = now;
      return written;
    };

    for (const event of events) {
      if (!this.#running || !holding() || recorder.lost || signal.aborted) break;
      const now = this.#clock.now();
      const previous = pending?.eventId === event.id ? pending : undefined;
      pending = undefined;
      const due = previous?.nextAttemptAt ?? null;
      if (due !== null && due > now) {
        if (!(await flush())) return 'stop';
        this.#waitUntil(webhook.id, due);
        return 'wait';
      }
      const outcome = await this.#attempt(webhook, event, signal);
      // Not the receiver's doing: nothing recorded, the event stays first in line.
      if (outcome.cancelled === true) {
        this.deps.onAttempt?.('cancelled');
        break;
      }
      const record = nextDeliveryRecord(webhook.id, event, previous, outcome, this.#clock.now());
      if (outcome.error === null) {
        this.deps.onAttempt?.('delivered');
        done.push(record);
        cursor = event.id;
        if (this.#clock.now() - lastFlush >= this.#options.flushEveryMs) void flush();
        continue;
      }
      if (outcome.statusCode === 410) {
        this.deps.onAttempt?.('failed');
        // The receiver says it is gone for good: stop, and keep the event first in line.
        record.status = 'failed';
        await flush([record], { reason: 'gone' });
        this.deps.log.warn(
          { webhookId: webhook.id },
          'webhook disabled: its receiver answered 410',
        );
        return 'stop';
      }
      const elapsed = record.lastAttemptAt - record.firstAttemptAt;
      if (elapsed >= this.#options.retry.giveUpAfterMs) {
        this.deps.onAttempt?.('given_up');
        record.status = 'failed';
        cursor = event.id;
        if (!(await flush([record]))) return 'stop';
        continue;
      }
      this.deps.onAttempt?.(outcome.timedOut === true ? 'timed_out' : 'failed');
      const delay = retryDelay(record.attempts, this.#options.retry);
      record.status = 'pending';
      record.nextAttemptAt = record.lastAttemptAt + delay;
      if (!(await flush([record]))) return 'stop';
      this.#waitUntil(webhook.id, record.nextAttemptAt);
      return 'wait';
    }
    if (done.length > 0) void flush();
    return recorder.lost || signal.aborted ? 'stop' : 'more';
  }

  /** The change of a webhook Tessera disables itself, with its webhook.updated event. */
  #disabling(webhook: WebhookRecord, reason: string, at: number) {
    const etag = newVersion();
    const disabled = { ...webhook, enabled: false, disabledReason: reason, updatedAt: at, etag };
    return {
      reason,
      at,
      etag,
      events: [webhookEvent('webhook.updated', SYSTEM_ORIGIN, at, webhook, disabled)],
    };
  }

  async #attempt(
    webhook: WebhookRecord,
    event: EventRecord,
    signal: AbortSignal,
  ): Promise<AttemptOutcome> {
    const now = this.#clock.now();
    let secrets: string[];
    try {
      secrets = this.deps.webhooks.signingSecrets(webhook);
    } catch (error) {
      return { statusCode: null, error: (error as Error).message, durationMs: 0 };
    }
    const message = { id: event.id, payload: JSON.stringify(this.deps.toPayload(event)), secrets };
    return this.deps.sender.send(webhook.id, webhook.url, message, new Date(now), signal);
  }

  #waitUntil(id: string, at: number): void {
    this.#notBefore.set(id, at);
    setTimeout(() => this.wake(), Math.max(0, at - this.#clock.now()) + 1).unref();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(finish, ms);
      timer.unref();
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.#waiters.add(finish);
    });
  }
}

/**
 * Writes a worker's delivery outcomes and cursor moves one after another, in the order they
 * were queued, each conditioned on the lease and generation (recordDeliveries). The worker
 * goes on delivering while a write runs; once one is refused (lease lost, replayed), `lost`
 * is set and later ones are not sent. A write that fails rejects it and every later one.
 */
class Recorder {
  /** The cursor of the last write queued (the claim's until then). */
  queuedCursor: string | null;
  lost = false;
  #chain: Promise<boolean> = Promise.resolve(true);

  constructor(
    private readonly store: Store,
    private readonly id: string,
    private readonly owner: string,
    private readonly claim: Claim,
  ) {
    this.queuedCursor = claim.cursor;
  }

  /** Queues a write; resolves with whether it (and every one before it) was recorded. */
  record(
    deliveries: DeliveryRecord[],
    cursor: string | null,
    disable?: DeliveryProgress['disable'],
  ): Promise<boolean> {
    const moved = cursor !== this.queuedCursor ? cursor : null;
    this.queuedCursor = cursor;
    if (deliveries.length === 0 && moved === null && disable === undefined) return this.#chain;
    this.#chain = this.#chain.then(async (ok) => {
      if (!ok) return false;
      const recorded = await this.store.webhooks.recordDeliveries(
        this.id,
        this.owner,
        this.claim.generation,
        { deliveries, cursor: moved, ...(disable === undefined ? {} : { disable }) },
      );
      if (recorded && moved !== null) this.claim.cursor = moved;
      if (!recorded) this.lost = true;
      return recorded;
    });
    // Awaited by settled() or the caller; never an unhandled rejection meanwhile.
    this.#chain.catch(() => undefined);
    return this.#chain;
  }

  /** Resolves once every queued write is done: with the error of one that failed, if any. */
  settled(): Promise<unknown> {
    return this.#chain.then(
      () => undefined,
      (error: unknown) => error,
    );
  }
}

/** The feed query of a webhook's events: its types and applications. */
export function eventFilterOf(webhook: WebhookRecord): EventFilter {
  const types = webhook.eventTypes.includes('*')
    ? null
    : webhook.eventTypes.map((type) => (type.endsWith('.*') ? type.slice(0, -1) : type));
  return {
    types,
    clientId: null,
    actorId: null,
    resourceType: null,
    since: null,
    until: null,
    visibleClientIds: webhook.clientIds,
  };
}

function nextDeliveryRecord(
  webhookId: string,
  event: EventRecord,
  previous: DeliveryRecord | undefined,
  outcome: AttemptOutcome,
  now: number,
): DeliveryRecord {
  const attempt = {
    at: now,
    statusCode: outcome.statusCode,
    error: outcome.error,
    durationMs: outcome.durationMs,
  };
  return {
    webhookId,
    eventId: event.id,
    eventType: event.type,
    status: outcome.error === null ? 'delivered' : 'pending',
    attempts: (previous?.attempts ?? 0) + 1,
    firstAttemptAt: previous?.firstAttemptAt ?? now,
    lastAttemptAt: now,
    nextAttemptAt: null,
    log: [...(previous?.log ?? []), attempt].slice(-MAX_LOGGED_ATTEMPTS),
  };
}
