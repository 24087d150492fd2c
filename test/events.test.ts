// tessera-test: both-stores
// The audit trail over HTTP: every write of the API records exactly its events, with the
// caller as actor and the request id; failed writes record none; GET /events reads them with
// filters, `after` pages and the `wait` long poll.

import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  buildTestApp,
  call,
  createApplication,
  createUser,
  type TestContext,
  problemOf,
  userPath,
} from './helpers.js';

interface Event {
  id: string;
  type: string;
  occurred_at: string;
  actor: { type: string; id: string | null };
  client_id: string | null;
  resource: { type: string; id: Record<string, unknown> };
  changes: { member: string; before: unknown; after: unknown }[] | null;
  request_id: string | null;
}

let ctx: TestContext;
let adminKeyId: string;
before(async () => {
  ctx = await buildTestApp();
  const keys = await call(ctx, 'GET', '/api-keys');
  adminKeyId = keys
    .json<{ items: { id: string; name: string }[] }>()
    .items.find((key) => key.name === 'admin')!.id;
});
after(() => ctx.close());

/** The id of the newest event, so each test reads only what it caused. */
let mark: string | null = null;
beforeEach(async () => {
  mark = await ctx.store.events.lastEventId();
});

async function feed(query = '', key?: string): Promise<Event[]> {
  const separator = query === '' ? '' : '&';
  const response = await call(
    ctx,
    'GET',
    `/events?limit=1000${mark === null ? '' : `&after=${mark}`}${separator}${query}`,
    key === undefined ? {} : { key },
  );
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ items: Event[] }>().items;
}

const typesOf = (events: Event[]) => events.map((event) => event.type);

let counter = 0;
const fresh = () => `events-app-${++counter}`;

describe('events of application writes', () => {
  it('records create, update (with trust_changed) and delete with the key and request id', async () => {
    const clientId = fresh();
    const created = await call(ctx, 'POST', '/applications', {
      body: { client_id: clientId, display_name: 'Billing', description: '' },
      headers: { 'x-request-id': 'req-create-1' },
    });
    assert.equal(created.statusCode, 201);
    await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { display_name: 'Billing 2', mode: 'external' },
    });
    await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { description: 'only this' } });
    await createUser(ctx, clientId);
    const deleted = await call(ctx, 'DELETE', `/applications/${clientId}`);
    assert.equal(deleted.statusCode, 204);

    const events = await feed();
    assert.deepEqual(typesOf(events), [
      'application.created',
      'application.updated',
      'application.trust_changed',
      'application.updated',
      'user.created',
      'application.deleted',
    ]);
    const [create, update, trust, , , remove] = events;
    assert.deepEqual(create!.actor, { type: 'api_key', id: adminKeyId });
    assert.equal(create!.request_id, 'req-create-1');
    assert.equal(create!.client_id, clientId);
    assert.deepEqual(create!.resource, { type: 'application', id: { client_id: clientId } });
    assert.deepEqual(
      create!.changes!.find((change) => change.member === 'display_name'),
      { member: 'display_name', before: null, after: 'Billing' },
    );
    assert.deepEqual(update!.changes, [
      { member: 'display_name', before: 'Billing', after: 'Billing 2' },
      { member: 'mode', before: 'internal', after: 'external' },
    ]);
    assert.deepEqual(trust!.changes, [{ member: 'mode', before: 'internal', after: 'external' }]);
    // One event for the cascade: the users it removed are not listed one by one.
    assert.equal(remove!.changes!.find((c) => c.member === 'display_name')!.after, null);
    assert.ok(events.every((event, index) => index === 0 || event.id > events[index - 1]!.id));
    assert.match(create!.occurred_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('records nothing for a write that fails or changes nothing (409, 412, 400, 404, no-op)', async () => {
    const clientId = fresh();
    await createApplication(ctx, { client_id: clientId });
    mark = await ctx.store.events.lastEventId();
    const conflict = await call(ctx, 'POST', '/applications', {
      body: { client_id: clientId, display_name: 'Again', description: '' },
    });
    problemOf(conflict, 409);
    const stale = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { display_name: 'Changed' },
      headers: { 'if-match': '"stale"' },
    });
    problemOf(stale, 412);
    const invalid = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { jwt_expiration_in_minutes: 0 },
    });
    problemOf(invalid, 400);
    problemOf(await call(ctx, 'DELETE', '/applications/no-such-app'), 404);
    const same = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { display_name: 'Billing' },
    });
    assert.equal(same.statusCode, 200);
    assert.deepEqual(await feed(), []);
  });
});

