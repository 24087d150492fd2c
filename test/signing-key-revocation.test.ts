// tessera-test: both-stores
// Signing keys over the API (docs/api.md, Access tokens): GET /signing-keys lists them, never a private part;
// POST /signing-keys/:kid/revoke removes a leaked key from the JWKS at once, a new active key
// in place first. Checked as a resource server checks: jose's remote JWKS verifier, over HTTP.

import assert from 'node:assert/strict';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { ACTIVATION_DELAY_MS, SigningKeys } from '../src/modules/tokens/signing-keys.service.js';
import {
  TestClock,
  type TestContext,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  userPath,
} from './helpers.js';

const ISSUER = 'https://iam.example.test';
const ADA = userPath('app-a', 'google_oauth2', '108234823498234');

interface SigningKeyBody {
  kid: string;
  alg: string;
  state: string;
  created_at: string;
  activates_at: string;
  retired_at: string | null;
  published_until: string | null;
  revoked_at: string | null;
}

async function mint(ctx: TestContext): Promise<string> {
  const response = await call(ctx, 'POST', `${ADA}/tokens`);
  assert.equal(response.statusCode, 201, response.body);
  return response.json<{ access_token: string }>().access_token;
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

async function listKeys(ctx: TestContext, key?: string) {
  const response = await call(ctx, 'GET', '/signing-keys', key === undefined ? {} : { key });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ items: SigningKeyBody[] }>().items;
}

describe('POST /signing-keys/:kid/revoke, seen by jose over HTTP', () => {
  let ctx: TestContext;
  let jwksUrl: URL;
  before(async () => {
    ctx = await buildTestApp({ clock: new TestClock(Date.now()) });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = ctx.app.server.address() as AddressInfo;
    jwksUrl = new URL(`http://127.0.0.1:${port}/.well-known/jwks.json`);
    await createApplication(ctx, { client_id: 'app-a' });
    await createUser(ctx, 'app-a');
  });
  after(() => ctx.close());

  it('makes the leaked key’s tokens fail and new tokens verify, a new key active first', async () => {
    // A resource server that refetches the JWKS on an unknown kid (no cooldown, for the test).
    const keys = createRemoteJWKSet(jwksUrl, { cooldownDuration: 0 });
    const verify = (token: string) =>
      jwtVerify(token, keys, { issuer: ISSUER, audience: 'app-a', typ: 'at+jwt' });
    const leakedToken = await mint(ctx);
    const leaked = kidOf(leakedToken);
    await verify(leakedToken);

    const response = await call(ctx, 'POST', `/signing-keys/${leaked}/revoke`);
    assert.equal(response.statusCode, 200, response.body);
    const { revoked, active } = response.json<{
      revoked: SigningKeyBody;
      active: SigningKeyBody;
    }>();
    assert.equal(revoked.kid, leaked);
    assert.equal(revoked.state, 'revoked');
    assert.notEqual(active.kid, leaked);
    assert.equal(active.state, 'active');
    // The new key was stored, signing, before the old one was revoked.
    assert.ok(Date.parse(active.created_at) <= Date.parse(revoked.revoked_at!));
    assert.ok(Date.parse(active.activates_at) <= Date.parse(revoked.revoked_at!));

    const freshToken = await mint(ctx);
    assert.equal(kidOf(freshToken), active.kid);
    await verify(freshToken); // an unknown kid: jose refetches the JWKS
    await assert.rejects(verify(leakedToken), errors.JWKSNoMatchingKey);
    // A verifier that never saw the key refuses it too.
    const newcomer = createRemoteJWKSet(jwksUrl);
    await assert.rejects(
      jwtVerify(leakedToken, newcomer, { issuer: ISSUER, audience: 'app-a' }),
      errors.JWKSNoMatchingKey,
    );
    const published = await (await fetch(jwksUrl)).json();
    assert.deepEqual(
      (published as { keys: { kid: string }[] }).keys.map((key) => key.kid),
      [active.kid],
    );
  });

  it('changes nothing when the key is revoked again', async () => {
    const before = await listKeys(ctx);
    const revokedKid = before.find((key) => key.state === 'revoked')!.kid;
    const again = await call(ctx, 'POST', `/signing-keys/${revokedKid}/revoke`);
    assert.equal(again.statusCode, 200);
    assert.deepEqual(await listKeys(ctx), before);
  });
});

