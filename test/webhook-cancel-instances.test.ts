// tessera-test: both-stores
// Two instances on one PostgreSQL: a webhook deleted through one instance while the other is
// delivering to it has its attempt in flight cancelled there, its connection closed.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { TEST_STORE, type TestContext, buildTestApp, call, createApplication } from './helpers.js';
import {
  createTestSchema,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from './postgres.js';
import { TricklingReceiver } from './trickling-receiver.js';

// Instances on one PostgreSQL whatever the pass: run once, in the PostgreSQL pass.
const skip =
  TEST_STORE === 'postgres'
    ? await skipWithoutPostgres()
    : 'instances on one PostgreSQL: run in the PostgreSQL pass';

describe('a webhook deleted through another instance', { skip, timeout: 60_000 }, () => {
  let schema = '';
  let delivering: TestContext;
  let other: TestContext;
  let receiver: TricklingReceiver;
  before(async () => {
    schema = await createTestSchema();
    const webhooks = { allowInsecure: true, timeoutMs: 60_000, dispatcher: { pollMs: 200 } };
    delivering = await buildTestApp({ store: await openTestPostgresStore({ schema }), webhooks });
    other = await buildTestApp({ store: await openTestPostgresStore({ schema }), webhooks });
    // Only the first instance delivers: the attempt in flight is surely its.
    await other.services.webhookDispatcher.stop();
    receiver = await TricklingReceiver.start(200);
  });
  after(async () => {
    await other.close();
    await delivering.close();
    await receiver.close();
    await dropSchema(schema);
  });

  it('closes the connection of the instance delivering', async () => {
    receiver.trickle.add('/hook');
    const created = await call(other, 'POST', '/webhooks', {
      body: { url: receiver.url('/hook'), event_types: ['application.*'] },
    });
    assert.equal(created.statusCode, 201, created.body);
    await createApplication(other, { client_id: 'cancelled-elsewhere' });
    for (let waited = 0; receiver.trickling === 0; waited += 20) {
      assert.ok(waited < 15_000, 'the delivery never started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const deleted = await call(other, 'DELETE', `/webhooks/${created.json<{ id: string }>().id}`);
    assert.equal(deleted.statusCode, 204);
    for (let waited = 0; receiver.trickling > 0; waited += 20) {
      // The delivering instance looks for work every 200 ms here (500 ms by default), and at
      // the notification of the webhook.deleted event.
      assert.ok(waited < 10_000, 'the connection stayed open');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(receiver.closedTrickles, 1);
  });
});