describe('events of user writes', () => {
  it('records create, replace, patch and delete with before and after of what changed', async () => {
    const clientId = fresh();
    await createApplication(ctx, { client_id: clientId });
    const user = await createUser(ctx, clientId, { identifier: 'ada', roles: ['reader'] });
    const path = userPath(clientId, 'google_oauth2', 'ada');
    const patched = await call(ctx, 'PATCH', path, { body: { roles: ['reader', 'admin'] } });
    assert.equal(patched.statusCode, 200);
    const deleted = await call(ctx, 'DELETE', path);
    assert.equal(deleted.statusCode, 204);
    const events = (await feed()).filter((event) => event.resource.type === 'user');
    assert.deepEqual(typesOf(events), ['user.created', 'user.updated', 'user.deleted']);
    assert.deepEqual(events[0]!.resource.id, {
      id: user.id,
      provider: 'google_oauth2',
      identifier: 'ada',
    });
    assert.deepEqual(events[1]!.changes, [
      { member: 'roles', before: ['reader'], after: ['reader', 'admin'] },
    ]);
    assert.equal(events[2]!.changes!.find((c) => c.member === 'email')!.after, null);
  });

  it('records nothing for a duplicate user or a stale If-Match', async () => {
    const clientId = fresh();
    await createApplication(ctx, { client_id: clientId });
    await createUser(ctx, clientId, { identifier: 'bob' });
    mark = await ctx.store.events.lastEventId();
    problemOf(
      await call(ctx, 'POST', `/applications/${clientId}/users`, {
        body: {
          identifier: 'bob',
          provider: 'google_oauth2',
          name: 'Bob',
          email: 'bob@example.com',
          locale: 'en',
          roles: [],
          scopes: [],
        },
      }),
      409,
    );
    problemOf(
      await call(ctx, 'DELETE', userPath(clientId, 'google_oauth2', 'bob'), {
        headers: { 'if-match': '"old"' },
      }),
      412,
    );
    assert.deepEqual(await feed(), []);
  });
});

