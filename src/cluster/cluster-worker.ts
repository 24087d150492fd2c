// One worker of several (IAM_WORKERS): what it gets from the primary, over the cluster's IPC
// channel. The primary prepared the database before forking (migrations, first-start key,
// signing keys), holds the SQLite limit counters, hands out SQLite's write turn, relays commits
// between the workers, and gathers the whole cluster's metrics for whichever worker is scraped.

import cluster from 'node:cluster';
import { AggregatorRegistry, Registry } from 'prom-client';
import type { CommitRelay } from '../store/sql/commit-listeners.js';
import type { LimitCount, LimitCounterRepository } from '../store/store.js';
import {
  type CountRequest,
  type MetricsRequest,
  type PrimaryMessage,
  type StartMessage,
  isClusterMessage,
} from './cluster-messages.js';

/** A count not answered by then is not waited for: the limit serves uncounted, as on an outage. */
const COUNT_TIMEOUT_MS = 2_000;
/** prom-client gives up on a worker's figures after 5 s. */
const METRICS_TIMEOUT_MS = 6_000;

export interface ClusterWorker {
  /** 1…IAM_WORKERS, for the log. */
  readonly slot: number;
  /** This child prepares the database for the cluster and exits; it serves nothing. */
  readonly prepares: boolean;
  /** Runs the work done once per cluster: scheduled backups, pruning old events (worker 1). */
  readonly designated: boolean;
  /** SQLite: the limit counters the primary holds for every worker. */
  readonly limitCounters: LimitCounterRepository;
  /** SQLite: commits heard from and told to the other workers, and the write turn. */
  readonly commitRelay: CommitRelay;
  /** Where this worker's metrics go; /metrics from it answers the whole cluster's. */
  readonly registry: Registry;
  /** Tells the primary this worker serves. */
  ready(): void;
}

type Pending = {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
};

/** Requests to the primary, each answered by id. */
class PrimaryChannel {
  #next = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #commitListeners = new Set<() => void>();
  #commitAnnounced = false;
  /** Called when the primary grants the write turn asked for (one request out at a time). */
  #turnGranted: (() => void) | undefined;

  receive(message: PrimaryMessage): void {
    if (message.tessera === 'commit') {
      for (const listener of [...this.#commitListeners]) listener();
      return;
    }
    if (message.tessera === 'write-turn') {
      const granted = this.#turnGranted;
      this.#turnGranted = undefined;
      if (granted === undefined) this.tell('write-done');
      else granted();
      return;
    }
    if (message.tessera !== 'reply') return;
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    this.#pending.delete(message.id);
    clearTimeout(pending.timer);
    if (message.ok) pending.resolve(message.value);
    else pending.reject(new Error(message.error));
  }

  request<T>(
    message: Omit<CountRequest, 'id'> | Omit<MetricsRequest, 'id'>,
    timeoutMs: number,
  ): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error('the primary process did not answer'));
      }, timeoutMs);
      timer.unref();
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      try {
        process.send!({ ...message, id });
      } catch (error) {
        clearTimeout(timer);
        this.#pending.delete(id);
        reject(error as Error);
      }
    });
  }

  /** SQLite's write turn, kept by the primary for all the workers (WriteTurn). */
  requestWriteTurn(granted: () => void): void {
    this.#turnGranted = granted;
    this.tell('write-turn');
  }

  tell(kind: 'join' | 'ready' | 'commit' | 'write-turn' | 'write-done'): void {
    try {
      process.send?.({ tessera: kind });
    } catch {
      // The primary is gone: this worker is about to exit with it.
    }
  }

  /**
   * Tells the primary this worker committed events: once for all the commits of one turn of the
   * event loop (every write's commit calls it, thousands a second under load; a watcher told
   * once reads all of them).
   */
  announceCommit(): void {
    if (this.#commitAnnounced) return;
    this.#commitAnnounced = true;
    setImmediate(() => {
      this.#commitAnnounced = false;
      this.tell('commit');
    });
  }

  onCommit(listener: () => void): () => void {
    const entry = () => listener();
    this.#commitListeners.add(entry);
    return () => void this.#commitListeners.delete(entry);
  }
}

/** Whole-cluster figures from /metrics: asked of the primary, which asks every worker. */
class ClusterRegistry extends Registry {
  constructor(private readonly channel: PrimaryChannel) {
    super();
  }

  override metrics(): Promise<string> {
    return this.channel.request<string>({ tessera: 'metrics' }, METRICS_TIMEOUT_MS);
  }
}

/** In a worker process: waits for the primary's start message, then returns the worker's side. */
export function joinCluster(): Promise<ClusterWorker> {
  if (!cluster.isWorker || process.send === undefined) {
    return Promise.reject(new Error('not a worker of a cluster'));
  }
  const channel = new PrimaryChannel();
  return new Promise((resolve) => {
    process.on('message', (message: unknown) => {
      if (!isClusterMessage(message)) return;
      if (message.tessera === 'start') {
        resolve(workerSide(channel, message as StartMessage));
        return;
      }
      channel.receive(message as PrimaryMessage);
    });
    // Messages sent before a listener exists are dropped: the primary answers this one.
    channel.tell('join');
  });
}

function workerSide(channel: PrimaryChannel, { slot, prepare }: StartMessage): ClusterWorker {
  const registry = new ClusterRegistry(channel);
  // Answers the primary's requests for this worker's own figures (prom-client's protocol).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  return {
    slot,
    prepares: prepare,
    designated: slot === 1,
    registry,
    limitCounters: {
      addToCounter: (key, points, now, windowMs) =>
        channel.request<LimitCount>(
          { tessera: 'count', key, points, now, windowMs },
          COUNT_TIMEOUT_MS,
        ),
      // The primary forgets ended windows by itself.
      pruneCounters: () => Promise.resolve(0),
    },
    commitRelay: {
      announce: () => channel.announceCommit(),
      listen: (listener) => channel.onCommit(listener),
      writeTurn: {
        request: (granted) => channel.requestWriteTurn(granted),
        release: () => channel.tell('write-done'),
      },
    },
    ready: () => channel.tell('ready'),
  };
}
