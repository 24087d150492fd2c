// tessera-test: both-stores
// The audit trail of writes that do not come through the Tessera API: SCIM provisioning
// (actor scim, with the key's id) and first login through the token exchange (user.registered,
// actor token_exchange); a refused exchange and a second login record nothing.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { TestClock, type TestContext, buildTestApp, call, createApplication } from './helpers.js';
import { NATIVE_CLIENT, type TestProvider, startTestProvider } from './oidc-provider.js';

interface Event {
  id: string;
  type: string;
  actor: { type: string; id: string | null };
  client_id: string | null;
  resource: { type: string; id: Record<string, unknown> };
  changes: { member: string; before: unknown; after: unknown }[] | null;
  request_id: string | null;
}

let ctx: TestContext;
let provider: TestProvider;
before(async () => {
  provider = await startTestProvider();
  provider.accounts.set('ada', { sub: 'ada-1', email: 'ada@example.com', name: 'Ada' });
  provider.accounts.set('nomail', { sub: 'nomail-1', name: 'No Mail' });
  ctx = await buildTestApp({
    clock: new TestClock(Date.now()),
    tokens: { allowInsecureJwks: true },
  });
});
after(async () => {
  await ctx.close();
  await provider.close();
});

async function eventsAfter(mark: string | null): Promise<Event[]> {
  const response = await call(ctx, 'GET', `/events?limit=1000${mark ? `&after=${mark}` : ''}`);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ items: Event[] }>().items;
}

function scim(method: string, path: string, key: string, body?: unknown) {
  return ctx.app.inject({
    method: method as 'GET',
    url: `/scim/v2/okta-app${path}`,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
      'x-request-id': `scim-${method.toLowerCase()}`,
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

describe('SCIM writes', () => {
  it('record user.created, user.renamed, user.updated (groups too) and user.deleted as scim', async () => {
    await createApplication(ctx, { client_id: 'okta-app', scim_provider: 'okta_scim' });
    const key = await ctx.createKey({ roles: ['users:read', 'users:write'], name: 'okta' });
    const keys = await ctx.services.apiKeys.listApiKeys(
      'operator',
      { includeRevoked: false },
      null,
      100,
    );
    const keyId = keys.find((record) => record.name === 'okta')!.id;
    const mark = await ctx.store.events.lastEventId();

    const created = await scim('POST', '/Users', key, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'ada@example.com',
      name: { formatted: 'Ada Lovelace' },
      emails: [{ value: 'ada@example.com', primary: true }],
    });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = created.json<{ id: string }>();
    const renamed = await scim('PATCH', `/Users/${id}`, key, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'replace', path: 'userName', value: 'ada.king@example.com' },
        { op: 'replace', path: 'displayName', value: 'Ada King' },
      ],
    });
    assert.equal(renamed.statusCode, 200, renamed.body);
    const group = await scim('POST', '/Groups', key, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'admins',
      members: [{ value: id }],
    });
    assert.equal(group.statusCode, 201, group.body);
    assert.equal((await scim('DELETE', `/Users/${id}`, key)).statusCode, 204);

    const events = await eventsAfter(mark);
    assert.deepEqual(
      events.map((event) => event.type),
      ['user.created', 'user.renamed', 'user.updated', 'user.updated', 'user.deleted'],
    );
    assert.ok(events.every((event) => event.actor.type === 'scim' && event.actor.id === keyId));
    assert.ok(events.every((event) => event.client_id === 'okta-app'));
    assert.equal(events[0]!.request_id, 'scim-post');
    assert.deepEqual(events[1]!.changes, [
      { member: 'identifier', before: 'ada@example.com', after: 'ada.king@example.com' },
    ]);
    assert.deepEqual(events[2]!.changes, [
      { member: 'name', before: 'Ada Lovelace', after: 'Ada King' },
    ]);
    assert.deepEqual(events[3]!.changes, [{ member: 'roles', before: [], after: ['admins'] }]);
  });
});

describe('the token exchange', () => {
  function exchange(token: string) {
    return ctx.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-request-id': 'first-login',
      },
      payload: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
        client_id: 'notes',
        subject_token: token,
      }).toString(),
    });
  }

  it('records user.registered on first login only; a refused exchange records nothing', async () => {
    await createApplication(ctx, {
      client_id: 'notes',
      mode: 'external',
      external_token_validation: {
        google_oauth2: {
          issuer: provider.issuer,
          jwks_uri: provider.jwksUri,
          audience: NATIVE_CLIENT,
        },
      },
    });
    const mark = await ctx.store.events.lastEventId();
    assert.equal((await exchange(await provider.signIn('ada'))).statusCode, 200);
    assert.equal((await exchange(await provider.signIn('ada'))).statusCode, 200);
    assert.equal((await exchange(await provider.signIn('nomail'))).statusCode, 400);
    const all = await eventsAfter(mark);
    // The first token ever issued creates the first signing key: Tessera's own change.
    for (const event of all.filter((event) => event.resource.type === 'signing_key')) {
      assert.deepEqual([event.type, event.actor.type], ['signing_key.rotated', 'system']);
    }
    const events = all.filter((event) => event.resource.type === 'user');
    assert.deepEqual(
      events.map((event) => [event.type, event.actor.type, event.actor.id, event.request_id]),
      [['user.registered', 'token_exchange', null, 'first-login']],
    );
    assert.equal(events[0]!.resource.id.identifier, 'ada-1');
    assert.equal(events[0]!.client_id, 'notes');
  });
});
