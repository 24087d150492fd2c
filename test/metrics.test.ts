// tessera-test: both-stores
// The operator's metrics at /metrics move when the thing they count happens: refused API keys
// by reason, rate-limited requests by limit, token exchanges by outcome and failed check, JWKS
// fetches, the store's pool and SQLite's commits; and the build is identified.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { SignJWT, importJWK } from 'jose';
import {
  TEST_STORE,
  TestClock,
  type TestContext,
  buildTestApp,
  call,
  createApplication,
  useTestApp,
} from './helpers.js';
import { NATIVE_CLIENT, type TestProvider, startTestProvider } from './oidc-provider.js';

/** The value of one sample of /metrics, 0 when the series does not exist yet. */
async function sample(ctx: TestContext, name: string, labels: Record<string, string> = {}) {
  const text = (await call(ctx, 'GET', '//metrics', { key: null })).body;
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return 0;
}

function exchange(ctx: TestContext, clientId: string, token: string) {
  return ctx.app.inject({
    method: 'POST',
    url: '/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      client_id: clientId,
      subject_token: token,
    }).toString(),
  });
}

describe('GET /metrics: the build and the standard metrics', () => {
  const ctx = useTestApp();

  it('identifies the build: tessera_build_info{version,node} 1', async () => {
    assert.equal(
      await sample(ctx, 'tessera_build_info', { version: 'test', node: process.versions.node }),
      1,
    );
  });
});

