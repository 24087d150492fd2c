// tessera-test: both-stores
// A receiver that trickles (its headers, then one byte every so often) cannot hold a webhook,
// another webhook or a shutdown: the deadline bounds the whole attempt, deleting or disabling
// a webhook closes its connection, and each webhook has connections of its own.

import { strict as assert } from 'node:assert';
import { after, afterEach, before, describe, it } from 'node:test';
import { type TestContext, buildTestApp, call, createApplication } from './helpers.js';
import { TricklingReceiver } from './trickling-receiver.js';

async function createHook(
  ctx: TestContext,
  url: string,
  options: { key?: string; clientIds?: string[] | null } = {},
): Promise<string> {
  const response = await call(ctx, 'POST', '/webhooks', {
    ...(options.key === undefined ? {} : { key: options.key }),
    body: { url, event_types: ['application.*'], client_ids: options.clientIds ?? null },
  });
  assert.equal(response.statusCode, 201, response.body);
  return response.json<{ id: string }>().id;
}

async function deliveries(ctx: TestContext, id: string) {
  const response = await call(ctx, 'GET', `/webhooks/${id}/deliveries`);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{
    items: {
      status: string;
      attempts: number;
      last_status_code: number | null;
      log: { status_code: number | null; error: string | null; duration_ms: number }[];
    }[];
  }>().items;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function renameApplication(ctx: TestContext, clientId: string, name: string) {
  const response = await call(ctx, 'PATCH', `/applications/${clientId}`, {
    body: { display_name: name },
  });
  assert.equal(response.statusCode, 200, response.body);
}

describe('a receiver that trickles its answer', () => {
  let ctx: TestContext;
  let receiver: TricklingReceiver;
  before(async () => {
    // A test-only deadline of 600 ms; retries far enough apart that none comes during a test.
    ctx = await buildTestApp({
      webhooks: {
        allowInsecure: true,
        timeoutMs: 600,
        dispatcher: {
          pollMs: 50,
          retry: { firstDelayMs: 60_000, maxDelayMs: 60_000, giveUpAfterMs: 600_000 },
        },
      },
    });
    receiver = await TricklingReceiver.start(100);
  });
  after(async () => {
    await ctx.close();
    await receiver.close();
  });

  it('ends the attempt at the deadline, though bytes keep coming, and records it', async () => {
    receiver.trickle.add('/slow');
    const hook = await createHook(ctx, receiver.url('/slow'));
    await createApplication(ctx, { client_id: 'trickled' });
    const [head] = await until('the attempt recorded', async () => {
      const items = await deliveries(ctx, hook);
      return items.length > 0 ? items : undefined;
    });
    assert.equal(head!.status, 'pending');
    assert.equal(head!.attempts, 1);
    // The status line arrived; the answer never finished.
    assert.equal(head!.log[0]!.status_code, 200);
    assert.match(head!.log[0]!.error ?? '', /no complete answer within 600 ms/);
    assert.ok(head!.log[0]!.duration_ms >= 590, `${head!.log[0]!.duration_ms} ms`);
    // The connection was closed, not left to trickle on.
    await until('the trickle closed', () => (receiver.trickling === 0 ? true : undefined));
    const metrics = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /tessera_webhook_deliveries_total\{outcome="timed_out"\} 1\n/);
    assert.match(metrics.body, /tessera_webhook_backlog_events [1-9]/);
    assert.match(metrics.body, /tessera_webhook_oldest_pending_age_seconds /);
  });
});

