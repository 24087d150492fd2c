import type Database from 'better-sqlite3';
import { translateSqliteError } from './sqlite-errors.js';

interface Job {
  work: () => number[];
  resolve: (changes: number[]) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: number[] } | { ok: false; error: unknown };

/**
 * Group commit. Writes that arrive during one event-loop turn share one transaction and one
 * fsync (synchronous=FULL), each inside its own savepoint so it succeeds or fails alone.
 * A write's promise settles only after the COMMIT that made it durable returned: nothing
 * is acknowledged that a crash could lose.
 */
export class SqliteWriteBatcher {
  #queue: Job[] = [];
  #scheduled = false;
  #idle: Promise<void> = Promise.resolve();
  #markIdle: () => void = () => {};
  readonly #statements;

  constructor(private readonly db: Database.Database) {
    this.#statements = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT write'),
      release: db.prepare('RELEASE write'),
      rollbackTo: db.prepare('ROLLBACK TO write'),
    };
  }

  run(work: () => number[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ work, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#idle = new Promise((markIdle) => (this.#markIdle = markIdle));
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Resolves once every write queued so far has been committed or refused. */
  drain(): Promise<void> {
    return this.#idle;
  }

  #flush(): void {
    const jobs = this.#queue;
    this.#queue = [];
    this.#scheduled = false;
    try {
      this.#commitBatch(jobs);
    } catch (error) {
      // Unexpected (a savepoint statement itself failed): undo everything, refuse the batch.
      // Jobs already settled ignore the second settlement.
      if (this.db.inTransaction) this.#tryStatement(this.#statements.rollback);
      settleAll(jobs, { ok: false, error: translateSqliteError(error) });
    } finally {
      if (!this.#scheduled) this.#markIdle();
    }
  }

  #commitBatch(jobs: Job[]): void {
    let outcomes: Outcome[] = [];
    let pending = jobs;
    while (pending.length > 0) {
      const failure = this.#tryStatement(this.#statements.begin);
      if (failure !== undefined) return settleAll(pending, { ok: false, error: failure });
      const done: Job[] = [];
      let aborted: unknown;
      for (const job of pending) {
        const outcome = this.#runInSavepoint(job);
        if (!this.db.inTransaction) {
          // SQLite rolled the whole transaction back (disk full, I/O error): the writes done
          // so far in this batch are gone too. Refuse them; retry the rest in a new batch.
          aborted = outcome.ok ? new Error('transaction rolled back') : outcome.error;
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
      const commitFailure = this.#tryStatement(this.#statements.commit);
      if (commitFailure !== undefined) {
        if (this.db.inTransaction) this.#tryStatement(this.#statements.rollback);
        return settleAll(done, { ok: false, error: commitFailure });
      }
      done.forEach((job, index) => settle(job, outcomes[index]!));
      return;
    }
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
