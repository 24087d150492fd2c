import type Database from 'better-sqlite3';
import { StoreUnavailableError } from '../errors.js';
import type { WriteTurn } from '../sql/commit-listeners.js';
import type { StoreObserver } from '../store.js';
import { isBusy, translateSqliteError } from './sqlite-errors.js';

interface Job {
  work: () => number[];
  /** Run after every savepoint of the batch with work's change counts, when it succeeded. */
  afterwards: ((changes: number[]) => void) | undefined;
  resolve: (changes: number[]) => void;
  reject: (error: unknown) => void;
  /** Until when this write may wait for another process to release the write lock. */
  deadline: number;
}

type Outcome = { ok: true; value: number[] } | { ok: false; error: unknown };

export interface WriteBatcherOptions {
  /** How long a write waits for the write lock held by another process, then fails (503). */
  lockWaitMs?: number;
  /** The sibling processes' write turn (IAM_WORKERS), when several serve the same file. */
  writeTurn?: WriteTurn;
}

/**
 * How long a batch waits for the write turn before it writes without it (SQLite's lock still
 * keeps the writers apart): a turn that got lost (the primary gone) costs this much, no more.
 */
const TURN_WAIT_MS = 250;

/** How long a write waits for another process's write lock unless told otherwise. */
export const DEFAULT_LOCK_WAIT_MS = 2000;

/** Between attempts to take a lock another process holds; the event loop runs meanwhile. */
const LOCK_RETRY_MS = 10;

/** At most this many writes share one transaction, so one flush never holds the loop long. */
const MAX_BATCH = 500;

/**
 * Group commit. Writes that arrive during one event-loop turn share one transaction and one
 * fsync (synchronous=FULL), each inside its own savepoint so it succeeds or fails alone.
 * A write's promise settles only after the COMMIT that made it durable returned: nothing
 * is acknowledged that a crash could lose.
 *
 * When another process holds the write lock (a CLI command, a backup), the batch waits on a
 * timer, not in SQLite's busy handler, so reads and health checks keep being answered.
 *
 * Workers of one cluster (IAM_WORKERS) serving the same file take the lock in turns (WriteTurn):
 * a batch is begun once its process holds the turn, and the turn is handed on right after the
 * COMMIT. Without it, a worker that found its sibling's lock slept in SQLite's busy handler
 * with its event loop blocked (1, 2, 5 ms… up to SQLITE_BUSY_SPIN_MS), then on the timer; with
 * it, the worker goes on serving while it waits, and the writes that arrive meanwhile join its
 * batch.
 *
 * A write's `afterwards` statements (its audit events) run once every savepoint of the batch
 * is released, in the order of the writes, in the same transaction: with their write or not at
 * all. Inside a savepoint, SQLite first copies every page a statement changes to the
 * sub-journal, which spills to a temporary file past 64 KiB; a user's row and indexes with an
 * event's row and indexes went past it, and the copies cost more than the writes (60 µs a write
 * against 24 µs with the events outside the savepoints; bench/README.md). If an `afterwards`
 * statement fails (a full disk), the transaction is rolled back and every write of the batch
 * is refused: none of them is committed.
 */
export class SqliteWriteBatcher {
  #queue: Job[] = [];
  #scheduled = false;
  /** True from the first queued write until the queue is empty again (drain's promise). */
  #busy = false;
  #idle: Promise<void> = Promise.resolve();
  #markIdle: () => void = () => {};
  readonly #lockWaitMs: number;
  readonly #writeTurn: WriteTurn | undefined;
  /** A request for the turn is out, not yet granted. */
  #turnRequested = false;
  /** A batch waits for the turn (flush deferred); its fallback timer. */
  #turnTimer: NodeJS.Timeout | undefined;
  readonly #statements;
  /** Told how long each COMMIT took (metrics). */
  readonly observers: StoreObserver[] = [];

