import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { EVENT_COLUMNS } from '../sql/rows.js';
import { isRetryable, releaseFailedTransaction } from './postgres-errors.js';

/** Pending events numbered per sequencing transaction (a round runs as many as it needs). */
const BATCH = 1000;
/**
 * How soon after a local commit with events a round runs; commits meanwhile share it. Readers
 * run their own round first (settle), so this only keeps events_pending short. A round costs
 * about a millisecond of PostgreSQL's CPU whatever it moves (planning, its own transaction and
 * WAL flush); fewer, larger rounds cost writes less (bench/README.md, "What the audit trail costs").
 */
const AFTER_COMMIT_MS = 200;
/** How often a sequencing transaction that hit a serialization failure or deadlock is run again. */
const ATTEMPTS = 8;
/** How often a round runs regardless: events another instance committed and never sequenced. */
const PERIOD_MS = 1000;
/**
 * Rows this instance moved out of events_pending between two VACUUMs of it. Every moved row
 * leaves a dead one behind, and the rounds' scans of events_pending (the EXISTS look, the
 * DELETE) read them all until a VACUUM: 5,000 rows are about 600 pages.
 */
const VACUUM_AFTER_ROWS = 5000;
/**
 * TRUNCATE false: a queue's emptied pages are filled again within the second. Truncating them
 * takes an ACCESS EXCLUSIVE lock on the table, which every writer's INSERT then waits for, and
 * the next inserts extend the file again (both seen as waits in pg_stat_activity under load).
 */
const VACUUM_SQL = 'vacuum (skip_locked, truncate false) events_pending';

const columns = EVENT_COLUMNS.join(', ');

/**
 * One sequencing transaction, sent as one simple query (one round trip). Each statement of it
 * takes a fresh snapshot under READ COMMITTED:
 * 1. the row lock of event_sequence, so sequencers of every instance run one at a time, and each
 *    starts only once the previous one has committed;
 * 2. pending rows committed so far, oldest first, moved into events with the ids that follow
 *    `last`, and `last` moved on. The moved count comes back.
 *
 * The rows of one transaction are moved together and numbered next to each other, in the
 * order it inserted them: pending keys come from a sequence, which concurrent transactions
 * draw from in turn, so two writes' keys may interleave. A row's transaction is its xmin
 * (events_pending rows are inserted and deleted, never updated); a batch takes every row of
 * the transactions of its oldest BATCH rows, and orders by each transaction's first key.
 */
const SEQUENCE_SQL = [
  'begin',
  'select last from event_sequence where id = 1 for update',
  'with moved as (' +
    'delete from events_pending where xmin::text::bigint in ' +
    `(select xmin::text::bigint from events_pending order by id limit ${BATCH}) ` +
    `returning id, xmin::text::bigint as tx, ${columns}), ` +
    'base as (select last from event_sequence where id = 1), ' +
    `inserted as (insert into events (seq, ${columns}) ` +
    `select base.last + row_number() over (order by m.first, m.id), ${EVENT_COLUMNS.map((column) => `m.${column}`).join(', ')} ` +
    'from (select moved.*, min(moved.id) over (partition by moved.tx) as first from moved) m ' +
    'cross join base returning seq) ' +
    'update event_sequence set last = last + (select count(*) from inserted) ' +
    'where id = 1 and exists (select 1 from inserted) ' +
    'returning (select count(*) from inserted)::integer as moved',
  'commit',
].join('; ');

const PENDING_SQL = 'select exists (select 1 from events_pending) as pending';

export interface SequencerDeps {
  /** A client of the store's pool, for one round. */
  connect(): Promise<pg.PoolClient>;
  /** Runs a query on the pool. */
  query(text: string): Promise<pg.QueryResult<pg.QueryResultRow>>;
  /** Runs a store operation (counted for close, errors translated). */
  track<T>(operation: () => Promise<T>): Promise<T>;
  /** Told after a round that numbered events. */
  moved?: () => void;
}