describe('GET /metrics: refused API keys, by reason', () => {
  const clock = new TestClock();
  const ctx = useTestApp({ clock });

  const failures = (reason: string) =>
    sample(ctx, 'tessera_authentication_failures_total', { reason });

  it('counts a missing, a malformed, an unknown, a revoked and an expired key apart', async () => {
    const revoked = await ctx.createKey({ name: 'revoked' });
    const revokedId = (await call(ctx, 'GET', '/api-keys'))
      .json<{
        items: { id: string; name: string }[];
      }>()
      .items.find((key) => key.name === 'revoked')!.id;
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${revokedId}`)).statusCode, 204);
    const expiring = await ctx.createKey({ expiresAt: clock.now() + 1000 });
    clock.advance(2000);

    const attempts: [string, Record<string, string>][] = [
      ['missing', {}],
      ['malformed', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['unknown', { authorization: `apikey tsr_${'x'.repeat(43)}` }],
      ['revoked', { authorization: `apikey ${revoked}` }],
      ['expired', { authorization: `apikey ${expiring}` }],
    ];
    for (const [reason, headers] of attempts) {
      const before = await failures(reason);
      const response = await call(ctx, 'GET', '/applications', { key: null, headers });
      assert.equal(response.statusCode, 401, reason);
      assert.equal(await failures(reason), before + 1, reason);
    }
  });
});

describe('GET /metrics: rate-limited requests, by limit', () => {
  it('counts 429s of the per-key limit and of the failed-authentication limit apart', async () => {
    const ctx = await buildTestApp({ rateLimitPerMinute: 2, authFailuresPerMinute: 2 });
    try {
      const limited = (limit: string) =>
        sample(ctx, 'tessera_rate_limited_requests_total', { limit });
      const statuses = [];
      for (let n = 0; n < 3; n++)
        statuses.push((await call(ctx, 'GET', '/applications')).statusCode);
      assert.deepEqual(statuses, [200, 200, 429]);
      assert.equal(await limited('api_key'), 1);
      assert.equal(await limited('auth_failures'), 0);

      const wrong = { key: `tsr_${'w'.repeat(43)}` };
      const refused = [];
      for (let n = 0; n < 3; n++)
        refused.push((await call(ctx, 'GET', '/applications', wrong)).statusCode);
      assert.deepEqual(refused, [401, 401, 429]);
      assert.equal(await limited('auth_failures'), 1);
      assert.equal(await limited('api_key'), 1);
    } finally {
      await ctx.close();
    }
  });
});

describe('GET /metrics: token exchanges and JWKS fetches', () => {
  let provider: TestProvider;
  let ctx: TestContext;
  const clock = new TestClock(Date.now());
  const seconds = () => Math.floor(clock.now() / 1000);

  async function idToken(claims: Record<string, unknown> = {}): Promise<string> {
    return new SignJWT({
      iss: provider.issuer,
      aud: NATIVE_CLIENT,
      sub: 'grace-1',
      email: 'grace@example.com',
      email_verified: true,
      iat: seconds(),
      exp: seconds() + 3600,
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' })
      .sign(await importJWK(provider.privateKeys.rsa, 'RS256'));
  }

  before(async () => {
    provider = await startTestProvider();
    ctx = await buildTestApp({ clock, tokens: { allowInsecureJwks: true } });
    for (const [clientId, jwksUri] of [
      ['notes', provider.jwksUri],
      // Nothing listens on port 1: every fetch of this key set fails.
      ['broken', 'http://127.0.0.1:1/jwks'],
    ]) {
      await createApplication(ctx, {
        client_id: clientId,
        mode: 'external',
        external_token_validation: {
          google_oauth2: { issuer: provider.issuer, jwks_uri: jwksUri, audience: NATIVE_CLIENT },
        },
      });
    }
  });
  after(async () => {
    await ctx.close();
    await provider.close();
  });

  const exchanges = (outcome: string, failedCheck: string) =>
    sample(ctx, 'tessera_token_exchanges_total', { outcome, failed_check: failedCheck });
  const fetches = (outcome: string) => sample(ctx, 'tessera_jwks_fetches_total', { outcome });

  it('counts an issued token, and the JWKS fetch it took', async () => {
    const response = await exchange(ctx, 'notes', await idToken());
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(await exchanges('issued', ''), 1);
    assert.equal(await fetches('ok'), 1);
  });

  it('counts a refusal under the check that failed', async () => {
    const response = await exchange(
      ctx,
      'notes',
      await idToken({ email_verified: false, sub: 'x' }),
    );
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(await exchanges('invalid_grant', 'email'), 1);
    assert.equal(await exchanges('issued', ''), 1);
  });

  it('counts a failed JWKS fetch, and the exchange it made temporarily unavailable', async () => {
    const response = await exchange(ctx, 'broken', await idToken());
    assert.equal(response.statusCode, 503, response.body);
    assert.equal(await fetches('failed'), 1);
    const unavailable = (await call(ctx, 'GET', '//metrics', { key: null })).body
      .split('\n')
      .filter((line) =>
        line.startsWith('tessera_token_exchanges_total{outcome="temporarily_unavailable"'),
      );
    assert.equal(unavailable.length, 1, unavailable.join('\n'));
    assert.match(unavailable[0]!, / 1$/);
  });
});

describe('GET /metrics: the store', () => {
  const ctx = useTestApp();

  if (TEST_STORE === 'postgres') {
    it('shows the pool: total, idle and waiting connections', async () => {
      await call(ctx, 'GET', '/applications');
      assert.ok((await sample(ctx, 'tessera_store_pool_connections', { state: 'total' })) >= 1);
      assert.ok((await sample(ctx, 'tessera_store_pool_connections', { state: 'idle' })) >= 1);
      assert.equal(await sample(ctx, 'tessera_store_pool_connections', { state: 'waiting' }), 0);
    });
  } else {
    it('times every SQLite commit', async () => {
      const before = await sample(ctx, 'tessera_sqlite_commit_duration_seconds_count');
      await createApplication(ctx, { client_id: 'committed' });
      await createApplication(ctx, { client_id: 'committed-too' });
      const after = await sample(ctx, 'tessera_sqlite_commit_duration_seconds_count');
      assert.ok(after >= before + 2, `${before} → ${after}`);
      assert.ok((await sample(ctx, 'tessera_sqlite_commit_duration_seconds_sum')) > 0);
    });
  }
});