describe('events of API key writes', () => {
  it('records created, rotated and revoked, never a secret or its digest', async () => {
    const created = await call(ctx, 'POST', '/api-keys', {
      body: { name: 'ci', roles: ['users:read'], applications: null, expires_at: null },
    });
    assert.equal(created.statusCode, 201);
    const { id, key } = created.json<{ id: string; key: string }>();
    const rotated = await call(ctx, 'POST', `/api-keys/${id}/rotate`, {
      body: { previous_valid_for_seconds: 60 },
    });
    assert.equal(rotated.statusCode, 200);
    const newSecret = rotated.json<{ key: string }>().key;
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${id}`)).statusCode, 204);
    const events = await feed('resource_type=api_key');
    assert.deepEqual(typesOf(events), ['api_key.created', 'api_key.rotated', 'api_key.revoked']);
    assert.ok(events.every((event) => event.resource.id.id === id && event.client_id === null));
    assert.deepEqual(
      events[1]!.changes!.map((change) => change.member),
      ['previous_expires_at'],
    );
    const text = JSON.stringify(events);
    for (const secret of [key, newSecret]) assert.ok(!text.includes(secret));
    const stored = await ctx.store.apiKeys.findApiKey(id);
    assert.ok(!text.includes(stored!.secretDigest));
    assert.ok(!text.includes(stored!.previousSecretDigest!));
    assert.ok(!/digest|secret/i.test(text), text);
  });
});

describe('events of signing key writes', () => {
  it('records an emergency revoke as signing_key.revoked by the calling key, with no key material', async () => {
    await ctx.services.signingKeys.currentSigner();
    const [active] = (await ctx.services.signingKeys.listSigningKeys()).filter(
      (key) => key.state === 'active',
    );
    const revoked = await call(ctx, 'POST', `/signing-keys/${active!.kid}/revoke`);
    assert.ok(revoked.statusCode < 300, revoked.body);
    const events = (await feed('resource_type=signing_key')).filter(
      (event) => event.type === 'signing_key.revoked',
    );
    assert.equal(events.length, 1);
    assert.ok(JSON.stringify(events[0]!.resource.id).includes(active!.kid));
    assert.equal(events[0]!.actor.type, 'api_key');
    assert.ok(!/"d"|private|pem/i.test(JSON.stringify(events)), JSON.stringify(events));
  });
});

describe('GET /events', () => {
  it('filters by type (with wildcards), client_id, actor_id and time, and pages with after', async () => {
    const [a, b] = [fresh(), fresh()];
    await createApplication(ctx, { client_id: a });
    await createApplication(ctx, { client_id: b });
    await createUser(ctx, a, { identifier: 'u1' });
    await createUser(ctx, b, { identifier: 'u2' });
    assert.deepEqual(typesOf(await feed('type=user.*')), ['user.created', 'user.created']);
    assert.deepEqual(typesOf(await feed('type=application.created,user.*')).length, 4);
    assert.deepEqual(typesOf(await feed(`client_id=${b}`)), [
      'application.created',
      'user.created',
    ]);
    assert.equal((await feed(`actor_id=${adminKeyId}`)).length, 4);
    assert.deepEqual(await feed('actor_id=nobody'), []);
    assert.equal((await feed('since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z')).length, 4);
    assert.deepEqual(await feed('until=2000-01-01T00:00:00Z'), []);

    const pages: Event[][] = [];
    let cursor = mark;
    for (;;) {
      const response = await call(ctx, 'GET', `/events?limit=3&after=${cursor}`);
      const page = response.json<{ items: Event[]; next_after: string }>();
      if (page.items.length === 0) {
        assert.equal(page.next_after, cursor, 'an empty page hands the same position back');
        break;
      }
      pages.push(page.items);
      cursor = page.next_after;
    }
    assert.deepEqual(
      pages.map((page) => page.length),
      [3, 1],
    );
  });

  it('shows a restricted key only the events of its applications', async () => {
    const [mine, theirs] = [fresh(), fresh()];
    await createApplication(ctx, { client_id: mine });
    await createApplication(ctx, { client_id: theirs });
    const restricted = await ctx.createKey({ roles: ['events:read'], applications: [mine] });
    const seen = await feed('', restricted);
    assert.deepEqual(
      seen.map((event) => event.client_id),
      [mine],
    );
    problemOf(await call(ctx, 'GET', `/events?client_id=${theirs}`, { key: restricted }), 403);
  });

  it('needs events:read', async () => {
    const key = await ctx.createKey({ roles: ['applications:read'] });
    problemOf(await call(ctx, 'GET', '/events', { key }), 403);
  });

  it('refuses bad filters with a problem naming the parameter', async () => {
    for (const query of [
      'type=user',
      'type=user.*,',
      'after=abc',
      'after=12345678901234567',
      'wait=0',
      'wait=31',
      'limit=0',
      'since=yesterday',
      'resource_type=group',
      'unknown=1',
      // PostgreSQL refuses a NUL in a query's text: a 400 here, never a 500 from the store.
      'actor_id=%00',
      'actor_id=a%0Ab',
      'client_id=%00',
      'client_id=no%20spaces',
    ]) {
      const problem = problemOf(await call(ctx, 'GET', `/events?${query}`), 400);
      assert.ok(problem.errors?.length, query);
    }
  });

  it('with wait, answers as soon as an event commits', async () => {
    const last = await ctx.store.events.lastEventId();
    const waiting = call(ctx, 'GET', `/events?wait=10&after=${last}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const clientId = fresh();
    await createApplication(ctx, { client_id: clientId });
    const started = Date.now();
    const response = await waiting;
    assert.ok(Date.now() - started < 2000);
    assert.deepEqual(
      response.json<{ items: Event[] }>().items.map((event) => event.client_id),
      [clientId],
    );
  });

  it('with wait and nothing new, answers an empty page after the wait', async () => {
    const last = await ctx.store.events.lastEventId();
    const started = Date.now();
    const response = await call(ctx, 'GET', `/events?wait=1&after=${last}&type=webhook.*`);
    assert.ok(Date.now() - started >= 900);
    assert.deepEqual(response.json<{ items: Event[] }>(), { items: [], next_after: last });
  });
});

describe('retention', () => {
  it('prunes the events older than IAM_EVENT_RETENTION_DAYS, and only those', async () => {
    const clientId = fresh();
    await createApplication(ctx, { client_id: clientId });
    ctx.clock.advance(91 * 86_400_000);
    const recent = fresh();
    await createApplication(ctx, { client_id: recent });
    assert.ok((await ctx.services.events.pruneEvents(90)) >= 1);
    const left = await feed();
    assert.deepEqual(
      left.map((event) => event.client_id),
      [recent],
    );
    const all = await call(ctx, 'GET', '/events?limit=1000');
    const times = all.json<{ items: Event[] }>().items.map((e) => Date.parse(e.occurred_at));
    assert.ok(times.every((time) => time >= ctx.clock.now() - 90 * 86_400_000));
  });
});

