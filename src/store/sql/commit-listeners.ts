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
