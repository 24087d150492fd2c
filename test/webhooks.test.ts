// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, call, problemOf, type TestContext } from './helpers.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const FIELDS =
  'client_ids created_at description disabled_reason enabled event_types id previous_secret_expires_at updated_at url'.split(
    ' ',
  );

function hookBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { url: 'https://hooks.example.com/tessera', event_types: ['user.*'], ...overrides };
}

describe('webhooks API', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
  });
  after(() => ctx.close());

  it('creates a webhook, answering its secret once, and reads it back without it', async () => {
    const created = await call(ctx, 'POST', '/webhooks', {
      body: hookBody({ client_ids: ['billing-web'], description: 'CRM sync' }),
    });
    assert.equal(created.statusCode, 201);
    const body = created.json();
    assert.match(body.secret, SECRET);
    assert.equal(created.headers.location, `/iam/api/v1/webhooks/${body.id}`);
    assert.equal(created.headers['cache-control'], 'no-store');
    assert.deepEqual(Object.keys(body).sort(), [...FIELDS, 'secret'].sort());
    assert.deepEqual(
      {
        url: body.url,
        event_types: body.event_types,
        client_ids: body.client_ids,
        enabled: body.enabled,
        disabled_reason: body.disabled_reason,
        previous_secret_expires_at: body.previous_secret_expires_at,
      },
      {
        url: 'https://hooks.example.com/tessera',
        event_types: ['user.*'],
        client_ids: ['billing-web'],
        enabled: true,
        disabled_reason: null,
        previous_secret_expires_at: null,
      },
    );
    const read = await call(ctx, 'GET', `/webhooks/${body.id}`);
    assert.equal(read.statusCode, 200);
    assert.deepEqual(Object.keys(read.json()).sort(), FIELDS);
    assert.equal(read.body.includes(body.secret), false);
    assert.equal(read.headers.etag, created.headers.etag);
    const listed = await call(ctx, 'GET', '/webhooks');
    assert.ok(listed.json().items.some((item: { id: string }) => item.id === body.id));
    assert.equal(listed.body.includes('whsec_'), false);
  });

  it('refuses bad bodies with problem documents and creates nothing', async () => {
    const before = (await call(ctx, 'GET', '/webhooks?include_total=true')).json().total;
    const cases: [Record<string, unknown>, string][] = [
      [hookBody({ url: 'ftp://hooks.example.com/x' }), '/url'],
      [hookBody({ url: 'https://127.0.0.1/hook' }), '/url'],
      [hookBody({ url: 'https://[::1]/hook' }), '/url'],
      [hookBody({ url: 'http://hooks.example.com/hook' }), '/url'],
      [hookBody({ url: 'https://user:pw@hooks.example.com/hook' }), '/url'],
      [hookBody({ event_types: [] }), '/event_types'],
      [hookBody({ event_types: ['user.*', 'user.*'] }), '/event_types'],
      [hookBody({ event_types: ['User.Created'] }), '/event_types/0'],
      [hookBody({ client_ids: [] }), '/client_ids'],
      [hookBody({ secret: 'whsec_mine' }), '/secret'],
      [{ event_types: ['user.*'] }, '/url'],
    ];
    for (const [body, pointer] of cases) {
      const response = await call(ctx, 'POST', '/webhooks', { body });
      const problem = problemOf(response, 400);
      assert.ok(
        problem.errors?.some((error: { pointer?: string }) => error.pointer === pointer),
        `${JSON.stringify(body)} → ${response.body}`,
      );
    }
    assert.equal((await call(ctx, 'GET', '/webhooks?include_total=true')).json().total, before);
  });

  it('patches with merge-patch semantics, honouring If-Match', async () => {
    const { id } = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    const stale = await call(ctx, 'PATCH', `/webhooks/${id}`, {
      body: { enabled: false },
      headers: { 'if-match': '"nope"' },
    });
    assert.equal(stale.statusCode, 412);
    const patched = await call(ctx, 'PATCH', `/webhooks/${id}`, {
      body: { enabled: false, description: 'paused', event_types: ['application.*', '*'] },
    });
    assert.equal(patched.statusCode, 200);
    assert.deepEqual(
      [patched.json().enabled, patched.json().description, patched.json().event_types],
      [false, 'paused', ['application.*', '*']],
    );
    const reset = await call(ctx, 'PATCH', `/webhooks/${id}`, {
      body: { enabled: null, description: null },
    });
    assert.deepEqual([reset.json().enabled, reset.json().description], [true, '']);
    // A body from a GET can be sent back unchanged: nothing changes.
    const echoed = await call(ctx, 'PATCH', `/webhooks/${id}`, { body: reset.json() });
    assert.equal(echoed.statusCode, 200);
    assert.equal(echoed.headers.etag, reset.headers.etag);
  });

  it('rotates the secret: a new one, the previous one signing for 24 hours', async () => {
    const created = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    const rotated = await call(ctx, 'POST', `/webhooks/${created.id}/rotate-secret`);
    assert.equal(rotated.statusCode, 200);
    assert.match(rotated.json().secret, SECRET);
    assert.notEqual(rotated.json().secret, created.secret);
    const expires = Date.parse(rotated.json().previous_secret_expires_at);
    assert.equal(expires - ctx.clock.now(), 24 * 3_600_000);
  });

  it('deletes a webhook (404 afterwards)', async () => {
    const { id } = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    assert.equal((await call(ctx, 'DELETE', `/webhooks/${id}`)).statusCode, 204);
    assert.equal((await call(ctx, 'GET', `/webhooks/${id}`)).statusCode, 404);
    assert.equal((await call(ctx, 'DELETE', `/webhooks/${id}`)).statusCode, 404);
    assert.equal((await call(ctx, 'GET', `/webhooks/${id}/deliveries`)).statusCode, 404);
    assert.equal(
      (await call(ctx, 'POST', `/webhooks/${id}/replay`, { body: { after: null } })).statusCode,
      404,
    );
  });

  it('needs webhooks:read to read and webhooks:write to change', async () => {
    const reader = await ctx.createKey({ roles: ['webhooks:read'] });
    const writer = await ctx.createKey({ roles: ['webhooks:write'] });
    const { id } = (await call(ctx, 'POST', '/webhooks', { key: writer, body: hookBody() })).json();
    assert.equal((await call(ctx, 'GET', `/webhooks/${id}`, { key: reader })).statusCode, 200);
    assert.equal((await call(ctx, 'GET', `/webhooks/${id}`, { key: writer })).statusCode, 403);
    const refused = await call(ctx, 'POST', '/webhooks', { key: reader, body: hookBody() });
    assert.equal(refused.statusCode, 403);
    for (const [method, path] of [
      ['PATCH', `/webhooks/${id}`],
      ['DELETE', `/webhooks/${id}`],
      ['POST', `/webhooks/${id}/rotate-secret`],
      ['POST', `/webhooks/${id}/replay`],
    ] as const) {
      const response = await call(ctx, method, path, {
        key: reader,
        ...(method === 'DELETE' || path.endsWith('secret') ? {} : { body: { after: null } }),
      });
      assert.equal(response.statusCode, 403, `${method} ${path}`);
    }
  });

  it('confines a restricted key to webhooks of its own applications', async () => {
    const restricted = await ctx.createKey({
      roles: ['webhooks:read', 'webhooks:write'],
      applications: ['billing-web'],
    });
    const everything = await call(ctx, 'POST', '/webhooks', { key: restricted, body: hookBody() });
    assert.equal(everything.statusCode, 403);
    const other = await call(ctx, 'POST', '/webhooks', {
      key: restricted,
      body: hookBody({ client_ids: ['billing-web', 'crm'] }),
    });
    assert.equal(other.statusCode, 403);
    const own = await call(ctx, 'POST', '/webhooks', {
      key: restricted,
      body: hookBody({ client_ids: ['billing-web'] }),
    });
    assert.equal(own.statusCode, 201);
    const unrestricted = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    // The other webhook does not exist for the restricted key.
    const hidden = await call(ctx, 'GET', `/webhooks/${unrestricted.id}`, { key: restricted });
    assert.equal(hidden.statusCode, 404);
    const listed = (await call(ctx, 'GET', '/webhooks', { key: restricted })).json();
    assert.ok(
      listed.items.every((item: { client_ids: string[] | null }) =>
        item.client_ids?.every((id) => id === 'billing-web'),
      ),
    );
    assert.ok(listed.items.some((item: { id: string }) => item.id === own.json().id));
    const widen = await call(ctx, 'PATCH', `/webhooks/${own.json().id}`, {
      key: restricted,
      body: { client_ids: null },
    });
    assert.equal(widen.statusCode, 403);
  });

  it('records webhook.created, updated and deleted events, without secrets', async () => {
    const created = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    await call(ctx, 'PATCH', `/webhooks/${created.id}`, { body: { description: 'now' } });
    const rotated = (await call(ctx, 'POST', `/webhooks/${created.id}/rotate-secret`)).json();
    // A failed write records nothing.
    const stale = await call(ctx, 'DELETE', `/webhooks/${created.id}`, {
      headers: { 'if-match': '"stale"' },
    });
    assert.equal(stale.statusCode, 412);
    await call(ctx, 'DELETE', `/webhooks/${created.id}`);
    const feed = await call(ctx, 'GET', '/events?resource_type=webhook&limit=1000');
    assert.equal(feed.statusCode, 200, feed.body);
    const events = feed
      .json<{
        items: {
          type: string;
          actor: { type: string };
          resource: { id: { id: string } };
          changes: { member: string }[];
        }[];
      }>()
      .items.filter((event) => event.resource.id.id === created.id);
    assert.deepEqual(
      events.map((event) => [event.type, event.actor.type]),
      [
        ['webhook.created', 'api_key'],
        ['webhook.updated', 'api_key'],
        ['webhook.updated', 'api_key'],
        ['webhook.deleted', 'api_key'],
      ],
    );
    assert.deepEqual(
      events[1]!.changes.map((change) => change.member),
      ['description'],
    );
    assert.deepEqual(
      events[2]!.changes.map((change) => change.member),
      ['previous_secret_expires_at'],
    );
    const text = JSON.stringify(events);
    assert.equal(text.includes('whsec_'), false);
    assert.equal(text.includes(created.secret.slice(6, 30)), false);
    assert.equal(text.includes(rotated.secret.slice(6, 30)), false);
  });

  it('never writes a webhook secret to the logs', async () => {
    const created = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
    const rotated = (await call(ctx, 'POST', `/webhooks/${created.id}/rotate-secret`)).json();
    const logs = JSON.stringify(ctx.logs);
    assert.equal(logs.includes(created.secret), false);
    assert.equal(logs.includes(rotated.secret), false);
  });
});

describe('webhook secrets at rest', () => {
  it('are sealed with IAM_SECRET_KEY when it is set', async () => {
    const secretKey = Buffer.alloc(32, 7);
    const ctx = await buildTestApp({ tokens: { secretKey } });
    try {
      const created = (await call(ctx, 'POST', '/webhooks', { body: hookBody() })).json();
      const stored = await ctx.store.webhooks.findWebhook(created.id);
      assert.ok(stored);
      assert.equal(stored.secret.includes(created.secret.slice(6)), false);
      assert.match(stored.secret, /^tessera-sealed:v1:/);
      assert.deepEqual(ctx.services.webhooks.signingSecrets(stored), [created.secret]);
    } finally {
      await ctx.close();
    }
  });
});