  constructor(
    private readonly db: Database.Database,
    options: WriteBatcherOptions = {},
  ) {
    this.#lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
    this.#writeTurn = options.writeTurn;
    this.#statements = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT write'),
      release: db.prepare('RELEASE write'),
      rollbackTo: db.prepare('ROLLBACK TO write'),
    };
  }

  /**
   * Queues a write: `work` runs in its own savepoint and returns the changed-row counts;
   * `afterwards`, when given, runs with them after the batch's savepoints if `work` succeeded.
   */
  run(work: () => number[], afterwards?: (changes: number[]) => void): Promise<number[]> {
    if (!this.db.open) {
      return Promise.reject(new StoreUnavailableError('the database is closed', 'all'));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({
        work,
        afterwards,
        resolve,
        reject,
        deadline: Date.now() + this.#lockWaitMs,
      });
      this.#schedule(0);
    });
  }

  /** Resolves once every write queued so far has been committed or refused. */
  drain(): Promise<void> {
    return this.#idle;
  }

  #schedule(delayMs: number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    if (!this.#busy) {
      this.#busy = true;
      this.#idle = new Promise((markIdle) => (this.#markIdle = markIdle));
    }
    const flush = () => (this.#writeTurn === undefined ? this.#flush() : this.#awaitTurn());
    if (delayMs === 0) setImmediate(flush);
    else setTimeout(flush, delayMs);
  }

  /**
   * With sibling processes: the batch is written once this process holds the write turn;
   * writes queued meanwhile join it. Without a grant within TURN_WAIT_MS, it is written anyway.
   */
  #awaitTurn(): void {
    this.#turnTimer ??= setTimeout(() => {
      this.#turnTimer = undefined;
      this.#flush();
    }, TURN_WAIT_MS);
    if (this.#turnRequested) return;
    this.#turnRequested = true;
    this.#writeTurn!.request(() => this.#turnGranted());
  }

  #turnGranted(): void {
    this.#turnRequested = false;
    // No batch waits when the fallback timer wrote it already: the turn goes straight back.
    const waiting = this.#turnTimer !== undefined;
    clearTimeout(this.#turnTimer);
    this.#turnTimer = undefined;
    try {
      if (waiting) this.#flush();
    } finally {
      // Handed on right after the COMMIT: the sibling writes while this process gathers its
      // next batch (#flush scheduled it, if any).
      this.#writeTurn!.release();
    }
  }

  #flush(): void {
    const jobs = this.#queue.splice(0, MAX_BATCH);
    this.#scheduled = false;
    try {
      this.#commitBatch(jobs);
    } catch (error) {
      // Unexpected (a savepoint statement itself failed): undo everything, refuse the batch.
      // Jobs already settled ignore the second settlement.
      if (this.db.inTransaction) this.#tryStatement(this.#statements.rollback);
      settleAll(jobs, { ok: false, error: translateSqliteError(error) });
    } finally {
      // Writes beyond this batch, or queued meanwhile, go next (unless a lock wait is pending).
      if (this.#queue.length > 0) this.#schedule(0);
      if (!this.#scheduled) {
        this.#busy = false;
        this.#markIdle();
      }
    }
  }

  #commitBatch(jobs: Job[]): void {
    let outcomes: Outcome[] = [];
    let pending = jobs;
    while (pending.length > 0) {
      const failure = this.#begin();
      if (failure === 'locked') return this.#waitForLock(pending);
      if (failure !== undefined) return settleAll(pending, { ok: false, error: failure });
      const done: Job[] = [];
      let aborted: unknown;
      for (const job of pending) {
        const outcome = this.#runInSavepoint(job);
        if (!this.db.inTransaction) {
          // SQLite rolled the whole transaction back (disk full, I/O error): the writes done
          // so far in this batch are gone too. Refuse them; retry the rest in a new batch.
          aborted = outcome.ok
            ? new StoreUnavailableError('the database rolled the transaction back', 'all')
            : outcome.error;
          done.push(job);
          break;
        }
        outcomes.push(outcome);
        done.push(job);
      }
      if (aborted !== undefined) {
        settleAll(done, { ok: false, error: aborted });
        outcomes = [];
        pending = pending.slice(done.length);
        continue;
      }
      const afterwardsFailure = this.#runAfterwards(done, outcomes);
      if (afterwardsFailure !== undefined) {
        if (this.db.inTransaction) this.#tryStatement(this.#statements.rollback);
        return settleAll(done, { ok: false, error: afterwardsFailure });
      }
      const started = performance.now();
      const commitFailure = this.#tryStatement(this.#statements.commit);
      if (commitFailure === undefined) {
        const seconds = (performance.now() - started) / 1000;
        for (const observer of this.observers) observer.committed?.(seconds);
      }
      if (commitFailure !== undefined) {
        if (this.db.inTransaction) this.#tryStatement(this.#statements.rollback);
        return settleAll(done, { ok: false, error: commitFailure });
      }
      done.forEach((job, index) => settle(job, outcomes[index]!));
      return;
    }
  }

  /** The succeeded writes' `afterwards`, in order: undefined, or the first failure. */
  #runAfterwards(jobs: Job[], outcomes: Outcome[]): unknown {
    try {
      jobs.forEach((job, index) => {
        const outcome = outcomes[index]!;
        if (outcome.ok) job.afterwards?.(outcome.value);
      });
      return undefined;
    } catch (error) {
      return translateSqliteError(error);
    }
  }

  /** BEGIN IMMEDIATE: undefined when it worked, 'locked' when another process holds the lock. */
  #begin(): unknown {
    try {
      this.#statements.begin.run();
      return undefined;
    } catch (error) {
      return isBusy(error) ? 'locked' : translateSqliteError(error);
    }
  }

  /** Refuses the writes that waited long enough; the rest try again shortly, ahead of newer ones. */
  #waitForLock(jobs: Job[]): void {
    const now = Date.now();
    const expired = jobs.filter((job) => job.deadline <= now);
    settleAll(expired, {
      ok: false,
      error: new StoreUnavailableError('another process holds the database write lock', 'all'),
    });
    this.#queue = [...jobs.filter((job) => job.deadline > now), ...this.#queue];
    if (this.#queue.length > 0) this.#schedule(LOCK_RETRY_MS);
  }

  #runInSavepoint(job: Job): Outcome {
    this.#statements.savepoint.run();
    try {
      const value = job.work();
      this.#statements.release.run();
      return { ok: true, value };
    } catch (error) {
      if (this.db.inTransaction) {
        this.#statements.rollbackTo.run();
        this.#statements.release.run();
      }
      return { ok: false, error: translateSqliteError(error) };
    }
  }

  #tryStatement(statement: Database.Statement): unknown {
    try {
      statement.run();
      return undefined;
    } catch (error) {
      return translateSqliteError(error);
    }
  }
}

function settle(job: Job, outcome: Outcome): void {
  if (outcome.ok) job.resolve(outcome.value);
  else job.reject(outcome.error);
}

function settleAll(jobs: Job[], outcome: Outcome): void {
  for (const job of jobs) settle(job, outcome);
}
