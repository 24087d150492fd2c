import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CommitListeners } from '../sql/commit-listeners.js';

/** Commits of one burst share one NOTIFY: at most one is sent per this many milliseconds. */
const NOTIFY_EVERY_MS = 20;
/** The first wait before the listening connection is opened again; it doubles up to the max. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/**
 * The channel of this database schema's events: instances of one Tessera share it, Tessera
 * installations in other schemas of the same database do not hear each other. Channel names
 * are identifiers (63 bytes at most), so the schema's name goes in as a digest.
 */
const CHANNEL = `'tessera_events_' || left(md5(current_schema()), 16)`;
const CHANNEL_SQL = `select ${CHANNEL} as channel`;
const NOTIFY_BY_POOL_SQL = `select pg_notify(${CHANNEL}, $1)`;

/** SQLSTATEs of an engine without LISTEN/NOTIFY (feature not supported, syntax error). */
const UNSUPPORTED = new Set(['0A000', '42601']);

export interface EventNotifierOptions {
  /** How to connect (the pool's settings: the same database, schema and timeouts). */
  connection: pg.ClientConfig;
  /** Told when the listening connection fails or LISTEN is not supported (logged). */
  onTrouble?: (message: string, error?: unknown) => void;
  /**
   * Runs a statement on the store's pool: a NOTIFY goes that way when this process does not
   * listen (the CLI, or while its listening connection is down).
   */
  query: (text: string, values: unknown[]) => Promise<unknown>;
}

/**
 * Tells watchers of a PostgreSQL store that events were committed, here or on another
 * instance, with LISTEN/NOTIFY on one connection of its own, opened when the first watcher
 * comes: whatever the number of watchers (long polls, the webhook dispatcher), an instance
 * holds one connection and gets one notification per burst of commits elsewhere.
 *
 * - A local commit with events is told to local watchers at once, and to the other instances
 *   with one NOTIFY per NOTIFY_EVERY_MS at most, sent after the commit on the listening
 *   connection (on the pool when there is none: the CLI), never inside the writing transaction
 *   (NOTIFY serialises the commits that send it). The payload is this instance's id, so it
 *   ignores its own.
 * - When the connection drops it is opened again (with back-off), and watchers are told, since
 *   notifications may have been missed meanwhile.
 * - It is an optimisation, not what correctness rests on: an engine without LISTEN/NOTIFY
 *   (CockroachDB, YugabyteDB), a connection that is down, or an instance killed between its
 *   commit and its NOTIFY leave the watchers to look by themselves (they poll slowly), and
 *   events are numbered by the sequencer whether or not anyone is told.
 */
export class PostgresEventNotifier {
  readonly #instance = randomUUID();
  readonly #listeners = new CommitListeners();
  readonly #options: EventNotifierOptions;
  #client: pg.Client | undefined;
  #channel: string | undefined;
  #connecting: Promise<void> | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #reconnectDelay = RECONNECT_FIRST_MS;
  #unsupported = false;
  #stopped = false;
  /** A failure was reported and the connection has not come back since: not reported again. */
  #troubled = false;
  #lastNotifyAt = 0;
  #notifyTimer: NodeJS.Timeout | undefined;
  /** The NOTIFY being sent (and any sent after it), until none is left. */
  #sending: Promise<unknown> | undefined;
  /** Commits came while a NOTIFY was being sent: one more follows it. */
  #sendAgain = false;

  constructor(options: EventNotifierOptions) {
    this.#options = options;
  }

  /** Whether other instances' commits are heard now (the listening connection is up). */
  get listening(): boolean {
    return this.#channel !== undefined;
  }