describe('retention of the webhook delivery log', () => {
  it('prunes deliveries last attempted before IAM_EVENT_RETENTION_DAYS in the background, keeping pending ones', async () => {
    const { webhooks } = ctx.store;
    const id = `wh-retention-${Date.now()}`;
    const at = ctx.clock.now();
    await webhooks.insertWebhook(
      {
        id,
        url: 'https://hooks.example/retention',
        eventTypes: ['user.*'],
        clientIds: null,
        description: '',
        enabled: true,
        disabledReason: null,
        secret: 'whsec_retention',
        previousSecret: null,
        previousSecretExpiresAt: null,
        createdAt: at,
        updatedAt: at,
        etag: 'e1',
      },
      null,
      [],
    );
    // Held by a test owner for good: the app's dispatcher leaves this webhook alone.
    assert.ok(await webhooks.claimWebhook(id, 'test', at, Number.MAX_SAFE_INTEGER));
    const delivery = (eventId: string, status: 'delivered' | 'failed' | 'pending') => ({
      webhookId: id,
      eventId,
      eventType: 'user.created',
      status,
      attempts: 1,
      firstAttemptAt: at,
      lastAttemptAt: at,
      nextAttemptAt: status === 'pending' ? at + 5000 : null,
      log: [{ at, statusCode: status === 'delivered' ? 204 : 500, error: null, durationMs: 1 }],
    });
    await webhooks.recordDeliveries(id, 'test', 0, {
      deliveries: [
        delivery('00000000000000000001', 'delivered'),
        delivery('00000000000000000002', 'failed'),
        delivery('00000000000000000003', 'pending'),
      ],
      cursor: '00000000000000000002',
    });
    ctx.clock.advance(91 * 86_400_000);
    const errors: unknown[] = [];
    const stop = ctx.services.events.prunePeriodically(90, (error) => errors.push(error));
    try {
      const deadline = Date.now() + 10_000;
      while ((await webhooks.countDeliveries({ webhookId: id, status: null })) > 1) {
        assert.ok(Date.now() < deadline, 'the background pruning removed the old deliveries');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      stop();
    }
    assert.deepEqual(errors, []);
    const left = await webhooks.listDeliveries(
      { webhookId: id, status: null },
      { after: null, limit: 10 },
    );
    assert.deepEqual(
      left.map((d) => [d.eventId, d.status]),
      [['00000000000000000003', 'pending']],
    );
  });
});

describe('access log (IAM_ACCESS_LOG)', () => {
  it('writes one info line per request: route pattern, status, duration, request id, address, key id', async () => {
    const logged = await buildTestApp({ accessLog: true, logLevel: 'info' });
    try {
      const keyId = (
        await logged.services.apiKeys.listApiKeys('operator', { includeRevoked: false }, null, 10)
      )[0]!.id;
      const response = await call(logged, 'GET', '/applications/secret-app-name', {
        headers: { 'x-request-id': 'access-1' },
      });
      assert.equal(response.statusCode, 404);
      await call(logged, 'GET', '/applications', { key: 'tsr_wrong' });
      const lines = logged.logs.filter((line) => line.msg === 'request');
      assert.equal(lines.length, 2);
      const [found, refused] = lines;
      assert.equal(found!.level, 30);
      assert.equal(found!.method, 'GET');
      assert.equal(found!.route, '/iam/api/v1/applications/:client_id');
      assert.equal(found!.status, 404);
      assert.equal(found!.request_id, 'access-1');
      assert.ok(!('reqId' in found!), 'the request id is in the line once');
      assert.equal(found!.client_address, '127.0.0.1');
      assert.equal(found!.api_key_id, keyId);
      assert.equal(typeof found!.duration_ms, 'number');
      assert.ok(!JSON.stringify(lines).includes('secret-app-name'), 'the path is not logged');
      assert.equal(refused!.status, 401);
      assert.equal(
        refused!.client_address,
        '127.0.0.1',
        'a refused key is logged with its address',
      );
      assert.equal(refused!.api_key_id, null);
    } finally {
      await logged.close();
    }
  });

  it('is off when not asked for', async () => {
    await call(ctx, 'GET', '/applications');
    assert.ok(!ctx.logs.some((line) => line.msg === 'request'));
  });
});