describe('webhooks whose receivers trickle, with a deadline far away', () => {
  let ctx: TestContext;
  let receiver: TricklingReceiver;
  before(async () => {
    // 60 s: no attempt in these tests ends by its deadline.
    ctx = await buildTestApp({
      webhooks: { allowInsecure: true, timeoutMs: 60_000, dispatcher: { pollMs: 50 } },
    });
    receiver = await TricklingReceiver.start(200);
  });
  after(async () => {
    await ctx.close();
    await receiver.close();
  });
  afterEach(async () => {
    // Whatever a test left trickling is closed by deleting its webhooks.
    const listed = await call(ctx, 'GET', '/webhooks');
    for (const { id } of listed.json<{ items: { id: string }[] }>().items) {
      await call(ctx, 'DELETE', `/webhooks/${id}`);
    }
    await until('every trickle closed', () => (receiver.trickling === 0 ? true : undefined));
    receiver.trickle.clear();
  });

  it('closes the connection of an attempt in flight when its webhook is deleted', async () => {
    receiver.trickle.add('/deleted');
    const hook = await createHook(ctx, receiver.url('/deleted'));
    await createApplication(ctx, { client_id: 'deleted-hook' });
    await until('the trickle', () => (receiver.trickling === 1 ? true : undefined));
    const closedBefore = receiver.closedTrickles;
    const response = await call(ctx, 'DELETE', `/webhooks/${hook}`);
    assert.equal(response.statusCode, 204);
    await until('the connection closed', () =>
      receiver.closedTrickles > closedBefore ? true : undefined,
    );
    assert.equal(receiver.trickling, 0);
    const metrics = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /tessera_webhook_deliveries_total\{outcome="cancelled"\} [1-9]/);
  });

  it('closes it when the webhook is disabled, and delivers that event once enabled', async () => {
    receiver.trickle.add('/disabled');
    const hook = await createHook(ctx, receiver.url('/disabled'));
    await createApplication(ctx, { client_id: 'disabled-hook' });
    await until('the trickle', () => (receiver.trickling === 1 ? true : undefined));
    const disabled = await call(ctx, 'PATCH', `/webhooks/${hook}`, { body: { enabled: false } });
    assert.equal(disabled.statusCode, 200, disabled.body);
    await until('the connection closed', () => (receiver.trickling === 0 ? true : undefined));
    // The cancelled attempt is not held against the receiver: nothing was recorded.
    assert.deepEqual(await deliveries(ctx, hook), []);
    receiver.trickle.delete('/disabled');
    const enabled = await call(ctx, 'PATCH', `/webhooks/${hook}`, { body: { enabled: true } });
    assert.equal(enabled.statusCode, 200, enabled.body);
    const accepted = await until('the delivery', () =>
      receiver.accepted.find((delivery) => delivery.path === '/disabled'),
    );
    const sent = receiver.arrived.filter((delivery) => delivery.path === '/disabled');
    assert.deepEqual(
      sent.map((delivery) => delivery.eventId),
      [accepted.eventId, accepted.eventId],
    );
  });

  it("delivers another tenant's webhook on the same origin while four of these trickle", async () => {
    await createApplication(ctx, { client_id: 'tenant-a' });
    await createApplication(ctx, { client_id: 'tenant-b' });
    // Tenant A's key may manage webhooks for its own application only.
    const tenantKey = await ctx.createKey({
      roles: ['webhooks:write', 'webhooks:read'],
      applications: ['tenant-a'],
    });
    for (const index of [1, 2, 3, 4]) {
      receiver.trickle.add(`/tenant-a/${index}`);
      await createHook(ctx, receiver.url(`/tenant-a/${index}`), {
        key: tenantKey,
        clientIds: ['tenant-a'],
      });
    }
    await createHook(ctx, receiver.url('/tenant-b'), { clientIds: ['tenant-b'] });
    await renameApplication(ctx, 'tenant-a', 'Tenant A, renamed');
    await until('four trickles', () => (receiver.trickling === 4 ? true : undefined));
    await renameApplication(ctx, 'tenant-b', 'Tenant B, renamed');
    await until('the delivery to tenant B', () =>
      receiver.accepted.find((delivery) => delivery.path === '/tenant-b'),
    );
    // Delivered while every trickling attempt still held its connection.
    assert.equal(receiver.trickling, 4);
  });
});
