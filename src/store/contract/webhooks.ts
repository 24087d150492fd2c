import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRecord, WebhookRecord } from '../webhook-records.js';
import { T0, type ContractContext, applicationRecord } from './fixtures.js';

function webhook(id: string, overrides: Partial<WebhookRecord> = {}): WebhookRecord {
  return {
    id,
    url: `https://hooks.example/${id}`,
    eventTypes: ['user.*'],
    clientIds: null,
    description: '',
    enabled: true,
    disabledReason: null,
    secret: `whsec_${id}`,
    previousSecret: null,
    previousSecretExpiresAt: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `${id}-1`,
    ...overrides,
  };
}

function delivery(eventId: string, overrides: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    webhookId: 'w1',
    eventId,
    eventType: 'user.created',
    status: 'delivered',
    attempts: 1,
    firstAttemptAt: T0,
    lastAttemptAt: T0,
    nextAttemptAt: null,
    log: [{ at: T0, statusCode: 204, error: null, durationMs: 3 }],
    ...overrides,
  };
}

export function describeWebhooksContract(ctx: ContractContext): void {
  describe('webhooks', () => {
    it('stores, lists, replaces and deletes webhooks', async () => {
      const { webhooks } = ctx.store;
      const second = webhook('w2', { clientIds: ['app-a', 'app-b'], description: 'ü 請 😀' });
      await webhooks.insertWebhook(second, null, []);
      await webhooks.insertWebhook(webhook('w1'), '00000000000000000007', []);
      assert.deepEqual(await webhooks.findWebhook('w2'), second);
      assert.equal(await webhooks.findWebhook('w9'), undefined);
      const all = await webhooks.listWebhooks(
        { visibleClientIds: null },
        { after: null, limit: 10 },
      );
      assert.deepEqual(
        all.map((w) => w.id),
        ['w1', 'w2'],
      );
      assert.deepEqual(
        (await webhooks.listWebhooks({ visibleClientIds: null }, { after: 'w1', limit: 10 })).map(
          (w) => w.id,
        ),
        ['w2'],
      );
      // A restricted reader sees only webhooks confined to its applications.
      const restricted = { visibleClientIds: ['app-a', 'app-b', 'app-c'] };
      assert.deepEqual(
        (await webhooks.listWebhooks(restricted, { after: null, limit: 10 })).map((w) => w.id),
        ['w2'],
      );
      assert.equal(await webhooks.countWebhooks(restricted), 1);
      assert.equal(await webhooks.countWebhooks({ visibleClientIds: ['app-a'] }), 0);
      assert.equal(await webhooks.countWebhooks({ visibleClientIds: null }), 2);

      const changed = { ...second, enabled: false, etag: 'w2-2', updatedAt: T0 + 5 };
      assert.equal(await webhooks.replaceWebhook(changed, 'stale', []), false);
      assert.equal(await webhooks.replaceWebhook(changed, 'w2-1', []), true);
      assert.deepEqual(await webhooks.findWebhook('w2'), changed);
      assert.deepEqual(await webhooks.listWebhookStates(), [
        { id: 'w1', cursor: '00000000000000000007', leaseOwner: null, leaseUntil: null },
      ]);

      assert.equal(await webhooks.deleteWebhook('w2', 'w2-1', []), false);
      assert.equal(await webhooks.deleteWebhook('w2', 'w2-2', []), true);
      assert.equal(await webhooks.findWebhook('w2'), undefined);
    });

    it('leases a webhook to one owner at a time, until the lease expires', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), '00000000000000000003', []);
      const first = await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      assert.deepEqual(await webhooks.listWebhookStates(), [
        { id: 'w1', cursor: '00000000000000000003', leaseOwner: 'a', leaseUntil: T0 + 30_000 },
      ]);
      assert.deepEqual(first, { webhookId: 'w1', cursor: '00000000000000000003', generation: 0 });
      assert.equal(await webhooks.claimWebhook('w1', 'b', T0 + 1000, T0 + 31_000), undefined);
      // The holder renews its own lease.
      assert.notEqual(await webhooks.claimWebhook('w1', 'a', T0 + 1000, T0 + 40_000), undefined);
      assert.equal(await webhooks.claimWebhook('w1', 'b', T0 + 39_999, T0 + 60_000), undefined);
      // Expired: another owner takes it, and the first can no longer record anything.
      assert.notEqual(await webhooks.claimWebhook('w1', 'b', T0 + 40_001, T0 + 70_000), undefined);
      const lost = await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivery('00000000000000000004')],
        cursor: '00000000000000000004',
      });
      assert.equal(lost, false);
      assert.deepEqual(
        await webhooks.listDeliveries(
          { webhookId: 'w1', status: null },
          { after: null, limit: 10 },
        ),
        [],
      );
      await webhooks.releaseWebhook('w1', 'b');
      assert.notEqual(await webhooks.claimWebhook('w1', 'c', T0 + 40_002, T0 + 70_000), undefined);
      // A disabled webhook is never leased.
      await webhooks.insertWebhook(webhook('w2', { enabled: false }), null, []);
      assert.equal(await webhooks.claimWebhook('w2', 'a', T0, T0 + 1), undefined);
    });

    it('records deliveries and moves the cursor in one write, while the lease holds', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), null, []);
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      const pending = delivery('00000000000000000002', {
        status: 'pending',
        nextAttemptAt: T0 + 5000,
        log: [{ at: T0, statusCode: 500, error: 'HTTP 500', durationMs: 2 }],
      });
      assert.equal(
        await webhooks.recordDeliveries('w1', 'a', 0, {
          deliveries: [delivery('00000000000000000001'), pending],
          cursor: '00000000000000000001',
        }),
        true,
      );
      assert.deepEqual(await webhooks.findPendingDelivery('w1', '00000000000000000001'), pending);
      const delivered = { ...pending, status: 'delivered' as const, attempts: 2 };
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivered],
        cursor: '00000000000000000002',
      });
      assert.equal(await webhooks.findPendingDelivery('w1', null), undefined);
      assert.deepEqual(
        await webhooks.listDeliveries(
          { webhookId: 'w1', status: null },
          { after: null, limit: 10 },
        ),
        [delivered, delivery('00000000000000000001')],
      );
      assert.deepEqual(
        await webhooks.listDeliveries(
          { webhookId: 'w1', status: 'delivered' },
          { after: '00000000000000000002', limit: 10 },
        ),
        [delivery('00000000000000000001')],
      );
      assert.equal(await webhooks.countDeliveries({ webhookId: 'w1', status: 'failed' }), 0);
      assert.deepEqual(await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000), {
        webhookId: 'w1',
        cursor: '00000000000000000002',
        generation: 0,
      });
    });

    it('disables a webhook with its reason when asked by the holder', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), null, []);
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivery('00000000000000000001', { status: 'failed' })],
        cursor: null,
        disable: { reason: 'gone', at: T0 + 9, etag: 'w1-2', events: [] },
      });
      const stored = await webhooks.findWebhook('w1');
      assert.deepEqual(stored, {
        ...webhook('w1'),
        enabled: false,
        disabledReason: 'gone',
        updatedAt: T0 + 9,
        etag: 'w1-2',
      });
      assert.deepEqual(await webhooks.listWebhookStates(), []);
    });

    it('replays from an event: a new generation, pending deliveries dropped', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), null, []);
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivery('00000000000000000005', { status: 'pending' })],
        cursor: '00000000000000000004',
      });
      assert.equal(await webhooks.replayWebhook('w1', '00000000000000000001'), true);
      assert.equal(await webhooks.replayWebhook('w9', null), false);
      assert.equal(await webhooks.findPendingDelivery('w1', null), undefined);
      // The holder read generation 0: its writes are refused now.
      assert.equal(
        await webhooks.recordDeliveries('w1', 'a', 0, { deliveries: [], cursor: '9' }),
        false,
      );
      assert.deepEqual(await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000), {
        webhookId: 'w1',
        cursor: '00000000000000000001',
        generation: 1,
      });
    });

    it('prunes delivered and failed deliveries last attempted before a time, never pending ones', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), null, []);
      await webhooks.insertWebhook(webhook('w2'), null, []);
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      await webhooks.claimWebhook('w2', 'a', T0, T0 + 30_000);
      const at = (n: number) => ({ firstAttemptAt: T0 + n, lastAttemptAt: T0 + n });
      const id = (n: number) => String(n).padStart(20, '0');
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: Array.from({ length: 12 }, (_, n) => delivery(id(n + 1), at(n))),
        cursor: id(12),
      });
      await webhooks.recordDeliveries('w2', 'a', 0, {
        deliveries: [
          delivery(id(1), { ...at(1), webhookId: 'w2', status: 'failed' }),
          delivery(id(2), { ...at(2), webhookId: 'w2', status: 'pending', nextAttemptAt: T0 + 9 }),
          delivery(id(3), { ...at(50), webhookId: 'w2' }),
        ],
        cursor: id(1),
      });
      // Before T0 + 10: w1's first ten and w2's failed one (not its pending one), in batches.
      assert.equal(await webhooks.pruneDeliveries(T0 + 10, 6), 6);
      assert.equal(await webhooks.pruneDeliveries(T0 + 10, 6), 5);
      assert.equal(await webhooks.pruneDeliveries(T0 + 10, 6), 0);
      const left = async (webhookId: string) =>
        (await webhooks.listDeliveries({ webhookId, status: null }, { after: null, limit: 100 }))
          .map((d) => `${d.eventId.slice(-2)} ${d.status}`)
          .reverse();
      assert.deepEqual(await left('w1'), ['11 delivered', '12 delivered']);
      assert.deepEqual(await left('w2'), ['02 pending', '03 delivered']);
      assert.equal(await webhooks.pruneDeliveries(T0 + 1000, 100), 3);
      assert.deepEqual(await left('w2'), ['02 pending']);
    });

    it('deletes the delivery log with the webhook', async () => {
      const { webhooks } = ctx.store;
      await webhooks.insertWebhook(webhook('w1'), null, []);
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivery('00000000000000000001')],
        cursor: '00000000000000000001',
      });
      await webhooks.deleteWebhook('w1', 'w1-1', []);
      await webhooks.insertWebhook(webhook('w1'), null, []);
      assert.equal(await webhooks.countDeliveries({ webhookId: 'w1', status: null }), 0);
    });

    it('measures how far the enabled webhooks are behind the feed', async () => {
      const { webhooks, applications, events } = ctx.store;
      assert.deepEqual(await webhooks.measureBacklog(), { events: 0, oldestEventAt: null });
      const changes = Array.from({ length: 5 }, (_, index) => ({
        type: 'application.updated',
        occurredAt: T0 + 1000 * index,
        actor: { type: 'cli' as const, id: null },
        clientId: 'billing',
        resource: { type: 'application' as const, id: { client_id: 'billing' } },
        changes: null,
        requestId: null,
      }));
      await applications.insertApplication(applicationRecord('billing'), changes);
      const ids = (
        await events.listEvents(
          {
            types: null,
            clientId: null,
            actorId: null,
            resourceType: null,
            since: null,
            until: null,
            visibleClientIds: null,
          },
          { after: null, limit: 10 },
        )
      ).map((event) => event.id);
      // w1 has dealt with two events (three behind), w2 with every one, w3 is disabled.
      await webhooks.insertWebhook(webhook('w1'), ids[1]!, []);
      await webhooks.insertWebhook(webhook('w2'), ids[4]!, []);
      await webhooks.insertWebhook(webhook('w3', { enabled: false }), null, []);
      assert.deepEqual(await webhooks.measureBacklog(), { events: 3, oldestEventAt: T0 + 2000 });
      await webhooks.insertWebhook(webhook('w4'), null, []);
      assert.deepEqual(await webhooks.measureBacklog(), { events: 8, oldestEventAt: T0 });
    });

    it('tells how a webhook is doing: its latest attempt, failing since when, events behind', async () => {
      const { webhooks, applications, events } = ctx.store;
      assert.equal(await webhooks.findWebhookHealth('missing'), undefined);
      const changes = Array.from({ length: 4 }, (_, index) => ({
        type: 'application.updated',
        occurredAt: T0 + 1000 * index,
        actor: { type: 'cli' as const, id: null },
        clientId: 'billing',
        resource: { type: 'application' as const, id: { client_id: 'billing' } },
        changes: null,
        requestId: null,
      }));
      await applications.insertApplication(applicationRecord('billing'), changes);
      const last = (await events.lastEventId())!;
      const first = String(Number(last) - 3).padStart(last.length, '0');
      const second = String(Number(last) - 2).padStart(last.length, '0');
      await webhooks.insertWebhook(webhook('w1'), first, []);
      assert.deepEqual(await webhooks.findWebhookHealth('w1'), {
        lastAttempt: null,
        failingSince: null,
        eventsBehind: 3,
      });
      await webhooks.claimWebhook('w1', 'a', T0, T0 + 30_000);
      const failing = delivery(second, {
        status: 'pending',
        attempts: 2,
        firstAttemptAt: T0 + 100,
        lastAttemptAt: T0 + 200,
        nextAttemptAt: T0 + 5000,
        log: [
          { at: T0 + 100, statusCode: null, error: 'connection refused', durationMs: 1 },
          { at: T0 + 200, statusCode: 503, error: 'HTTP 503', durationMs: 4 },
        ],
      });
      await webhooks.recordDeliveries('w1', 'a', 0, {
        deliveries: [delivery(first), failing],
        cursor: first,
      });
      assert.deepEqual(await webhooks.findWebhookHealth('w1'), {
        lastAttempt: {
          at: T0 + 200,
          statusCode: 503,
          error: 'HTTP 503',
          durationMs: 4,
          eventId: second,
          status: 'pending',
        },
        failingSince: T0 + 100,
        eventsBehind: 3,
      });
      const delivered = {
        ...failing,
        status: 'delivered' as const,
        attempts: 3,
        log: [...failing.log, { at: T0 + 300, statusCode: 200, error: null, durationMs: 2 }],
      };
      await webhooks.recordDeliveries('w1', 'a', 0, { deliveries: [delivered], cursor: second });
      assert.deepEqual(await webhooks.findWebhookHealth('w1'), {
        lastAttempt: {
          at: T0 + 300,
          statusCode: 200,
          error: null,
          durationMs: 2,
          eventId: second,
          status: 'delivered',
        },
        failingSince: null,
        eventsBehind: 2,
      });
    });
  });
}
