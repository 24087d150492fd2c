// tessera-test: both-stores
// What the security review found in the token exchange (outside tokens): an
// unverified e-mail address registered a user, an `iat` an hour ahead was accepted, a 180 KiB
// `iss` was echoed into the answer and the log, and every exchange during a provider outage
// fetched the JWKS again.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT, importJWK } from 'jose';
import { TestClock, type TestContext, buildTestApp, call, createApplication } from './helpers.js';
import { NATIVE_CLIENT, type TestProvider, startTestProvider } from './oidc-provider.js';

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

function refusal(response: LightMyRequestResponse) {
  assert.equal(response.statusCode, 400, response.body);
  const body = response.json<{ error: string; error_description: string }>();
  assert.equal(body.error, 'invalid_grant');
  return body.error_description;
}

async function userCount(ctx: TestContext): Promise<number> {
  const response = await call(ctx, 'GET', '/applications/notes/users?include_total=true');
  return response.json<{ total: number }>().total;
}

/** A real OpenID provider, and an external-mode application "notes" that trusts it. */
async function startNotes() {
  const provider = await startTestProvider();
  const clock = new TestClock(Date.now());
  const ctx = await buildTestApp({ clock, tokens: { allowInsecureJwks: true } });
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
  return { provider, ctx, clock };
}

async function closeNotes(provider: TestProvider, ctx: TestContext): Promise<void> {
  provider.jwksDown = false;
  await ctx.close();
  await provider.close();
}

describe('the token exchange, hardened', () => {
  let provider: TestProvider;
  let ctx: TestContext;
  let clock: TestClock;
  const seconds = () => Math.floor(clock.now() / 1000);

  /** An ID token signed with the provider's own key. */
  async function idToken(claims: Record<string, unknown>): Promise<string> {
    return new SignJWT({
      iss: provider.issuer,
      aud: NATIVE_CLIENT,
      sub: 'grace-1',
      email: 'grace@example.com',
      iat: seconds(),
      exp: seconds() + 3600,
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' })
      .sign(await importJWK(provider.privateKeys.rsa, 'RS256'));
  }

  before(async () => {
    ({ provider, ctx, clock } = await startNotes());
  });
  after(() => closeNotes(provider, ctx));

  for (const verified of [false, 'false'] as const) {
    it(`refuses a first login whose email_verified is ${JSON.stringify(verified)}, creating nobody`, async () => {
      const description = refusal(
        await exchange(
          ctx,
          'notes',
          await idToken({ sub: `unverified-${verified}`, email_verified: verified }),
        ),
      );
      assert.match(description, /^email: .*not verified/);
      assert.equal(await userCount(ctx), 0);
    });
  }

  it('registers a first login whose e-mail is verified', async () => {
    const response = await exchange(
      ctx,
      'notes',
      await idToken({ sub: 'verified', email_verified: true }),
    );
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(await userCount(ctx), 1);
  });

  it('refuses an iat more than 60 s in the future, and accepts one within the leeway', async () => {
    const hourAhead = await idToken({
      sub: 'verified',
      iat: seconds() + 3600,
      exp: seconds() + 7200,
    });
    assert.match(refusal(await exchange(ctx, 'notes', hourAhead)), /^issued_at: /);
    const slightlyAhead = await idToken({ sub: 'verified', iat: seconds() + 59 });
    assert.equal((await exchange(ctx, 'notes', slightlyAhead)).statusCode, 200);
    const report = await call(ctx, 'POST', '/applications/notes/external-tokens/validate', {
      body: { token: hourAhead },
    });
    assert.equal(report.json<{ failed_check: string }>().failed_check, 'issued_at');
  });

  it('echoes at most 200 characters of a 60 KiB iss, in the answer and in the log', async () => {
    const huge = `https://${'x'.repeat(60 * 1024)}.example`;
    const unsigned = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: huge, sub: 'a', aud: NATIVE_CLIENT, exp: seconds() + 60 }),
    ).toString('base64url')}.c2ln`;
    const description = refusal(await exchange(ctx, 'notes', unsigned));
    assert.ok(description.length < 400, `${description.length} characters`);
    assert.match(description, /^issuer: /);
    const longest = Math.max(...ctx.logs.map((line) => JSON.stringify(line).length));
    assert.ok(longest < 2000, `a log line of ${longest} characters`);
  });
});

describe('a provider whose JWKS cannot be fetched', () => {
  let provider: TestProvider;
  let ctx: TestContext;
  let clock: TestClock;
  before(async () => {
    ({ provider, ctx, clock } = await startNotes());
    provider.accounts.set('ada', { sub: 'ada-1', email: 'ada@example.com' });
  });
  after(() => closeNotes(provider, ctx));

  it('is asked once for 20 exchanges within 5 s, then again after them', async () => {
    const token = await provider.signIn('ada');
    provider.jwksDown = true;
    const before = provider.jwksFetches;
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await exchange(ctx, 'notes', token);
      assert.equal(response.statusCode, 503, response.body);
      assert.equal(response.headers['retry-after'], '5');
    }
    assert.equal(provider.jwksFetches - before, 1, 'one fetch for 20 exchanges');
    clock.advance(5_000);
    provider.jwksDown = false;
    assert.equal((await exchange(ctx, 'notes', token)).statusCode, 200);
    assert.equal(provider.jwksFetches - before, 2);
  });
});
