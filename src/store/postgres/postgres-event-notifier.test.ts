// The NOTIFY that tells other instances of commits goes out one at a time on the listening
// connection. When the database is slow to answer one, commits meanwhile are announced by one
// more NOTIFY after it, never by a second statement queued on the connection behind the
// first (pg warns about that, and its next major version refuses it), and the last commit is
// still announced.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  POSTGRES_URL,
  createTestSchema,
  databaseUrlFor,
  dropSchema,
  skipWithoutPostgres,
} from '../../../test/postgres.js';
import { PostgresEventNotifier } from './postgres-event-notifier.js';

const skip = await skipWithoutPostgres();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

describe('PostgreSQL event notifier', { skip }, () => {
  let schema: string;
  before(async () => {
    schema = await createTestSchema();
  });
  after(() => dropSchema(schema));

  it('sends one NOTIFY at a time when the database answers slowly, and announces the last commit', async () => {
    const connection = { connectionString: databaseUrlFor(schema, POSTGRES_URL) };
    const pool = new pg.Pool({ ...connection, max: 1 });
    const options = {
      connection,
      query: (text: string, values: unknown[]) => pool.query(text, values),
    };
    const sender = new PostgresEventNotifier(options);
    const receiver = new PostgresEventNotifier(options);
    let heard = 0;
    const stopWatching = [sender.watch(() => undefined), receiver.watch(() => (heard += 1))];
    // Every NOTIFY takes 40 ms to be answered; the statements in flight are counted.
    const query = pg.Client.prototype.query;
    const passOn = (client: pg.Client, args: unknown[]) =>
      (query as (...args: unknown[]) => Promise<unknown>).apply(client, args);
    let inFlight = 0;
    let mostInFlight = 0;
    let sent = 0;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : '';
      if (!text.startsWith('select pg_notify')) return passOn(this, args);
      inFlight += 1;
      sent += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      return sleep(40)
        .then(() => passOn(this, args))
        .finally(() => (inFlight -= 1));
    } as typeof query;
    try {
      await until('both connections listen', () => sender.listening && receiver.listening);
      heard = 0;
      // A commit every 5 ms for 300 ms: many more than one NOTIFY can be answered in.
      for (let n = 0; n < 60; n++) {
        sender.committed();
        await sleep(5);
      }
      const heardAtLastCommit = heard;
      await until('the last commit is announced', () => heard > heardAtLastCommit);
      await until('nothing is left to send', () => inFlight === 0);
      assert.equal(mostInFlight, 1, 'never two NOTIFY statements at once on the connection');
      assert.ok(sent >= 2, `commits during a NOTIFY get one more after it (${sent} sent)`);
      assert.ok(sent <= 12, `a burst shares its NOTIFY (${sent} for 60 commits)`);
    } finally {
      pg.Client.prototype.query = query;
      for (const stop of stopWatching) stop();
      await sender.stop();
      await receiver.stop();
      await pool.end();
    }
  });
});
