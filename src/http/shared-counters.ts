// Limits counted in the database the instances share (PostgreSQL, when no REDIS_URL is set), so
// that N instances do not multiply a limit by N. Redis stays the faster option: a counter there
// costs a round trip to memory; here it costs a write to the database. Two uses, two costs:
//
// - Failed authentications: one addition per failure (an UNLOGGED row, no WAL), exact across
//   instances. An address over the limit is then refused from this instance's memory.
// - Requests per API key: counted on every request, so not one write each. An instance takes
//   a share of what is left of the key's window (a sixteenth, fewer as the rest shrinks, one
//   at a time near the limit) and spends it locally, so a busy key costs a few writes per
//   window and the sum over instances never passes the limit. A share an instance took and did
//   not spend is lost for the window: another instance may refuse a little early (by at most a
//   sixteenth of the rest per instance), never late.

import { LRUCache } from 'lru-cache';
import type { LimitCount, LimitCounterRepository } from '../store/store.js';

/** How often counters whose window ended are deleted (each instance does it; it is idempotent). */
const PRUNE_EVERY_MS = 600_000;
const PRUNE_BATCH = 1000;
/** How long counting is skipped after the database failed (requests are served uncounted). */
const PAUSE_AFTER_FAILURE_MS = 5_000;
/** Keys whose shares an instance remembers; the least recently used beyond it are forgotten. */
const KEYS_KEPT = 10_000;
/** The largest share taken at once. */
const MAX_SHARE = 10_000;

/** The database's counters, with the clock they are read by. */
export interface SharedCounters {
  counters: LimitCounterRepository;
  now: () => number;
}

/** Adds to a shared counter; the count it reached, and when its window ends. */
export function countShared(
  shared: SharedCounters,
  key: string,
  points: number,
  windowMs: number,
): Promise<LimitCount> {
  return shared.counters.addToCounter(key, points, shared.now(), windowMs);
}

/** Deletes the counters whose window ended, every PRUNE_EVERY_MS in the background; returns stop. */
export function pruneSharedCountersPeriodically(
  shared: SharedCounters,
  onError: (error: unknown) => void,
): () => void {
  const prune = async () => {
    while ((await shared.counters.pruneCounters(shared.now(), PRUNE_BATCH)) === PRUNE_BATCH);
  };
  const timer = setInterval(() => void prune().catch(onError), PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

interface Share {
  /** When the window ends, as the database says (0: not asked yet). */
  resetsAt: number;
  /** Requests this instance may still serve in the window. */
  left: number;
  /** The cluster's count when this instance last took a share. */
  counted: number;
  /** The cluster has nothing left once `left` is spent. */
  last: boolean;
  taking: Promise<void> | undefined;
}

export interface Spent {
  /** The requests counted in the window, as far as this instance knows (over max: refused). */
  current: number;
  /** Milliseconds until the window ends. */
  ttl: number;
}

/** Requests per key and window, counted across instances in shares (see the top of the file). */
export class SharedRequestBudget {
  readonly #shares = new LRUCache<string, Share>({ max: KEYS_KEPT });
  #pausedUntil = 0;

  constructor(
    private readonly shared: SharedCounters,
    private readonly prefix: string,
  ) {}

  /** Counts one request of `key`; rejects while the database is failing (serve uncounted). */
  async spend(key: string, max: number, windowMs: number): Promise<Spent> {
    for (;;) {
      const now = this.shared.now();
      let share = this.#shares.get(key);
      if (share === undefined || (share.resetsAt !== 0 && share.resetsAt <= now)) {
        share = { resetsAt: 0, left: 0, counted: 0, last: false, taking: undefined };
        this.#shares.set(key, share);
      }
      if (share.left > 0) {
        share.left -= 1;
        return { current: Math.min(max, share.counted - share.left), ttl: share.resetsAt - now };
      }
      if (share.last) return { current: max + 1, ttl: share.resetsAt - now };
      if (now < this.#pausedUntil) throw new Error('the shared counters are paused');
      // Requests arriving while a share is taken wait for it rather than take one each.
      share.taking ??= this.#take(key, share, max, windowMs).finally(() => {
        share.taking = undefined;
      });
      await share.taking;
    }
  }

  async #take(key: string, share: Share, max: number, windowMs: number): Promise<void> {
    const rest = share.resetsAt === 0 ? max : max - share.counted;
    // The first share of a window is small: other instances may be as busy as this one.
    const wanted = Math.min(
      MAX_SHARE,
      Math.max(1, Math.floor(rest / (share.resetsAt === 0 ? 64 : 16))),
    );
    let counted: LimitCount;
    try {
      counted = await countShared(this.shared, `${this.prefix}${key}`, wanted, windowMs);
    } catch (error) {
      this.#pausedUntil = this.shared.now() + PAUSE_AFTER_FAILURE_MS;
      throw error;
    }
    const granted = Math.max(0, Math.min(wanted, max - (counted.count - wanted)));
    share.resetsAt = counted.resetsAt;
    share.counted = counted.count;
    share.left = granted;
    share.last = granted < wanted;
  }
}
