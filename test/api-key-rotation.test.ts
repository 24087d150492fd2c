// tessera-test: both-stores
// Credentials that rotate without downtime, and revocation that cannot lock administrators
// out: POST /api-keys/:id/rotate (both secrets work until previous_expires_at), revoked keys
// kept and listed with include_revoked=true, and the subset rule for revoke and rotate.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  START_TIME,
  buildTestApp,
  useTestApp,
  call,
  problemOf,
  type TestContext,
} from './helpers.js';

const HOUR = 3_600_000;
const iso = (epochMillis: number) => new Date(epochMillis).toISOString();

interface KeyBody {
  id: string;
  roles: string[];
  updated_at: string;
  previous_expires_at: string | null;
  revoked_at: string | null;
  key?: string;
}

async function issue(ctx: TestContext, body: Record<string, unknown>, caller = ctx.adminKey) {
  const response = await call(ctx, 'POST', '/api-keys', { key: caller, body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json<KeyBody & { key: string }>();
}

const works = async (ctx: TestContext, key: string) =>
  (await call(ctx, 'GET', '/applications', { key })).statusCode === 200;

describe('POST /api-keys/:id/rotate', () => {
  const ctx = useTestApp();

  it('answers a new secret once; both work until previous_expires_at, then only the new', async () => {
    const issued = await issue(ctx, { name: 'deploy', roles: ['applications:read'] });
    ctx.clock.advance(1_000);
    const response = await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, {
      body: { previous_valid_for_seconds: 3600 },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['cache-control'], 'no-store');
    const rotated = response.json<KeyBody & { key: string }>();
    assert.equal(rotated.id, issued.id);
    assert.match(rotated.key, /^tsr_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(rotated.key, issued.key);
    assert.equal(rotated.previous_expires_at, iso(START_TIME + 1_000 + HOUR));
    assert.equal(rotated.updated_at, iso(START_TIME + 1_000));
    // The secret is shown in this response only.
    const read = await call(ctx, 'GET', `/api-keys/${issued.id}`);
    assert.equal(read.json<KeyBody>().key, undefined);
    assert.equal(read.json<KeyBody>().previous_expires_at, rotated.previous_expires_at);

    assert.ok(await works(ctx, issued.key), 'the previous secret works during the overlap');
    assert.ok(await works(ctx, rotated.key), 'the new secret works');
    ctx.clock.advance(HOUR - 1);
    assert.ok(await works(ctx, issued.key), 'still, a millisecond before the end');
    ctx.clock.advance(1);
    problemOf(await call(ctx, 'GET', '/applications', { key: issued.key }), 401);
    assert.ok(await works(ctx, rotated.key));
  });

  it('keeps the previous secret one day by default, and not at all with 0', async () => {
    const issued = await issue(ctx, { name: 'default', roles: ['applications:read'] });
    const rotated = (await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, { body: {} })).json<
      KeyBody & { key: string }
    >();
    assert.equal(rotated.previous_expires_at, iso(ctx.clock.now() + 24 * HOUR));
    const again = (
      await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, {
        body: { previous_valid_for_seconds: 0 },
      })
    ).json<KeyBody & { key: string }>();
    // Rotating again ends the first overlap, and 0 ends the second at once.
    problemOf(await call(ctx, 'GET', '/applications', { key: issued.key }), 401);
    problemOf(await call(ctx, 'GET', '/applications', { key: rotated.key }), 401);
    assert.ok(await works(ctx, again.key));
  });

  for (const [label, body] of [
    ['a negative overlap', { previous_valid_for_seconds: -1 }],
    ['more than 7 days', { previous_valid_for_seconds: 604_801 }],
    ['a fractional overlap', { previous_valid_for_seconds: 1.5 }],
    ['an unknown member', { overlap: 10 }],
  ] as const) {
    it(`refuses ${label} with 400, changing nothing`, async () => {
      const issued = await issue(ctx, { name: 'bad', roles: ['applications:read'] });
      problemOf(await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, { body }), 400);
      assert.ok(await works(ctx, issued.key));
      assert.equal(
        (await call(ctx, 'GET', `/api-keys/${issued.id}`)).json<KeyBody>().previous_expires_at,
        null,
      );
    });
  }

  it('answers 404 for an unknown key, 409 for a revoked one, 412 for a stale If-Match', async () => {
    problemOf(
      await call(ctx, 'POST', '/api-keys/01900000-0000-7000-8000-00000000dead/rotate', {
        body: {},
      }),
      404,
    );
    const issued = await issue(ctx, { name: 'gone', roles: ['applications:read'] });
    problemOf(
      await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, {
        body: {},
        headers: { 'if-match': '"stale"' },
      }),
      412,
    );
    await call(ctx, 'DELETE', `/api-keys/${issued.id}`);
    problemOf(await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, { body: {} }), 409);
  });

  it('needs keys:write', async () => {
    const reader = await ctx.createKey({ roles: ['keys:read'] });
    const issued = await issue(ctx, { name: 'target', roles: ['applications:read'] });
    problemOf(
      await call(ctx, 'POST', `/api-keys/${issued.id}/rotate`, { key: reader, body: {} }),
      403,
    );
  });
});