/**
 * Numbers committed events on PostgreSQL after their transactions commit (docs/architecture.md).
 * Writers insert their events into events_pending in their own transaction, taking no lock but
 * the new row's; a round moves the pending rows committed so far into events, numbered after
 * the last id handed out. Rounds of all instances take the event_sequence row lock first and
 * commit before the next one reads `last`, so ids become visible in increasing order: an event
 * whose transaction commits late is sequenced by a later round, with a larger id than any a
 * reader has already seen.
 *
 * settle() makes every event committed before it was called readable: readers call it first.
 * Concurrent callers share rounds: one round runs at a time per process, and callers arriving
 * while one runs share the next one (the running one may have looked before their writes).
 */
export class EventSequencer {
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #soon: NodeJS.Timeout | undefined;
  #periodic: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Events committed here since the last round started: close() sequences them. */
  #localPending = false;
  #movedSinceVacuum = 0;
  #vacuuming: Promise<void> | undefined;

  constructor(private readonly deps: SequencerDeps) {}

  /** Resolves once every event committed before the call has its id. */
  settle(): Promise<void> {
    if (this.#running === undefined) return this.#start();
    this.#queued ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#queued = undefined;
        return this.#running ?? this.#start();
      });
    return this.#queued;
  }

  /** A local transaction committed events: a round runs shortly, shared by commits meanwhile. */
  committed(): void {
    this.#localPending = true;
    if (this.#stopped || this.#soon !== undefined) return;
    this.#soon = setTimeout(() => {
      this.#soon = undefined;
      this.#background();
    }, AFTER_COMMIT_MS);
    this.#soon.unref();
  }

  /** Starts the periodic round (once the tables exist). */
  startPeriodic(): void {
    if (this.#stopped || this.#periodic !== undefined) return;
    this.#periodic = setInterval(() => this.#background(), PERIOD_MS);
    this.#periodic.unref();
  }

  /**
   * Stops the background rounds; sequences what this process committed (best effort: another
   * instance, or this one restarted, sequences whatever is left).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#soon);
    clearInterval(this.#periodic);
    if (this.#localPending) await this.settle().catch(() => undefined);
    else await this.#running?.catch(() => undefined);
    await this.#vacuuming;
  }

  #background(): void {
    if (this.#stopped) return;
    // Failures are left to the next round; readers meet them in their own settle().
    this.settle().catch(() => undefined);
  }

  #start(): Promise<void> {
    const round = this.deps.track(() => this.#round());
    const running = round.finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }

  async #round(): Promise<void> {
    this.#localPending = false;
    const { rows } = await this.deps.query(PENDING_SQL);
    if (rows[0]?.pending !== true) return;
    for (let attempt = 1; ;) {
      let moved: number;
      try {
        moved = await this.#sequenceBatch();
      } catch (error) {
        // A serialization failure or deadlock (engines that run it under SERIALIZABLE).
        if (!isRetryable(error) || attempt === ATTEMPTS) throw error;
        attempt += 1;
        await sleep(Math.random() * 5 * attempt);
        continue;
      }
      if (moved > 0) this.deps.moved?.();
      this.#movedSinceVacuum += moved;
      if (this.#movedSinceVacuum >= VACUUM_AFTER_ROWS) this.#vacuum();
      if (moved < BATCH) return;
    }
  }

  /**
   * VACUUMs events_pending in the background, once at a time, so the rounds' scans stay short
   * whether or not autovacuum runs (a queue table's dead rows outgrow its live ones between
   * autovacuum visits). SKIP_LOCKED: when another instance is vacuuming it, this one does not
   * wait. Failures are left to the next one (a role that does not own the table gets only a
   * warning from PostgreSQL).
   */
  #vacuum(): void {
    if (this.#vacuuming !== undefined || this.#stopped) return;
    this.#movedSinceVacuum = 0;
    this.#vacuuming = this.deps
      .track(() => this.deps.query(VACUUM_SQL))
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (this.#vacuuming = undefined));
  }

  async #sequenceBatch(): Promise<number> {
    const client = await this.deps.connect();
    try {
      const results = (await client.query(SEQUENCE_SQL)) as unknown as pg.QueryResult[];
      client.release();
      const moved = results[2]?.rows[0]?.moved as number | undefined;
      return moved ?? 0;
    } catch (error) {
      await releaseFailedTransaction(client, error);
      throw error;
    }
  }
}
