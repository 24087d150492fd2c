// IAM_WORKERS=n (n > 1): the primary process. It serves no HTTP itself: it has the database
// prepared once (migrations, the first-start key or IAM_BOOTSTRAP_API_KEY, signing keys) by a
// first child that then exits, before any worker serves; forks n workers that share the port
// (node:cluster hands each new connection to one of them in turn), replaces a worker that dies,
// and stops them all gracefully on SIGTERM/SIGINT. For the workers it holds the SQLite limit
// counters, hands out SQLite's write turn, relays commits between them, and gathers the whole
// cluster's metrics (docs/decisions.md, "Several processes on one port"). It never loads the
// server's modules (the app, the store): it stays small, and what could crash runs in the
// children.

import cluster, { type Worker } from 'node:cluster';
import { LRUCache } from 'lru-cache';
import pino from 'pino';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config.js';
import type { LimitCount } from '../store/store.js';
import {
  type CountRequest,
  type PrimaryMessage,
  type WorkerMessage,
  isClusterMessage,
} from './cluster-messages.js';

/** Each worker finishes its in-flight requests within 10 s; past this it is killed. */
const STOP_DEADLINE_MS = 15_000;
/** A worker that dies is replaced after this long, doubled while it keeps dying young. */
const FIRST_RESTART_DELAY_MS = 100;
const LONGEST_RESTART_DELAY_MS = 10_000;
/** A worker that served at least this long before dying is replaced at once. */
const HEALTHY_LIFE_MS = 10_000;
/** Limit counters kept at once (addresses and keys in their window); the oldest go first. */
const COUNTERS_KEPT = 100_000;

interface Slot {
  number: number;
  worker: Worker;
  /** When it said it serves; null until then. */
  readyAt: number | null;
  restartDelayMs: number;
}

/** Runs the primary until every worker has stopped; then exits the process. */
export async function runPrimary(config: Config): Promise<void> {
  const logger = await primaryLogger(config);
  const prepared = await prepareInChild(logger);
  if (prepared !== 0) {
    // The child said why, in one line; the exit code is its (2: change the configuration).
    exitAfterFlushing(logger, prepared === 2 ? 2 : 1);
    return;
  }
  const counters = new LimitCounters();
  const writeTurn = new WriteTurnKeeper<Slot>((slot) =>
    send(slot.worker, { tessera: 'write-turn' }),
  );
  // prom-client's side of the primary: asks every worker for its figures and sums them.
  const aggregator = new AggregatorRegistry();
  const slots = new Map<number, Slot>();
  let stopping = false;
  let announced = false;
  let exitCode = 0;
  let finished = false;

  const fork = (number: number, restartDelayMs: number): void => {
    const worker = cluster.fork();
    const slot: Slot = { number, worker, readyAt: null, restartDelayMs };
    slots.set(number, slot);
    worker.on('message', (message: unknown) => {
      if (isClusterMessage(message)) receive(slot, message as WorkerMessage);
    });
    worker.once('exit', (code, signal) => exited(slot, code, signal));
  };

  const receive = (slot: Slot, message: WorkerMessage): void => {
    switch (message.tessera) {
      case 'join':
        send(slot.worker, { tessera: 'start', slot: slot.number, prepare: false });
        return;
      case 'ready':
        slot.readyAt = Date.now();
        if (!announced && [...slots.values()].every((each) => each.readyAt !== null)) {
          announced = true;
          logger.info({ workers: config.workers }, 'Tessera is serving with several workers');
        }
        return;
      case 'commit':
        for (const other of slots.values()) {
          if (other !== slot && other.worker.isConnected()) {
            send(other.worker, { tessera: 'commit' });
          }
        }
        return;
      case 'write-turn':
        writeTurn.request(slot);
        return;
      case 'write-done':
        writeTurn.release(slot);
        return;
      case 'count':
        reply(slot.worker, message.id, () => Promise.resolve(counters.add(message)));
        return;
      case 'metrics':
        reply(slot.worker, message.id, () => aggregator.clusterMetrics());
        return;
    }
  };

  const exited = (slot: Slot, code: number | null, signal: string | null): void => {
    if (slots.get(slot.number) === slot) slots.delete(slot.number);
    // A worker that died holding the write turn (or waiting for it) must not stall the others.
    writeTurn.forget(slot);
    if (stopping) {
      // One still starting has no signal handler yet: the signal (SIGTERM, or Ctrl-C's SIGINT
      // to the whole group) ends it at once, serving nothing.
      const stoppedBeforeServing =
        slot.readyAt === null && (signal === 'SIGTERM' || signal === 'SIGINT');
      if (code !== 0 && !stoppedBeforeServing) exitCode = 1;
      if (slots.size === 0) finish();
      return;
    }
    if (slot.readyAt === null) {
      // It never served: a start-up failure (it printed why) that a restart would repeat.
      logger.error(
        { worker: slot.number, code, signal },
        'a worker could not start; stopping the others',
      );
      exitCode = code === 2 ? 2 : 1;
      stop();
      return;
    }
    const delay =
      Date.now() - slot.readyAt >= HEALTHY_LIFE_MS
        ? FIRST_RESTART_DELAY_MS
        : Math.min(LONGEST_RESTART_DELAY_MS, slot.restartDelayMs * 2);
    logger.error(
      {
        worker: slot.number,
        worker_pid: slot.worker.process.pid,
        code,
        signal,
        restart_in_ms: delay,
      },
      'a worker died; starting another in its place',
    );
    setTimeout(() => {
      if (!stopping) fork(slot.number, delay);
    }, delay);
  };

  const finish = (): void => {
    if (finished) return;
    finished = true;
    logger.info('stopped');
    exitAfterFlushing(logger, exitCode);
  };

  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    if (slots.size === 0) {
      finish();
      return;
    }
    // Each worker stops as one process does: in-flight requests finish, then it exits.
    for (const slot of slots.values()) slot.worker.process.kill('SIGTERM');
    setTimeout(() => {
      logger.warn('workers did not stop in time; killing them');
      for (const slot of slots.values()) slot.worker.process.kill('SIGKILL');
    }, STOP_DEADLINE_MS).unref();
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    logger.info({ signal }, 'stopping: every worker finishes its in-flight requests');
    stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  for (let number = 1; number <= config.workers; number += 1) {
    fork(number, FIRST_RESTART_DELAY_MS);
  }
}

