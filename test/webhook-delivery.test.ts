// tessera-test: both-stores
// Deliveries to real HTTP receivers on loopback: signed so the official Standard Webhooks
// verifier accepts them, in order, retried through failures, stopped by 410.

import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, call, createApplication, type TestContext } from './helpers.js';
import { WebhookReceiver } from './webhook-receiver.js';

const FAST = {
  allowInsecure: true,
  timeoutMs: 400,
  dispatcher: {
    pollMs: 50,
    retry: { firstDelayMs: 40, maxDelayMs: 200, giveUpAfterMs: 60_000 },
  },
};

async function createHook(
  ctx: TestContext,
  receiver: { url: string; secrets?: string[] },
  overrides: Record<string, unknown> = {},
): Promise<{ id: string; secret: string }> {
  const response = await call(ctx, 'POST', '/webhooks', {
    body: { url: receiver.url, event_types: ['application.*'], ...overrides },
  });
  assert.equal(response.statusCode, 201, response.body);
  const body = response.json<{ id: string; secret: string }>();
  receiver.secrets?.push(body.secret);
  return body;
}

async function createApplications(ctx: TestContext, prefix: string, count: number) {
  for (let index = 0; index < count; index++) {
    await createApplication(ctx, { client_id: `${prefix}-${index}` });
  }
}

