/** The source of time, injected everywhere so tests control it instead of sleeping. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