  watch(onCommitted: () => void): () => void {
    const remove = this.#listeners.add(onCommitted);
    if (!this.#stopped && !this.#unsupported) this.#ensureConnection();
    return remove;
  }

  /** A local transaction committed events. */
  committed(): void {
    if (this.#stopped) return;
    // Local watchers hear of it after the caller has its answer (a microtask later).
    queueMicrotask(() => this.#listeners.notify());
    if (this.#notifyTimer !== undefined) return;
    const wait = Math.max(0, this.#lastNotifyAt + NOTIFY_EVERY_MS - Date.now());
    this.#notifyTimer = setTimeout(() => void this.#notifyOthers(), wait);
    this.#notifyTimer.unref();
  }

  /**
   * A sequencing round of this process numbered events: local watchers look (the events of an
   * instance killed before its NOTIFY are found so, within the sequencer's period).
   */
  sequenced(): void {
    if (!this.#stopped && this.#listeners.size > 0) this.#listeners.notify();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    // The last commits are announced before the connections go.
    if (this.#notifyTimer !== undefined) {
      clearTimeout(this.#notifyTimer);
      await this.#notifyOthers();
    }
    await this.#sending;
    await this.#connecting?.catch(() => undefined);
    const client = this.#client;
    this.#client = undefined;
    this.#channel = undefined;
    await client?.end().catch(() => undefined);
  }

  /**
   * Sends the NOTIFY, one at a time: when the database is slow to answer one (a loaded
   * machine, a long commit queue), commits meanwhile get one more NOTIFY after it, rather than
   * a second statement queued on the connection behind the first (which pg warns about and
   * will refuse). Settles once nothing is left to send.
   */
  #notifyOthers(): Promise<unknown> {
    this.#notifyTimer = undefined;
    if (this.#sending !== undefined) {
      this.#sendAgain = true;
      return this.#sending;
    }
    this.#lastNotifyAt = Date.now();
    const client = this.#client;
    const channel = this.#channel;
    const sent =
      client !== undefined && channel !== undefined
        ? client.query('select pg_notify($1, $2)', [channel, this.#instance])
        : this.#options.query(NOTIFY_BY_POOL_SQL, [this.#instance]);
    // A failure is the connection's (its error handler reconnects) or the database's: the
    // other instances' slow poll finds these events.
    const sending = sent
      .catch(() => undefined)
      .finally(() => {
        this.#sending = undefined;
      })
      .then(() => {
        if (!this.#sendAgain) return;
        this.#sendAgain = false;
        return this.#notifyOthers();
      });
    this.#sending = sending;
    return sending;
  }

  #ensureConnection(): void {
    if (this.#client !== undefined || this.#connecting !== undefined) return;
    if (this.#reconnectTimer !== undefined) return;
    this.#connecting = this.#connect().finally(() => (this.#connecting = undefined));
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      ...this.#options.connection,
      // The connection waits for notifications; its few statements are tiny.
      statement_timeout: 0,
      query_timeout: 0,
      keepAlive: true,
      application_name: 'tessera-events',
    });
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      this.#lost(client, error);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the listening connection closed')));
    client.on('notification', (message) => {
      if (message.channel === this.#channel && message.payload !== this.#instance) {
        this.#listeners.notify();
      }
    });
    try {
      await client.connect();
      // A NOTIFY from here need not wait for the disk: it says only "look now".
      await client.query('set synchronous_commit = off');
      const { rows } = await client.query<{ channel: string | null }>(CHANNEL_SQL);
      const channel = rows[0]?.channel;
      if (channel === null || channel === undefined) throw new Error('no current schema');
      await client.query(`listen "${channel}"`);
      if (this.#stopped) {
        await client.end().catch(() => undefined);
        return;
      }
      this.#client = client;
      this.#channel = channel;
      this.#reconnectDelay = RECONNECT_FIRST_MS;
      this.#troubled = false;
      // Whatever was committed while nobody listened is looked for now.
      this.#listeners.notify();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== undefined && UNSUPPORTED.has(code)) {
        this.#unsupported = true;
        this.#options.onTrouble?.(
          'this database does not support LISTEN/NOTIFY: long polls and webhooks look for other instances’ events every second instead',
        );
        failed = true;
        await client.end().catch(() => undefined);
        return;
      }
      fail(error);
    }
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#client === client) {
      this.#client = undefined;
      this.#channel = undefined;
    }
    client.end().catch(() => undefined);
    if (this.#stopped || this.#unsupported || this.#listeners.size === 0) return;
    if (!this.#troubled) {
      this.#troubled = true;
      this.#options.onTrouble?.(
        'the connection that listens for other instances’ events failed; opening it again',
        error,
      );
    }
    const delay = this.#reconnectDelay;
    this.#reconnectDelay = Math.min(RECONNECT_MAX_MS, delay * 2);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#ensureConnection();
    }, delay);
    this.#reconnectTimer.unref();
  }
}