async function deliveries(ctx: TestContext, id: string) {
  const response = await call(ctx, 'GET', `/webhooks/${id}/deliveries?limit=1000`);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{
    items: {
      event_id: string;
      event_type: string;
      status: string;
      attempts: number;
      next_attempt_at: string | null;
      last_status_code: number | null;
      log: { status_code: number | null; error: string | null }[];
    }[];
  }>().items;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The client_ids of application events, in the order the receiver accepted them. */
function clientIds(receiver: WebhookReceiver): string[] {
  return receiver.received.map((delivery) => String(delivery.event.client_id));
}

describe('webhook delivery', () => {
  let ctx: TestContext;
  const receivers: WebhookReceiver[] = [];
  async function receiver(): Promise<WebhookReceiver> {
    const started = await WebhookReceiver.start();
    receivers.push(started);
    return started;
  }
  before(async () => {
    ctx = await buildTestApp({ webhooks: FAST });
  });
  after(() => ctx.close());
  afterEach(async () => {
    const started = receivers.splice(0);
    for (const one of started) await one.close();
    for (const one of started) {
      assert.deepEqual(one.refused, [], 'the official verifier refused deliveries');
    }
  });

  it('POSTs each event, signed per Standard Webhooks, with the event as the API shows it', async () => {
    const target = await receiver();
    await createHook(ctx, target);
    await createApplications(ctx, 'signed', 3);
    // Delivery is at least once: on a loaded machine an attempt can outlast the 400 ms deadline
    // after the receiver took it, and the event comes again. Each event arrives, in order.
    await until('three events delivered', async () =>
      new Set(clientIds(target)).size >= 3 ? true : undefined,
    );
    assert.deepEqual([...new Set(clientIds(target))], ['signed-0', 'signed-1', 'signed-2']);
    const feed = await call(ctx, 'GET', '/events?type=application.created&client_id=signed-1');
    assert.equal(feed.statusCode, 200, feed.body);
    const [event] = feed.json<{ items: Record<string, unknown>[] }>().items;
    const delivered = target.received.find(
      (delivery) => String(delivery.event.client_id) === 'signed-1',
    )!;
    assert.deepEqual(delivered.event, event);
    assert.equal(delivered.id, event!.id);
    assert.match(delivered.signature, /^v1,[A-Za-z0-9+/]+={0,2}$/);
    assert.ok(Math.abs(Number(delivered.timestamp) - Date.now() / 1000) < 60);
  });

  it('delivers only the event types and applications a webhook asks for', async () => {
    const target = await receiver();
    await createHook(ctx, target, {
      event_types: ['application.updated'],
      client_ids: ['picky-1'],
    });
    await createApplications(ctx, 'picky', 3);
    for (const clientId of ['picky-0', 'picky-1', 'picky-2']) {
      const patched = await call(ctx, 'PATCH', `/applications/${clientId}`, {
        body: { description: 'changed' },
      });
      assert.equal(patched.statusCode, 200);
    }
    await target.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      target.received.map((delivery) => [delivery.event.type, delivery.event.client_id]),
      [['application.updated', 'picky-1']],
    );
  });

  it('retries a receiver that answers 500, then delivers everything in order', async () => {
    const target = await receiver();
    target.behaviour = (request) => (request < 4 ? 500 : 204);
    const hook = await createHook(ctx, target);
    await createApplications(ctx, 'flaky', 5);
    await target.waitFor(5);
    assert.deepEqual(clientIds(target), ['flaky-0', 'flaky-1', 'flaky-2', 'flaky-3', 'flaky-4']);
    const log = await until('the log of 5 deliveries', async () => {
      const items = await deliveries(ctx, hook.id);
      return items.length === 5 && items.every((d) => d.status === 'delivered') ? items : undefined;
    });
    const first = log.at(-1)!;
    assert.equal(first.status, 'delivered');
    assert.equal(first.attempts, 5);
    assert.deepEqual(
      first.log.map((attempt) => attempt.status_code),
      [500, 500, 500, 500, 204],
    );
  });

  it('retries a receiver that does not answer in time', async () => {
    const target = await receiver();
    target.behaviour = (request) => (request < 2 ? 'hang' : 200);
    const hook = await createHook(ctx, target);
    await createApplications(ctx, 'slow', 3);
    await target.waitFor(3);
    assert.deepEqual(clientIds(target), ['slow-0', 'slow-1', 'slow-2']);
    const first = await until('the first delivery logged', async () => {
      const oldest = (await deliveries(ctx, hook.id)).at(-1);
      return oldest?.status === 'delivered' ? oldest : undefined;
    });
    assert.equal(first.attempts, 3);
    assert.equal(first.log[0]!.status_code, null);
    assert.match(first.log[0]!.error ?? '', /no complete answer within 400 ms/);
  });

  it('retries a receiver that refuses connections until it listens again', async () => {
    // A port nobody listens on: the address of a server that was just closed.
    const placeholder = http.createServer().listen(0, '127.0.0.1');
    await once(placeholder, 'listening');
    const { port } = placeholder.address() as AddressInfo;
    placeholder.close();
    const url = `http://127.0.0.1:${port}/hook`;
    const secrets: string[] = [];
    const hook = await createHook(ctx, { url, secrets });
    await createApplications(ctx, 'refused', 3);
    const pending = await until('a refused attempt', async () => {
      const [head] = (await deliveries(ctx, hook.id)).filter((d) => d.status === 'pending');
      return head !== undefined && head.attempts >= 2 ? head : undefined;
    });
    assert.match(pending.log[0]!.error ?? '', /connection failed \(ECONNREFUSED\)/);
    assert.notEqual(pending.next_attempt_at, null);
    // The receiver comes up on that port.
    const received: string[] = [];
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        new Webhook(secrets[0]!).verify(body, request.headers as Record<string, string>);
        received.push((JSON.parse(body) as { client_id: string }).client_id);
        response.writeHead(204).end();
      });
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    try {
      await until('3 deliveries', async () => (received.length >= 3 ? true : undefined));
      assert.deepEqual(received, ['refused-0', 'refused-1', 'refused-2']);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('disables a webhook whose receiver answers 410, and resumes with that event when enabled', async () => {
    const target = await receiver();
    target.behaviour = (request) => (request === 1 ? 410 : 204);
    const hook = await createHook(ctx, target);
    await createApplications(ctx, 'gone', 3);
    const disabled = await until('the webhook disabled', async () => {
      const read = (await call(ctx, 'GET', `/webhooks/${hook.id}`)).json();
      return read.enabled === false ? read : undefined;
    });
    assert.equal(disabled.disabled_reason, 'gone');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(clientIds(target), ['gone-0']);
    assert.equal(target.requests, 2);
    const refused = (await deliveries(ctx, hook.id)).find((d) => d.status === 'failed');
    assert.equal(refused?.last_status_code, 410);
    // Tessera's own change is in the audit trail, made by the system.
    const feed = await call(ctx, 'GET', '/events?type=webhook.updated&limit=1000');
    const disabling = feed
      .json<{
        items: {
          actor: { type: string };
          resource: { id: { id: string } };
          changes: { member: string; after: unknown }[];
        }[];
      }>()
      .items.find((event) => event.resource.id.id === hook.id);
    assert.equal(disabling?.actor.type, 'system');
    assert.deepEqual(
      disabling?.changes.map((change) => [change.member, change.after]),
      [
        ['enabled', false],
        ['disabled_reason', 'gone'],
      ],
    );
    const enabled = await call(ctx, 'PATCH', `/webhooks/${hook.id}`, { body: { enabled: true } });
    assert.equal(enabled.json().disabled_reason, null);
    await target.waitFor(3);
    assert.deepEqual(clientIds(target), ['gone-0', 'gone-1', 'gone-2']);
  });

  it('gives up on an event after the retry period, marks it failed and goes on', async () => {
    const impatient = await buildTestApp({
      webhooks: {
        ...FAST,
        dispatcher: { ...FAST.dispatcher, retry: { ...FAST.dispatcher.retry, giveUpAfterMs: 250 } },
      },
    });
    const target = await receiver();
    target.behaviour = (request) => (request < 1_000 ? 503 : 204);
    try {
      const hook = await createHook(impatient, target);
      await createApplications(impatient, 'doomed', 2);
      const log = await until('both failed', async () => {
        const items = await deliveries(impatient, hook.id);
        return items.length === 2 && items.every((d) => d.status === 'failed') ? items : undefined;
      });
      assert.ok(log.every((delivery) => delivery.attempts >= 2));
      assert.ok(log.every((delivery) => delivery.next_attempt_at === null));
    } finally {
      await impatient.close();
    }
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const target = await receiver();
    const hook = await createHook(ctx, target);
    const rotated = await call(ctx, 'POST', `/webhooks/${hook.id}/rotate-secret`);
    assert.equal(rotated.statusCode, 200);
    // Verified with the old secret (kept in target.secrets) and the new one.
    target.secrets.push(rotated.json().secret);
    await createApplications(ctx, 'rotated', 1);
    await target.waitFor(1);
    assert.equal(target.received[0]!.signature.split(' ').length, 2);
  });

  it('replays every event after a given one, in order', async () => {
    const target = await receiver();
    const hook = await createHook(ctx, target);
    await createApplications(ctx, 'replayed', 3);
    await target.waitFor(3);
    const firstId = target.received[0]!.id;
    const replay = await call(ctx, 'POST', `/webhooks/${hook.id}/replay`, {
      body: { after: firstId },
    });
    assert.equal(replay.statusCode, 202);
    await target.waitFor(5);
    assert.deepEqual(clientIds(target), [
      'replayed-0',
      'replayed-1',
      'replayed-2',
      'replayed-1',
      'replayed-2',
    ]);
  });
});

describe('the outbound fence on deliveries', () => {
  it('refuses to deliver to a host that resolves to a private address', async () => {
    const ctx = await buildTestApp({ webhooks: { ...FAST, allowInsecure: false } });
    try {
      const hook = await createHook(ctx, { url: 'https://localhost:1/hook' });
      await createApplication(ctx, { client_id: 'fenced' });
      const pending = await until('a fenced attempt', async () => {
        const [head] = await deliveries(ctx, hook.id);
        return head;
      });
      assert.equal(pending.log[0]!.status_code, null);
      assert.match(pending.log[0]!.error ?? '', /resolves to a non-public address/);
    } finally {
      await ctx.close();
    }
  });
});