describe('GET /signing-keys', () => {
  const ctx = useTestApp({ clock: new TestClock(Date.now()) }, async () => {
    await createApplication(ctx, { client_id: 'app-a' });
    await createUser(ctx, 'app-a');
    await mint(ctx);
  });

  it('lists kid, alg, state and times, never a private member', async () => {
    const rotated = await ctx.services.signingKeys.rotate(CLI_ORIGIN);
    const response = await call(ctx, 'GET', '/signing-keys');
    assert.equal(response.statusCode, 200);
    const items = response.json<{ items: SigningKeyBody[] }>().items;
    assert.deepEqual(
      items.map((key) => [key.alg, key.state]),
      [
        ['ES256', 'active'],
        ['ES256', 'pending'],
      ],
    );
    assert.equal(items[1]!.kid, rotated.kid);
    assert.deepEqual(Object.keys(items[0]!).sort(), [
      'activates_at',
      'alg',
      'created_at',
      'kid',
      'published_until',
      'retired_at',
      'revoked_at',
      'state',
    ]);
    assert.doesNotMatch(response.body, /"d"|"p"|"q"|privateKey|sealed/);
  });

  it('needs keys:read to list and keys:write to revoke; a restricted key may not revoke', async () => {
    const [first] = await listKeys(ctx);
    problemOf(
      await call(ctx, 'GET', '/signing-keys', {
        key: await ctx.createKey({ roles: ['users:read'] }),
      }),
      403,
    );
    const reader = await ctx.createKey({ roles: ['keys:read'] });
    assert.equal((await listKeys(ctx, reader)).length, 2);
    problemOf(await call(ctx, 'POST', `/signing-keys/${first!.kid}/revoke`, { key: reader }), 403);
    const restricted = await ctx.createKey({ roles: ['keys:write'], applications: ['app-a'] });
    problemOf(
      await call(ctx, 'POST', `/signing-keys/${first!.kid}/revoke`, { key: restricted }),
      403,
    );
    assert.equal((await listKeys(ctx))[0]!.state, 'active');
  });

  it('answers 404 for an unknown kid and 400 for a malformed one', async () => {
    problemOf(await call(ctx, 'POST', '/signing-keys/no-such-kid/revoke'), 404);
    problemOf(await call(ctx, 'POST', `/signing-keys/${'x'.repeat(129)}/revoke`), 400);
  });

  it('revokes a pending key without adding one: the active key goes on signing', async () => {
    const keys = await listKeys(ctx);
    const pending = keys.find((key) => key.state === 'pending')!;
    const response = await call(ctx, 'POST', `/signing-keys/${pending.kid}/revoke`);
    assert.equal(response.json<{ active: SigningKeyBody }>().active.kid, keys[0]!.kid);
    assert.equal((await listKeys(ctx)).length, keys.length);
    ctx.clock.advance(ACTIVATION_DELAY_MS);
    assert.equal(kidOf(await mint(ctx)), keys[0]!.kid, 'a revoked key never starts signing');
  });
});

describe('signing-key revocation across instances', () => {
  it('reaches another instance’s JWKS and signer within a second', async () => {
    const ctx = await buildTestApp();
    try {
      const clock = new TestClock(Date.now());
      const first = new SigningKeys({ store: ctx.store, clock, algorithm: 'ES256' });
      const other = new SigningKeys({ store: ctx.store, clock, algorithm: 'ES256' });
      await first.ensureSigningKey();
      const leaked = (await other.currentSigner()).kid;
      assert.deepEqual(
        (await other.publishedKeys()).map((key) => key.kid),
        [leaked],
      );
      const { active } = await first.revokeSigningKey(leaked, CLI_ORIGIN);
      clock.advance(1_000);
      assert.deepEqual(
        (await other.publishedKeys()).map((key) => key.kid),
        [active.kid],
      );
      assert.equal((await other.currentSigner()).kid, active.kid);
    } finally {
      await ctx.close();
    }
  });
});
