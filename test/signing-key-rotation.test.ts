// tessera-test: both-stores
// POST /signing-keys/rotate (docs/api.md, Access tokens): the API's rotation, the same service
// as `tessera signing-keys rotate` and the console's button. The new key is published at once
// and signs 10 minutes later; GET /signing-keys/:kid shows one key.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import { ACTIVATION_DELAY_MS } from '../src/modules/tokens/signing-keys.service.js';
import {
  TestClock,
  call,
  createApplication,
  createUser,
  problemOf,
  useTestApp,
  userPath,
} from './helpers.js';

const ADA = userPath('app-a', 'google_oauth2', '108234823498234');

interface SigningKeyBody {
  kid: string;
  alg: string;
  state: string;
  activates_at: string;
}

describe('POST /signing-keys/rotate', () => {
  const ctx = useTestApp({ clock: new TestClock(Date.now()) }, async () => {
    await createApplication(ctx, { client_id: 'app-a' });
    await createUser(ctx, 'app-a');
  });

  async function mintedKid(): Promise<string> {
    const response = await call(ctx, 'POST', `${ADA}/tokens`);
    assert.equal(response.statusCode, 201, response.body);
    return decodeProtectedHeader(response.json<{ access_token: string }>().access_token).kid!;
  }

  async function jwksKids(): Promise<string[]> {
    const response = await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    return response.json<{ keys: { kid: string }[] }>().keys.map((key) => key.kid);
  }

  it('adds a key, published at once, that signs 10 minutes later (201, Location)', async () => {
    const signing = await mintedKid();
    const response = await call(ctx, 'POST', '/signing-keys/rotate', {
      headers: { 'x-request-id': 'rotate-1' },
    });
    assert.equal(response.statusCode, 201, response.body);
    const added = response.json<SigningKeyBody>();
    assert.equal(response.headers.location, `/iam/api/v1/signing-keys/${added.kid}`);
    assert.equal(added.state, 'pending');
    assert.equal(added.alg, 'ES256');
    assert.equal(Date.parse(added.activates_at), ctx.clock.now() + ACTIVATION_DELAY_MS);
    assert.doesNotMatch(response.body, /"d"|privateKey|sealed/);

    assert.deepEqual(await jwksKids(), [signing, added.kid]);
    assert.equal(await mintedKid(), signing, 'the current key signs until the new one activates');
    ctx.clock.advance(ACTIVATION_DELAY_MS);
    assert.equal(await mintedKid(), added.kid);

    const fetched = await call(ctx, 'GET', `/signing-keys/${added.kid}`);
    assert.equal(fetched.statusCode, 200);
    assert.equal(fetched.json<SigningKeyBody>().state, 'active');
  });

  it('records signing_key.rotated with the key that asked and the request id', async () => {
    const response = await call(ctx, 'GET', '/events?type=signing_key.rotated');
    const events = response.json<{
      items: {
        actor: { type: string; id: string | null };
        resource: { type: string; id: { kid: string } };
        request_id: string | null;
      }[];
    }>().items;
    const rotation = events.find((event) => event.request_id === 'rotate-1');
    assert.ok(rotation, JSON.stringify(events));
    assert.equal(rotation.actor.type, 'api_key');
    assert.equal(rotation.resource.type, 'signing_key');
    const keys = (await call(ctx, 'GET', '/signing-keys')).json<{
      items: SigningKeyBody[];
    }>().items;
    assert.equal(rotation.resource.id.kid, keys.at(-1)!.kid);
  });

  it('needs keys:write, and a key restricted to some applications may not rotate', async () => {
    const before = (await call(ctx, 'GET', '/signing-keys')).body;
    problemOf(
      await call(ctx, 'POST', '/signing-keys/rotate', {
        key: await ctx.createKey({ roles: ['keys:read'] }),
      }),
      403,
    );
    const restricted = await ctx.createKey({ roles: ['keys:write'], applications: ['app-a'] });
    const refused = problemOf(
      await call(ctx, 'POST', '/signing-keys/rotate', { key: restricted }),
      403,
    );
    assert.match(refused.detail, /signing keys serve them all/);
    assert.equal((await call(ctx, 'GET', '/signing-keys')).body, before, 'nothing was added');
  });

  it('GET /signing-keys/:kid answers 404 for an unknown kid and 400 for a malformed one', async () => {
    problemOf(await call(ctx, 'GET', '/signing-keys/no-such-kid'), 404);
    problemOf(await call(ctx, 'GET', `/signing-keys/${'x'.repeat(129)}`), 400);
  });
});
