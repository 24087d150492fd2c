// tessera-test: both-stores
// The change feed's long polls wait on one watch of the store's commits: a thousand idle
// waiters read nothing while nothing is committed, so other callers do not pay for them, and
// one commit wakes each of them once.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import {
  type TestContext,
  buildTestApp,
  call,
  createApplication,
  openTestStore,
} from './helpers.js';

const WAITERS = 1000;

async function until(what: string, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe(`${WAITERS} long polls on GET /events?wait=`, () => {
  let ctx: TestContext;
  /** Reads of the feed (store.events.listEvents) since the app was built. */
  let feedReads = 0;
  before(async () => {
    const store = await openTestStore();
    const listEvents = store.events.listEvents.bind(store.events);
    store.events.listEvents = (filter, page) => {
      feedReads += 1;
      return listEvents(filter, page);
    };
    ctx = await buildTestApp({ store });
  });
  after(() => ctx.close());

  it('read nothing while nothing commits, then each reads once when one event does', async () => {
    const { waiters } = ctx.services.events;
    const after = await ctx.store.events.lastEventId();
    const poll = () => call(ctx, 'GET', `/events?type=application.*&after=${after}&wait=25`);
    // One poll first, so that the newest event id is known before the others mark it.
    const first = poll();
    await until('the first waiter', () => waiters.size === 1);
    const polls = [first, ...Array.from({ length: WAITERS - 1 }, poll)];
    await until(`${WAITERS} waiters`, () => waiters.size === WAITERS);

    const readsWhileIdle = feedReads;
    const looksWhileIdle = waiters.looks;
    const startedIdle = Date.now();
    // Another client is served meanwhile.
    for (let index = 0; index < 20; index++) {
      assert.equal((await call(ctx, 'GET', '/applications')).statusCode, 200);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(feedReads - readsWhileIdle, 0, 'an idle waiter read the feed');
    // The newest event id is looked at once a second at most while nothing is notified.
    const idleSeconds = (Date.now() - startedIdle) / 1000;
    assert.ok(waiters.looks - looksWhileIdle <= Math.ceil(idleSeconds) + 1);
    assert.equal(waiters.size, WAITERS);

    const readsBeforeCommit = feedReads;
    await createApplication(ctx, { client_id: 'wakes-every-waiter' });
    const answers = await Promise.all(polls);
    for (const answer of answers) {
      assert.equal(answer.statusCode, 200);
      const items = answer.json<{ items: { client_id: string }[] }>().items;
      assert.deepEqual(
        items.map((item) => item.client_id),
        ['wakes-every-waiter'],
      );
    }
    assert.equal(feedReads - readsBeforeCommit, WAITERS, 'each waiter read the feed once');
    assert.equal(waiters.size, 0);
  });

  it('ends every long poll at once when the server stops', async () => {
    const other = await buildTestApp();
    const { waiters } = other.services.events;
    const after = await other.store.events.lastEventId();
    const polls = Array.from({ length: 10 }, () =>
      call(other, 'GET', `/events?after=${after}&wait=30`),
    );
    await until('10 waiters', () => waiters.size === 10);
    const started = Date.now();
    const closing = other.close();
    const answers = await Promise.all(polls);
    await closing;
    assert.ok(Date.now() - started < 5_000);
    for (const answer of answers) assert.equal(answer.statusCode, 200);
    assert.equal(waiters.size, 0);
  });
});
