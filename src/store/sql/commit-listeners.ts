/** Whoever watches events being committed (EventRepository.watchEvents), told in turn. */
export class CommitListeners {
  readonly #listeners = new Set<() => void>();

  /** Adds a listener; returns a function that removes it. */
  add(listener: () => void): () => void {
    // Wrapped, so one function added twice is two watchers, removed one at a time.
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  get size(): number {
    return this.#listeners.size;
  }

  /** Tells every listener; one that throws does not keep the others from hearing. */
  notify(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // A watcher's own failure is its business; the commit happened all the same.
      }
    }
  }
}

/**
 * Processes that share one SQLite file (the workers of IAM_WORKERS) telling each other of
 * commits, so that a watcher in one hears of another's events at once rather than at its next
 * look.
 */
export interface CommitRelay {
  /** Tells the other processes that this one committed events. */
  announce(): void;
  /** Calls `listener` whenever another process committed events; returns a function that stops. */
  listen(listener: () => void): () => void;
  /** SQLite: the write turn the processes hand each other (IAM_WORKERS' primary keeps it). */
  writeTurn?: WriteTurn;
}

/**
 * A turn to write, handed between the processes that serve one file (the workers of
 * IAM_WORKERS) so that they take SQLite's write lock one after the other instead of finding
 * it held: a process asks for the turn, goes on serving while it waits, and hands it on as
 * soon as its COMMIT returned. Processes outside the turn (a CLI command, a backup) still meet
 * the timer-based wait.
 */
export interface WriteTurn {
  /** Asks for the turn: `granted` is called once, when this process holds it. */
  request(granted: () => void): void;
  /** Hands the turn on; called once after each grant. */
  release(): void;
}
