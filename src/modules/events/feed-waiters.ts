// The change feed's long polls, waiting together: one watch on the store's commits and one
// look at the newest event id per notification wake every waiter whose answer may have
// changed, so a thousand idle long polls cost what one does. Without notifications (another
// process wrote, or the database cannot notify) a slow poll of that one id still finds the
// events.

import type { Store } from '../../store/store.js';

/** How often the newest event id is looked at while anyone waits, notified or not. */
export const SAFETY_POLL_MS = 1_000;

interface Waiter {
  /** The newest event id known when the waiter last looked; it is woken when it moves. */
  seen: string | null | undefined;
  wake: () => void;
}

export class FeedWaiters {
  readonly #waiters = new Set<Waiter>();
  /** The newest event id the last look found; undefined before the first look. */
  #newest: string | null | undefined;
  #unwatch: (() => void) | undefined;
  #poll: NodeJS.Timeout | undefined;
  #looking: Promise<void> | undefined;
  #lookAgain = false;
  /** Looks at the newest event id so far (for tests and metrics: one per wake, not per waiter). */
  looks = 0;

  constructor(
    private readonly store: Store,
    private readonly pollMs = SAFETY_POLL_MS,
  ) {}

  /**
   * What a waiter notes before it reads the feed: when `wait` is given it, the waiter is woken
   * as soon as the newest event id differs from it.
   */
  mark(): string | null | undefined {
    return this.#newest;
  }

  /**
   * Resolves once an event may have been committed since `seen` was marked, at `deadline`
   * (epoch ms), or when `signal` aborts, whichever comes first.
   */
  wait(seen: string | null | undefined, deadline: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted || seen !== this.#newest) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = { seen, wake: finish };
      const timer = setTimeout(finish, Math.max(0, deadline - Date.now()));
      const waiters = this.#waiters;
      const stopWatching = () => this.#stopWhenIdle();
      signal.addEventListener('abort', finish, { once: true });
      waiters.add(waiter);
      this.#start();
      function finish() {
        clearTimeout(timer);
        signal.removeEventListener('abort', finish);
        if (waiters.delete(waiter)) stopWatching();
        resolve();
      }
    });
  }

  /** How many long polls wait now. */
  get size(): number {
    return this.#waiters.size;
  }

  #start(): void {
    if (this.#unwatch !== undefined) return;
    this.#unwatch = this.store.events.watchEvents(() => this.#look());
    this.#poll = setInterval(() => this.#look(), this.pollMs);
    this.#poll.unref();
    // A waiter that marked before any look is woken by the first one.
    this.#look();
  }

  #stopWhenIdle(): void {
    if (this.#waiters.size > 0 || this.#unwatch === undefined) return;
    this.#unwatch();
    this.#unwatch = undefined;
    clearInterval(this.#poll);
    this.#poll = undefined;
    // #newest may go stale now; a waiter that marks a stale id is woken by the first look,
    // which finds a newer one, and reads again: one read too many, never an event missed.
  }

  /** One look at a time; a notification during a look asks for one more after it. */
  #look(): void {
    if (this.#looking !== undefined) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = (async () => {
      do {
        this.#lookAgain = false;
        this.looks += 1;
        const newest = await this.store.events.lastEventId().catch(() => this.#newest);
        if (newest === undefined) continue;
        this.#newest = newest;
        for (const waiter of [...this.#waiters]) {
          if (waiter.seen !== newest) waiter.wake();
        }
      } while (this.#lookAgain && this.#waiters.size > 0);
    })().finally(() => (this.#looking = undefined));
  }
}