/**
 * The primary's log: JSON lines as the workers write them. A person's terminal
 * (LOG_FORMAT=pretty) gets the server's own formatter, loaded for it.
 */
async function primaryLogger(config: Config): Promise<pino.Logger> {
  if (config.logFormat === 'pretty') {
    const { createLogger } = await import('../server.js');
    return createLogger(config.logLevel, undefined, 'pretty').child({ role: 'primary' });
  }
  return pino({ level: config.logLevel }).child({ role: 'primary' });
}

/**
 * Runs the once-per-cluster preparation in a child (worker 0), which exits when it is done;
 * resolves with its exit code. SIGTERM or SIGINT meanwhile stops it.
 */
function prepareInChild(logger: pino.Logger): Promise<number> {
  const child = cluster.fork();
  const forward = (signal: NodeJS.Signals) => child.process.kill(signal);
  process.on('SIGTERM', forward);
  process.on('SIGINT', forward);
  child.on('message', (message: unknown) => {
    if (isClusterMessage(message) && message.tessera === 'join') {
      send(child, { tessera: 'start', slot: 0, prepare: true });
    }
  });
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.off('SIGTERM', forward);
      process.off('SIGINT', forward);
      if (code !== 0) logger.error({ code, signal }, 'preparing the database failed');
      resolve(code ?? 1);
    });
  });
}

function send(worker: Worker, message: PrimaryMessage): void {
  try {
    worker.send(message);
  } catch {
    // Its channel closed: it is exiting, and 'exit' deals with it.
  }
}

function reply(worker: Worker, id: number, answer: () => Promise<unknown>): void {
  answer().then(
    (value) => send(worker, { tessera: 'reply', id, ok: true, value }),
    (error: unknown) =>
      send(worker, { tessera: 'reply', id, ok: false, error: (error as Error).message }),
  );
}

/** Exits once the log's pending lines are written (at most a second later). */
function exitAfterFlushing(logger: pino.Logger, code: number): void {
  setTimeout(() => process.exit(code), 1_000);
  logger.flush(() => process.exit(code));
}

/**
 * SQLite's write turn (WriteTurn): one worker at a time holds it, the others wait in the order
 * they asked. A worker holds it for one transaction, and hands it back right after its COMMIT;
 * one that exits gives it up.
 */
export class WriteTurnKeeper<Holder> {
  #holder: Holder | undefined;
  readonly #waiting: Holder[] = [];

  constructor(private readonly grant: (holder: Holder) => void) {}

  request(asker: Holder): void {
    if (this.#holder === undefined) {
      this.#holder = asker;
      this.grant(asker);
    } else if (this.#holder !== asker && !this.#waiting.includes(asker)) {
      this.#waiting.push(asker);
    }
  }

  release(holder: Holder): void {
    if (this.#holder !== holder) return;
    this.#holder = this.#waiting.shift();
    if (this.#holder !== undefined) this.grant(this.#holder);
  }

  forget(gone: Holder): void {
    const index = this.#waiting.indexOf(gone);
    if (index >= 0) this.#waiting.splice(index, 1);
    this.release(gone);
  }
}

/**
 * The limit counters of the workers on SQLite (LimitCounterRepository's semantics: fixed
 * windows, each addition counted), in this process's memory: one counter for the whole
 * cluster, as PostgreSQL keeps one for all instances.
 */
class LimitCounters {
  readonly #counters = new LRUCache<string, LimitCount>({ max: COUNTERS_KEPT });

  add(request: CountRequest): LimitCount {
    const { key, points, now, windowMs } = request;
    const counter = this.#counters.get(key);
    if (counter === undefined || counter.resetsAt <= now) {
      const started = { count: points, resetsAt: now + windowMs };
      // Forgotten once its window ended (an LRU entry's ttl), so the map holds live windows.
      this.#counters.set(key, started, { ttl: windowMs });
      return started;
    }
    counter.count += points;
    return { ...counter };
  }
}