describe('revoked keys are kept', () => {
  const ctx = useTestApp();

  it('lists them only with include_revoked=true, with revoked_at, and counts them so', async () => {
    const live = await issue(ctx, { name: 'live', roles: ['applications:read'] });
    const doomed = await issue(ctx, { name: 'doomed', roles: ['applications:read'] });
    ctx.clock.advance(5_000);
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${doomed.id}`)).statusCode, 204);

    const plain = await call(ctx, 'GET', '/api-keys?include_total=true');
    const plainPage = plain.json<{ items: KeyBody[]; total: number }>();
    assert.ok(!plainPage.items.some((item) => item.id === doomed.id));
    assert.ok(plainPage.items.some((item) => item.id === live.id));
    assert.equal(plainPage.total, 2); // the admin key and "live"

    const all = await call(ctx, 'GET', '/api-keys?include_revoked=true&include_total=true');
    const allPage = all.json<{ items: KeyBody[]; total: number }>();
    assert.equal(allPage.total, 3);
    const revoked = allPage.items.find((item) => item.id === doomed.id);
    assert.equal(revoked?.revoked_at, iso(START_TIME + 5_000));
    assert.equal(allPage.items.find((item) => item.id === live.id)?.revoked_at, null);
  });

  it('never lets a revoked key work again', async () => {
    const doomed = await issue(ctx, { name: 'never again', roles: ['applications:read'] });
    await call(ctx, 'DELETE', `/api-keys/${doomed.id}`);
    ctx.clock.advance(10 * HOUR);
    problemOf(await call(ctx, 'GET', '/applications', { key: doomed.key }), 401);
  });

  it('does not accept a cursor of one list in the other', async () => {
    for (let n = 0; n < 3; n++) await issue(ctx, { name: `page ${n}`, roles: ['users:read'] });
    const first = await call(ctx, 'GET', '/api-keys?limit=1');
    const cursor = encodeURIComponent(first.json<{ next_cursor: string }>().next_cursor);
    problemOf(
      await call(ctx, 'GET', `/api-keys?limit=1&include_revoked=true&cursor=${cursor}`),
      400,
    );
  });
});

describe('revoking and rotating follow the subset rule', () => {
  let ctx: TestContext;
  let narrow: string;
  let adminId: string;
  before(async () => {
    ctx = await buildTestApp();
    narrow = await ctx.createKey({ roles: ['keys:read', 'keys:write'] });
    adminId = (await ctx.services.authenticator.authenticate(ctx.adminKey))!.id;
  });
  after(() => ctx.close());

  it('refuses a narrow keys:write key revoking the all-roles admin key (403); the admin key works', async () => {
    const refused = problemOf(
      await call(ctx, 'DELETE', `/api-keys/${adminId}`, { key: narrow }),
      403,
    );
    assert.match(refused.detail, /roles it does not hold/);
    assert.ok(await works(ctx, ctx.adminKey));
    const record = (await call(ctx, 'GET', `/api-keys/${adminId}`)).json<KeyBody>();
    assert.equal(record.revoked_at, null);
  });

  it('refuses it rotating a wider key (403), which would hand it that key', async () => {
    problemOf(
      await call(ctx, 'POST', `/api-keys/${adminId}/rotate`, { key: narrow, body: {} }),
      403,
    );
    assert.ok(await works(ctx, ctx.adminKey));
  });

  it('lets it revoke and rotate keys within its roles, itself included', async () => {
    const peer = await issue(ctx, { name: 'peer', roles: ['keys:read'] }, narrow);
    const rotated = await call(ctx, 'POST', `/api-keys/${peer.id}/rotate`, {
      key: narrow,
      body: {},
    });
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.equal(
      (await call(ctx, 'DELETE', `/api-keys/${peer.id}`, { key: narrow })).statusCode,
      204,
    );
  });

  it('refuses an expiring caller rotating a key that outlives it, but lets it revoke one', async () => {
    const expiring = await ctx.createKey({
      roles: ['keys:read', 'keys:write', 'users:read'],
      expiresAt: START_TIME + 1_000 * HOUR,
    });
    const lasting = await issue(ctx, { name: 'lasting', roles: ['users:read'] });
    problemOf(
      await call(ctx, 'POST', `/api-keys/${lasting.id}/rotate`, { key: expiring, body: {} }),
      403,
    );
    assert.equal(
      (await call(ctx, 'DELETE', `/api-keys/${lasting.id}`, { key: expiring })).statusCode,
      204,
    );
  });
});

describe('the key of IAM_BOOTSTRAP_API_KEY', () => {
  const SECRET = 'bootstrap-secret-for-rotation-tests-0123456789';
  let ctx: TestContext;
  let id: string;
  before(async () => {
    ctx = await buildTestApp();
    await ctx.services.apiKeys.ensureBootstrapKey(SECRET);
    id = (await ctx.services.authenticator.authenticate(SECRET))!.id;
  });
  after(() => ctx.close());

  it('is rotated by changing the variable, not over the API (409)', async () => {
    const refused = problemOf(await call(ctx, 'POST', `/api-keys/${id}/rotate`, { body: {} }), 409);
    assert.match(refused.detail, /IAM_BOOTSTRAP_API_KEY/);
    assert.ok(await works(ctx, SECRET));
  });

  it('once revoked, is never recreated from the same value: start-up refuses it', async () => {
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${id}`)).statusCode, 204);
    await assert.rejects(ctx.services.apiKeys.ensureBootstrapKey(SECRET), /revoked key/);
    problemOf(await call(ctx, 'GET', '/applications', { key: SECRET }), 401);
  });
});
