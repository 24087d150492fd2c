// Two instances on one PostgreSQL (two stores, each with its own pool and listening
// connection): a commit on A wakes a long poll on B by LISTEN/NOTIFY, not by B's slow poll,
// and still does after the listening connections were cut.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { EventsService } from '../src/modules/events/events.service.js';
import type { EventFilter, NewEvent, Store } from '../src/store/store.js';
import { POSTGRES_URL, openTestPostgresStore, skipWithoutPostgres } from './postgres.js';

const skip = await skipWithoutPostgres();

const EVERYTHING: EventFilter = {
  types: null,
  clientId: null,
  actorId: null,
  resourceType: null,
  since: null,
  until: null,
  visibleClientIds: null,
};

function created(clientId: string): NewEvent {
  return {
    type: 'application.created',
    occurredAt: Date.now(),
    actor: { type: 'cli', id: null },
    clientId,
    resource: { type: 'application', id: { client_id: clientId } },
    changes: null,
    requestId: null,
  };
}

function application(clientId: string) {
  const now = Date.now();
  return {
    clientId,
    displayName: clientId,
    description: '',
    mode: 'internal' as const,
    jwtExpirationInMinutes: 60,
    externalTokenValidation: null,
    scimProvider: null,
    authorization: null,
    createdAt: now,
    updatedAt: now,
    etag: `${clientId}-1`,
  };
}

async function until(what: string, probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('long polls across two PostgreSQL instances', { skip, timeout: 120_000 }, () => {
  let a: Store & { schema: string };
  let b: Store;
  let onB: EventsService;
  before(async () => {
    a = await openTestPostgresStore();
    await a.migrate();
    b = await openTestPostgresStore({ schema: a.schema });
    // B never looks by itself within a test: only a notification can wake its long polls.
    onB = new EventsService({ store: b, clock: systemClock, feedPollMs: 600_000 });
  });
  after(async () => {
    onB.stopWaiting();
    await b.close();
    await a.close();
  });

  /** Commits an application (and its event) on A; resolves with how long B's poll took to wake. */
  async function wakeTime(clientId: string): Promise<number> {
    const last = await b.events.lastEventId();
    const poll = onB.listEvents({ filter: EVERYTHING, after: last, limit: 10, waitMs: 20_000 });
    await until('the long poll on B', () => onB.waiters.size === 1);
    await a.applications.insertApplication(application(clientId), [created(clientId)]);
    const committed = performance.now();
    const events = await poll;
    const woke = performance.now() - committed;
    assert.deepEqual(
      events.map((event) => event.clientId),
      [clientId],
    );
    return woke;
  }

  it('wakes a long poll on B within 100 ms of a commit on A', async () => {
    const times: number[] = [];
    for (let round = 0; round < 11; round++) times.push(await wakeTime(`wake-${round}`));
    times.sort((x, y) => x - y);
    const median = times[Math.floor(times.length / 2)]!;
    // The median of 11 rounds, so that one stall of a loaded machine does not decide it.
    assert.ok(median < 100, `woke after ${times.map((time) => time.toFixed(1)).join(', ')} ms`);
  });

  it('wakes it again after the listening connections were cut', async () => {
    await wakeTime('before-the-cut');
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      // Both instances' listening connections (their last statement names this schema's channel).
      const { rowCount } = await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and application_name = 'tessera-events'
            and query like '%' || (select 'tessera_events_' || left(md5($1), 16)) || '%'`,
        [a.schema],
      );
      assert.ok((rowCount ?? 0) >= 1);
    } finally {
      await admin.end();
    }
    // The next commit on A comes while the connections are opened again: announced once A's is.
    const woke = await wakeTime('after-the-cut');
    assert.ok(woke < 10_000);
  });
});
