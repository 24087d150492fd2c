// tessera-test: both-stores
// The token exchange against a real OpenID provider (oidc-provider, in process): genuine
// ID tokens from authorization code + PKCE, then every kind of forged or broken token.

import { strict as assert } from 'node:assert';
import { createHmac, createPrivateKey, randomBytes, sign as signBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  type CryptoKey,
  type JWK,
  SignJWT,
  createLocalJWKSet,
  decodeJwt,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  importJWK,
  jwtVerify,
} from 'jose';
import {
  TestClock,
  type TestContext,
  buildTestApp,
  call,
  createApplication,
  createUser,
  seg,
} from './helpers.js';
import {
  ES256_CLIENT,
  NATIVE_CLIENT,
  OTHER_CLIENT,
  type TestProvider,
  startTestProvider,
} from './oidc-provider.js';

const EXCHANGE = {
  grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
  subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
};

function exchange(ctx: TestContext, parameters: Record<string, string>) {
  return ctx.app.inject({
    method: 'POST',
    url: '/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(parameters).toString(),
  });
}

function exchangeToken(ctx: TestContext, clientId: string, token: string) {
  return exchange(ctx, { ...EXCHANGE, client_id: clientId, subject_token: token });
}

function oauthError(response: LightMyRequestResponse, status: number, error: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  assert.equal(response.headers['cache-control'], 'no-store');
  const body = response.json<{ error: string; error_description: string }>();
  assert.equal(body.error, error, response.body);
  assert.equal(typeof body.error_description, 'string');
  return body;
}

function entryFor(provider: TestProvider, overrides: Record<string, unknown> = {}) {
  return {
    google_oauth2: {
      issuer: provider.issuer,
      jwks_uri: provider.jwksUri,
      audience: [NATIVE_CLIENT, ES256_CLIENT],
      // HS256 and none are listed on purpose: they must be dropped, never honoured.
      algorithms: ['RS256', 'ES256', 'HS256', 'none'],
      ...overrides,
    },
  };
}

async function userCount(ctx: TestContext, clientId: string): Promise<number> {
  const response = await call(ctx, 'GET', `/applications/${clientId}/users?include_total=true`);
  return response.json<{ total: number }>().total;
}

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('POST /oauth2/token with ID tokens from a real OpenID provider', () => {
  let provider: TestProvider;
  let ctx: TestContext;
  let clock: TestClock;

  before(async () => {
    provider = await startTestProvider();
    provider.accounts.set('ada', {
      sub: 'ada-108234',
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      locale: 'en-GB',
      picture: 'https://images.example.com/ada.png',
    });
    provider.accounts.set('bare', {
      sub: 'bare-1',
      email: 'bare@example.com',
      locale: 'en_US',
      picture: 'ftp://x/y',
    });
    provider.accounts.set('nomail', { sub: 'nomail-1', name: 'No Mail' });
    clock = new TestClock(Date.now());
    ctx = await buildTestApp({ clock, tokens: { allowInsecureJwks: true } });
    await createApplication(ctx, {
      client_id: 'notes-internal',
      mode: 'internal',
      external_token_validation: entryFor(provider),
    });
    await createApplication(ctx, {
      client_id: 'notes',
      mode: 'external',
      jwt_expiration_in_minutes: 15,
      external_token_validation: entryFor(provider),
    });
  });
  after(async () => {
    await ctx.close();
    await provider.close();
  });

  it('refuses an unknown user in internal mode, and creates nobody', async () => {
    const token = await provider.signIn('ada');
    const body = oauthError(
      await exchangeToken(ctx, 'notes-internal', token),
      400,
      'invalid_grant',
    );
    assert.match(body.error_description, /internal mode/);
    assert.equal(await userCount(ctx, 'notes-internal'), 0);
  });

  it('issues a token for an enrolled user in internal mode, with the stored roles', async () => {
    await createUser(ctx, 'notes-internal', {
      provider: 'google_oauth2',
      identifier: 'ada-108234',
      roles: ['editor'],
    });
    const response = await exchangeToken(ctx, 'notes-internal', await provider.signIn('ada'));
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json<Record<string, unknown>>();
    assert.deepEqual(Object.keys(body).sort(), [
      'access_token',
      'expires_in',
      'issued_token_type',
      'token_type',
    ]);
    assert.equal(body.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 3600);
    assert.equal(response.headers['cache-control'], 'no-store');
    const claims = decodeJwt(body.access_token as string);
    assert.equal(claims.sub, 'google_oauth2|ada-108234');
    assert.equal(claims.aud, 'notes-internal');
    assert.deepEqual(claims.roles, ['editor']);
  });

  it('refuses an inactive (deprovisioned) user with invalid_grant, and serves it again once active', async () => {
    const path = `/applications/notes-internal/users/google_oauth2/${seg('ada-108234')}`;
    const off = await call(ctx, 'PATCH', path, { body: { active: false } });
    assert.equal(off.statusCode, 200, off.body);
    try {
      const refused = await exchangeToken(ctx, 'notes-internal', await provider.signIn('ada'));
      assert.equal(refused.statusCode, 400, refused.body);
      const error = refused.json<{ error: string; error_description: string }>();
      assert.equal(error.error, 'invalid_grant');
      assert.match(error.error_description, /^user: .*inactive/);
    } finally {
      await call(ctx, 'PATCH', path, { body: { active: true } });
    }
    const served = await exchangeToken(ctx, 'notes-internal', await provider.signIn('ada'));
    assert.equal(served.statusCode, 200, served.body);
  });

  it('registers the user on first login in external mode, and finds the same user on the second', async () => {
    const first = await exchangeToken(ctx, 'notes', await provider.signIn('ada'));
    assert.equal(first.statusCode, 200, first.body);
    const path = `/applications/notes/users/google_oauth2/${seg('ada-108234')}`;
    const registered = (await call(ctx, 'GET', path)).json<Record<string, unknown>>();
    assert.deepEqual(
      { ...registered, id: undefined, created_at: undefined, updated_at: undefined },
      {
        id: undefined,
        provider: 'google_oauth2',
        identifier: 'ada-108234',
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        locale: 'en-GB',
        avatar: 'https://images.example.com/ada.png',
        roles: [],
        scopes: [],
        active: true,
        created_at: undefined,
        updated_at: undefined,
      },
    );
    // The provider's profile changes; Tessera's stored user does not.
    provider.accounts.set('ada', { ...provider.accounts.get('ada')!, name: 'Augusta Ada King' });
    clock.advance(1_000);
    const second = await exchangeToken(ctx, 'notes', await provider.signIn('ada'));
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(await userCount(ctx, 'notes'), 1);
    assert.deepEqual((await call(ctx, 'GET', path)).json(), registered);
    const claims = decodeJwt(second.json<{ access_token: string }>().access_token);
    assert.equal(claims.name, 'Ada Lovelace');
    assert.equal(claims.exp! - claims.iat!, 15 * 60);
    assert.equal(second.json<{ expires_in: number }>().expires_in, 15 * 60);
  });

  it('refuses a first login whose identifier is a taken SCIM userName in another case, creating nobody', async () => {
    // The provider label is also the application's SCIM provider: its userNames ignore case.
    await createApplication(ctx, {
      client_id: 'notes-scim',
      mode: 'external',
      external_token_validation: entryFor(provider),
      scim_provider: 'google_oauth2',
    });
    await createUser(ctx, 'notes-scim', { provider: 'google_oauth2', identifier: 'ADA-108234' });
    const refused = await exchangeToken(ctx, 'notes-scim', await provider.signIn('ada'));
    const body = oauthError(refused, 400, 'invalid_grant');
    assert.match(body.error_description, /^user: .*differs from this one only in case/);
    assert.equal(await userCount(ctx, 'notes-scim'), 1);
  });

  it('registers with defaults for a missing name, a POSIX locale and a non-http picture', async () => {
    const response = await exchangeToken(ctx, 'notes', await provider.signIn('bare'));
    assert.equal(response.statusCode, 200, response.body);
    const user = (await call(ctx, 'GET', '/applications/notes/users/google_oauth2/bare-1')).json<
      Record<string, unknown>
    >();
    assert.equal(user.name, 'bare-1');
    assert.equal(user.locale, 'en');
    assert.equal(user.avatar, null);
  });

  it('refuses first login without an e-mail address (invalid_grant, saying so)', async () => {
    const body = oauthError(
      await exchangeToken(ctx, 'notes', await provider.signIn('nomail')),
      400,
      'invalid_grant',
    );
    assert.match(body.error_description, /email/);
    assert.equal(
      (await call(ctx, 'GET', '/applications/notes/users/google_oauth2/nomail-1')).statusCode,
      404,
    );
  });

  it('takes the identifier from identifier_claim, and accepts a single-string audience', async () => {
    await createApplication(ctx, {
      client_id: 'notes-by-email',
      mode: 'external',
      external_token_validation: entryFor(provider, {
        identifier_claim: 'email',
        audience: NATIVE_CLIENT,
      }),
    });
    const response = await exchangeToken(ctx, 'notes-by-email', await provider.signIn('ada'));
    assert.equal(response.statusCode, 200, response.body);
    const path = '/applications/notes-by-email/users/google_oauth2/ada%40example.com';
    assert.equal((await call(ctx, 'GET', path)).statusCode, 200);
    const { payload } = await jwtVerify(
      response.json<{ access_token: string }>().access_token,
      createLocalJWKSet(
        (await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json(),
      ),
      { currentDate: new Date(clock.now()) },
    );
    assert.equal(payload.sub, 'google_oauth2|ada@example.com');
  });

  it('follows a change of external_token_validation from the next exchange on', async () => {
    await createApplication(ctx, {
      client_id: 'notes-rotating',
      mode: 'external',
      external_token_validation: entryFor(provider),
    });
    const token = await provider.signIn('ada');
    const first = await exchangeToken(ctx, 'notes-rotating', token);
    assert.equal(first.statusCode, 200, first.body);
    const change = async (externalTokenValidation: Record<string, unknown>) => {
      const response = await call(ctx, 'PATCH', '/applications/notes-rotating', {
        body: { external_token_validation: externalTokenValidation },
      });
      assert.equal(response.statusCode, 200, response.body);
    };
    // Another audience: the token that was just accepted is refused by the next exchange.
    await change({ google_oauth2: { audience: ['com.example.other-app'] } });
    const refused = oauthError(
      await exchangeToken(ctx, 'notes-rotating', token),
      400,
      'invalid_grant',
    );
    assert.match(refused.error_description, /^audience:/);
    // The issuer moved to another provider label: the next exchange maps the token there.
    await change({ google_oauth2: null, apple_oidc: entryFor(provider).google_oauth2 });
    const moved = await exchangeToken(ctx, 'notes-rotating', token);
    assert.equal(moved.statusCode, 200, moved.body);
    const { payload } = await jwtVerify(
      moved.json<{ access_token: string }>().access_token,
      createLocalJWKSet(
        (await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json(),
      ),
      { currentDate: new Date(clock.now()) },
    );
    assert.equal(payload.sub, 'apple_oidc|ada-108234');
    const path = '/applications/notes-rotating/users/apple_oidc/ada-108234';
    assert.equal((await call(ctx, 'GET', path)).statusCode, 200);
    // A broken entry (no audience) refuses the next exchange as a configuration problem.
    await change({ apple_oidc: { audience: null } });
    const broken = oauthError(
      await exchangeToken(ctx, 'notes-rotating', token),
      400,
      'invalid_grant',
    );
    assert.match(broken.error_description, /^entry:.*audience/);
  });

  it('accepts an ES256 ID token from the provider', async () => {
    const response = await exchangeToken(ctx, 'notes', await provider.signIn('ada', ES256_CLIENT));
    assert.equal(response.statusCode, 200, response.body);
  });

  it('issues access tokens that verify against /.well-known/jwks.json', async () => {
    const response = await exchangeToken(ctx, 'notes', await provider.signIn('ada'));
    const jwks = (await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const { payload, protectedHeader } = await jwtVerify(
      response.json<{ access_token: string }>().access_token,
      createLocalJWKSet(jwks),
      {
        issuer: 'https://iam.example.test',
        audience: 'notes',
        typ: 'at+jwt',
        currentDate: new Date(clock.now()),
      },
    );
    assert.equal(protectedHeader.alg, 'ES256');
    assert.equal(payload.client_id, 'notes');
  });

  describe('the dry run (POST /applications/:client_id/external-tokens/validate)', () => {
    const validate = (clientId: string, token: string) =>
      call(ctx, 'POST', `/applications/${clientId}/external-tokens/validate`, { body: { token } });

    it('shows what first login would register, and registers nobody', async () => {
      provider.accounts.set('newcomer', {
        sub: 'newcomer-1',
        email: 'new@example.com',
        name: 'New Comer',
        locale: 'fr-CA',
      });
      const token = await provider.signIn('newcomer');
      const response = await validate('notes', token);
      assert.equal(response.statusCode, 200, response.body);
      const report = response.json<Record<string, unknown>>();
      assert.equal(report.valid, true);
      assert.equal(report.failed_check, null);
      assert.equal(report.provider, 'google_oauth2');
      assert.deepEqual(report.user, { provider: 'google_oauth2', identifier: 'newcomer-1' });
      assert.equal(report.user_exists, false);
      assert.deepEqual(report.new_user, {
        name: 'New Comer',
        email: 'new@example.com',
        locale: 'fr-CA',
        avatar: null,
      });
      assert.equal((report.header as Record<string, unknown>).kid, 'rsa-1');
      assert.equal((report.claims as Record<string, unknown>).sub, 'newcomer-1');
      assert.equal(
        (await call(ctx, 'GET', '/applications/notes/users/google_oauth2/newcomer-1')).statusCode,
        404,
      );
    });

    it('says an internal application would refuse an unknown user', async () => {
      const report = (await validate('notes-internal', await provider.signIn('newcomer'))).json<
        Record<string, unknown>
      >();
      assert.equal(report.valid, false);
      assert.equal(report.failed_check, 'user');
      assert.equal(report.user_exists, false);
    });

    it('finds an existing user', async () => {
      const report = (await validate('notes-internal', await provider.signIn('ada'))).json<
        Record<string, unknown>
      >();
      assert.equal(report.valid, true);
      assert.equal(report.user_exists, true);
      assert.equal(report.new_user, null);
    });
  });

  describe('forged and broken tokens: every one refused, nothing created', () => {
    let attacker: JWK;
    let attackerPublic: JWK;
    const seconds = () => Math.floor(clock.now() / 1000);
    const claims = (overrides: Record<string, unknown> = {}) => ({
      iss: provider.issuer,
      aud: NATIVE_CLIENT,
      sub: 'mallory',
      email: 'mallory@example.com',
      iat: seconds(),
      exp: seconds() + 3600,
      ...overrides,
    });
    const sign = async (
      jwk: JWK,
      header: Record<string, unknown>,
      payload: Record<string, unknown>,
    ) => {
      const alg = String(header.alg);
      return new SignJWT(payload)
        .setProtectedHeader({ ...header, alg })
        .sign(await importJWK(jwk, alg));
    };
    const withProviderKey = (
      payload: Record<string, unknown>,
      header: Record<string, unknown> = {},
    ) => sign(provider.privateKeys.rsa, { alg: 'RS256', kid: 'rsa-1', ...header }, payload);
    const hmac = (
      header: Record<string, unknown>,
      payload: Record<string, unknown>,
      secret: string | Buffer,
    ) => {
      const input = `${b64(header)}.${b64(payload)}`;
      return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
    };
    /** RS256 by hand, for headers jose refuses to produce (an unknown crit). */
    const rawProviderSignature = (
      header: Record<string, unknown>,
      payload: Record<string, unknown>,
    ) => {
      const input = `${b64(header)}.${b64(payload)}`;
      const key = createPrivateKey({ key: provider.privateKeys.rsa as never, format: 'jwk' });
      return `${input}.${signBytes('sha256', Buffer.from(input), key).toString('base64url')}`;
    };
    const flipLastSignatureBit = (token: string) => {
      const [header, payload, signature] = token.split('.') as [string, string, string];
      const bytes = Buffer.from(signature, 'base64url');
      bytes[bytes.length - 1]! ^= 0x01;
      return `${header}.${payload}.${bytes.toString('base64url')}`;
    };

    before(async () => {
      const pair = await generateKeyPair('RS256', { extractable: true });
      attacker = await exportJWK(pair.privateKey);
      attackerPublic = await exportJWK(pair.publicKey);
    });

    const cases: { name: string; token: () => Promise<string> | string; check: string }[] = [
      {
        name: 'expired 61 s ago (beyond the leeway)',
        check: 'expiry',
        token: () => withProviderKey(claims({ exp: seconds() - 61, iat: seconds() - 3661 })),
      },
      {
        name: 'without exp',
        check: 'expiry',
        token: () => withProviderKey({ ...claims(), exp: undefined }),
      },
      {
        name: 'nbf 61 s in the future',
        check: 'not_before',
        token: () => withProviderKey(claims({ nbf: seconds() + 61 })),
      },
      {
        name: 'a genuine token for another client (audience)',
        check: 'audience',
        token: () => provider.signIn('ada', OTHER_CLIENT),
      },
      {
        name: 'an audience list without the application',
        check: 'audience',
        token: () => withProviderKey(claims({ aud: [OTHER_CLIENT, 'x'] })),
      },
      {
        name: 'no aud at all',
        check: 'audience',
        token: () => withProviderKey({ ...claims(), aud: undefined }),
      },
      {
        name: 'an issuer no entry names, signed by the provider',
        check: 'issuer',
        token: () => withProviderKey(claims({ iss: 'https://accounts.evil.example' })),
      },
      {
        name: 'an issuer that differs only in a trailing slash',
        check: 'issuer',
        token: () => withProviderKey(claims({ iss: `${provider.issuer}/` })),
      },
      {
        name: "the provider's kid, signed by an attacker key",
        check: 'signature',
        token: () => sign(attacker, { alg: 'RS256', kid: 'rsa-1' }, claims()),
      },
      {
        name: 'an unknown kid',
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: 'rsa-2' }, claims()),
      },
      {
        name: 'alg none, unsigned',
        check: 'algorithm',
        token: () => `${b64({ alg: 'none' })}.${b64(claims())}.`,
      },
      {
        name: 'alg None with the provider kid',
        check: 'algorithm',
        token: () => `${b64({ alg: 'None', kid: 'rsa-1' })}.${b64(claims())}.`,
      },
      {
        name: 'HS256 keyed with the provider public key (PEM)',
        check: 'algorithm',
        token: async () =>
          hmac(
            { alg: 'HS256', kid: 'rsa-1' },
            claims(),
            await exportSPKI(
              (await importJWK(
                { kty: 'RSA', n: provider.privateKeys.rsa.n!, e: provider.privateKeys.rsa.e! },
                'RS256',
              )) as CryptoKey,
            ),
          ),
      },
      {
        name: 'HS256 keyed with the JWK modulus',
        check: 'algorithm',
        token: () =>
          hmac(
            { alg: 'HS256', kid: 'rsa-1' },
            claims(),
            Buffer.from(provider.privateKeys.rsa.n!, 'base64url'),
          ),
      },
      {
        name: 'PS256, not on the entry allow-list, with the provider key',
        check: 'algorithm',
        token: () => sign(provider.privateKeys.rsa, { alg: 'PS256', kid: 'rsa-1' }, claims()),
      },
      {
        name: 'a genuine token with one bit of the signature flipped',
        check: 'signature',
        token: async () => flipLastSignatureBit(await provider.signIn('ada')),
      },
      {
        name: 'a genuine token whose sub was changed',
        check: 'signature',
        token: async () => {
          const [header, , signature] = (await provider.signIn('ada')).split('.');
          return `${header}.${b64(claims({ sub: 'ada-108234', aud: NATIVE_CLIENT }))}.${signature}`;
        },
      },
      {
        name: 'an ES256 signature of zeros (CVE-2022-21449)',
        check: 'signature',
        token: () =>
          `${b64({ alg: 'ES256', kid: 'ec-1' })}.${b64(claims())}.${Buffer.alloc(64).toString('base64url')}`,
      },
      {
        name: 'an ES256 signature of 0xff bytes',
        check: 'signature',
        token: () =>
          `${b64({ alg: 'ES256', kid: 'ec-1' })}.${b64(claims())}.${Buffer.alloc(64, 0xff).toString('base64url')}`,
      },
      {
        name: 'the signature stripped',
        check: 'signature',
        token: async () => `${(await provider.signIn('ada')).split('.').slice(0, 2).join('.')}.`,
      },
      {
        name: 'kid ../../../../etc/passwd',
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: '../../../../etc/passwd' }, claims()),
      },
      {
        name: 'kid naming a URL',
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: 'http://127.0.0.1:9/jwks' }, claims()),
      },
      {
        name: "kid with SQL (' OR '1'='1)",
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: "' OR '1'='1" }, claims()),
      },
      {
        name: 'kid with a NUL byte',
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: 'rsa-1\u0000' }, claims()),
      },
      {
        name: "jku pointing to the attacker's keys",
        check: 'key',
        token: () =>
          sign(
            attacker,
            { alg: 'RS256', kid: 'attacker', jku: 'http://127.0.0.1:9/attacker.json' },
            claims(),
          ),
      },
      {
        name: "the attacker's key embedded as jwk",
        check: 'key',
        token: () =>
          sign(attacker, { alg: 'RS256', kid: 'attacker', jwk: attackerPublic }, claims()),
      },
      {
        name: 'x5u pointing elsewhere',
        check: 'key',
        token: () =>
          sign(
            attacker,
            { alg: 'RS256', kid: 'attacker', x5u: 'http://127.0.0.1:9/cert.pem' },
            claims(),
          ),
      },
      {
        name: "the EC key's kid with an RS256 signature",
        check: 'key',
        token: () => sign(attacker, { alg: 'RS256', kid: 'ec-1' }, claims()),
      },
      {
        name: 'an unknown critical header',
        check: 'format',
        token: () =>
          rawProviderSignature(
            { alg: 'RS256', kid: 'rsa-1', crit: ['exp-tessera'], 'exp-tessera': 1 },
            claims(),
          ),
      },
      {
        name: 'a JWE (five parts)',
        check: 'format',
        token: () =>
          `${b64({ alg: 'RSA-OAEP', enc: 'A256GCM' })}.${randomBytes(8).toString('base64url')}.a.b.c`,
      },
      { name: 'not a JWT at all', check: 'format', token: () => 'hello' },
      {
        name: 'two segments',
        check: 'format',
        token: () => `${b64({ alg: 'RS256' })}.${b64(claims())}`,
      },
      {
        name: 'a payload that is not JSON',
        check: 'format',
        token: () => `${b64({ alg: 'RS256', kid: 'rsa-1' })}.${b64('not json')}.${b64('sig')}`,
      },
      {
        name: 'no sub claim',
        check: 'identifier',
        token: () => withProviderKey({ ...claims(), sub: undefined }),
      },
      {
        name: 'sub ".."',
        check: 'identifier',
        token: () => withProviderKey(claims({ sub: '..' })),
      },
      {
        name: 'sub with a control character',
        check: 'identifier',
        token: () => withProviderKey(claims({ sub: 'ada\u0007' })),
      },
      {
        name: 'sub of 257 characters',
        check: 'identifier',
        token: () => withProviderKey(claims({ sub: 'x'.repeat(257) })),
      },
      {
        name: 'sub as a number',
        check: 'identifier',
        token: () => withProviderKey(claims({ sub: 108234 })),
      },
    ];

    for (const testCase of cases) {
      it(`refuses ${testCase.name} (${testCase.check})`, async () => {
        const token = await testCase.token();
        const usersBefore = await userCount(ctx, 'notes');
        const body = oauthError(await exchangeToken(ctx, 'notes', token), 400, 'invalid_grant');
        assert.ok(body.error_description.startsWith(`${testCase.check}:`), body.error_description);
        const report = await call(ctx, 'POST', '/applications/notes/external-tokens/validate', {
          body: { token },
        });
        assert.equal(report.statusCode, 200, report.body);
        assert.equal(report.json<{ valid: boolean }>().valid, false);
        assert.equal(report.json<{ failed_check: string }>().failed_check, testCase.check);
        assert.equal(await userCount(ctx, 'notes'), usersBefore);
      });
    }

    it('has at least 25 of them, covering every check of the token itself', () => {
      assert.ok(cases.length >= 25, `${cases.length} cases`);
      const tokenChecks = ['format', 'issuer', 'algorithm', 'key', 'signature', 'audience'];
      const timeChecks = ['expiry', 'not_before', 'identifier'];
      assert.deepEqual(
        [...tokenChecks, ...timeChecks].filter((check) => !cases.some((c) => c.check === check)),
        [],
      );
    });

    it('accepts a token that expired 59 s ago (within the leeway)', async () => {
      provider.accounts.set('late', { sub: 'late-1', email: 'late@example.com' });
      const token = await withProviderKey(
        claims({ sub: 'late-1', exp: seconds() - 59, iat: seconds() - 3659 }),
      );
      const response = await exchangeToken(ctx, 'notes', token);
      assert.equal(response.statusCode, 200, response.body);
    });

    it('accepts a token valid from 59 s in the future (nbf, within the leeway)', async () => {
      const token = await withProviderKey(
        claims({ sub: 'early-1', email: 'early@example.com', nbf: seconds() + 59 }),
      );
      const response = await exchangeToken(ctx, 'notes', token);
      assert.equal(response.statusCode, 200, response.body);
    });

    it('refuses first login with an e-mail claim that is not an address', async () => {
      const token = await withProviderKey(claims({ sub: 'badmail-1', email: 'not-an-address' }));
      const body = oauthError(await exchangeToken(ctx, 'notes', token), 400, 'invalid_grant');
      assert.match(body.error_description, /^email:/);
      assert.equal(
        (await call(ctx, 'GET', '/applications/notes/users/google_oauth2/badmail-1')).statusCode,
        404,
      );
    });
  });

  it("refuses a genuine ID token once it expired, by the application's clock", async () => {
    const token = await provider.signIn('ada');
    const expiredClock = new TestClock(decodeJwt(token).exp! * 1000 + 61_000);
    const late = await buildTestApp({
      clock: expiredClock,
      tokens: { allowInsecureJwks: true },
      store: undefined,
    });
    try {
      await createApplication(late, {
        client_id: 'notes',
        mode: 'external',
        external_token_validation: entryFor(provider),
      });
      const body = oauthError(await exchangeToken(late, 'notes', token), 400, 'invalid_grant');
      assert.match(body.error_description, /^expiry:/);
    } finally {
      await late.close();
    }
  });

  describe("when the provider's keys cannot be fetched", () => {
    it('answers 503 temporarily_unavailable with Retry-After on a cold cache, then recovers', async () => {
      const cold = await buildTestApp({ clock, tokens: { allowInsecureJwks: true } });
      try {
        await createApplication(cold, {
          client_id: 'notes',
          mode: 'external',
          external_token_validation: entryFor(provider),
        });
        const token = await provider.signIn('ada');
        provider.jwksDown = true;
        const response = await exchangeToken(cold, 'notes', token);
        const body = oauthError(response, 503, 'temporarily_unavailable');
        assert.equal(response.headers['retry-after'], '5');
        assert.match(body.error_description, /cannot be fetched/);
        const report = (
          await call(cold, 'POST', '/applications/notes/external-tokens/validate', {
            body: { token },
          })
        ).json<Record<string, unknown>>();
        assert.equal(report.failed_check, 'jwks');
        assert.equal(report.retryable, true);
        provider.jwksDown = false;
        // The failed fetch is remembered for 5 s (no fetch storm); then it is tried again.
        clock.advance(5_000);
        assert.equal((await exchangeToken(cold, 'notes', token)).statusCode, 200);
      } finally {
        provider.jwksDown = false;
        await cold.close();
      }
    });

    it('still works with a warm cache', async () => {
      const token = await provider.signIn('ada');
      assert.equal((await exchangeToken(ctx, 'notes', token)).statusCode, 200);
      provider.jwksDown = true;
      try {
        const fetches = provider.jwksFetches;
        assert.equal((await exchangeToken(ctx, 'notes', token)).statusCode, 200);
        assert.equal(provider.jwksFetches, fetches);
      } finally {
        provider.jwksDown = false;
      }
    });

    it('uses the keys it fetched before when a refetch fails (cache past its max age)', async () => {
      const stale = await buildTestApp({
        clock,
        tokens: { allowInsecureJwks: true, jwksCacheMaxAgeMs: 0 },
      });
      try {
        await createApplication(stale, {
          client_id: 'notes',
          mode: 'external',
          external_token_validation: entryFor(provider),
        });
        const token = await provider.signIn('ada');
        assert.equal((await exchangeToken(stale, 'notes', token)).statusCode, 200);
        provider.jwksDown = true;
        const fetches = provider.jwksFetches;
        assert.equal((await exchangeToken(stale, 'notes', token)).statusCode, 200);
        assert.ok(provider.jwksFetches > fetches, 'it did try to refetch');
      } finally {
        provider.jwksDown = false;
        await stale.close();
      }
    });
  });

  describe('request errors (RFC 6749 §5.2)', () => {
    it('answers invalid_request without grant_type', async () => {
      const body = oauthError(await exchange(ctx, { client_id: 'notes' }), 400, 'invalid_request');
      assert.match(body.error_description, /grant_type/);
    });
    it('answers unsupported_grant_type for another grant', async () => {
      oauthError(
        await exchange(ctx, { grant_type: 'client_credentials', client_id: 'notes' }),
        400,
        'unsupported_grant_type',
      );
    });
    it('answers invalid_request for a missing subject_token', async () => {
      oauthError(await exchange(ctx, { ...EXCHANGE, client_id: 'notes' }), 400, 'invalid_request');
    });
    it('answers invalid_request for another subject_token_type', async () => {
      const body = {
        ...EXCHANGE,
        client_id: 'notes',
        subject_token: 'x',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      };
      oauthError(await exchange(ctx, body), 400, 'invalid_request');
    });
    it('answers invalid_request for an actor_token (no delegation)', async () => {
      const body = {
        ...EXCHANGE,
        client_id: 'notes',
        subject_token: 'x',
        actor_token: 'y',
        actor_token_type: EXCHANGE.subject_token_type,
      };
      oauthError(await exchange(ctx, body), 400, 'invalid_request');
    });
    it('answers 401 invalid_client for an unknown or malformed client_id', async () => {
      const token = await provider.signIn('ada');
      oauthError(await exchangeToken(ctx, 'nobody', token), 401, 'invalid_client');
      oauthError(await exchangeToken(ctx, '../notes', token), 401, 'invalid_client');
    });
    it('answers invalid_request for a repeated parameter', async () => {
      // A request that would succeed but for the second client_id.
      const form = new URLSearchParams({
        ...EXCHANGE,
        client_id: 'notes',
        subject_token: await provider.signIn('ada'),
      });
      form.append('client_id', 'notes');
      const response = await ctx.app.inject({
        method: 'POST',
        url: '/oauth2/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form.toString(),
      });
      const body = oauthError(response, 400, 'invalid_request');
      assert.match(body.error_description, /client_id is given more than once/);
    });
    it('answers invalid_request, naming the cause, for a compressed or non-UTF-8 form', async () => {
      const payload = `grant_type=${EXCHANGE.grant_type}&client_id=notes&subject_token=x`;
      const send = (headers: Record<string, string>) =>
        ctx.app.inject({ method: 'POST', url: '/oauth2/token', headers, payload });
      const compressed = oauthError(
        await send({
          'content-type': 'application/x-www-form-urlencoded',
          'content-encoding': 'gzip',
        }),
        400,
        'invalid_request',
      );
      assert.match(compressed.error_description, /Content-Encoding gzip is not supported/);
      const latin1 = oauthError(
        await send({ 'content-type': 'application/x-www-form-urlencoded; charset=ISO-8859-1' }),
        400,
        'invalid_request',
      );
      assert.match(latin1.error_description, /charset=iso-8859-1/);
      const invalid = oauthError(
        await ctx.app.inject({
          method: 'POST',
          url: '/oauth2/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: Buffer.from([0x61, 0x3d, 0xff]),
        }),
        400,
        'invalid_request',
      );
      assert.equal(invalid.error_description, 'The request body is not valid UTF-8.');
    });
    it('answers invalid_request for a JSON body', async () => {
      const response = await ctx.app.inject({
        method: 'POST',
        url: '/oauth2/token',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ ...EXCHANGE, client_id: 'notes', subject_token: 'x' }),
      });
      oauthError(response, 400, 'invalid_request');
    });
    it('answers invalid_grant for an application without external_token_validation', async () => {
      await createApplication(ctx, { client_id: 'plain' });
      const body = oauthError(
        await exchangeToken(ctx, 'plain', await provider.signIn('ada')),
        400,
        'invalid_grant',
      );
      assert.match(body.error_description, /^issuer:/);
    });
    it('refuses an application whose entry has no audience (never "any audience")', async () => {
      await createApplication(ctx, {
        client_id: 'no-audience',
        mode: 'external',
        external_token_validation: {
          google_oauth2: { issuer: provider.issuer, jwks_uri: provider.jwksUri },
        },
      });
      const body = oauthError(
        await exchangeToken(ctx, 'no-audience', await provider.signIn('ada')),
        400,
        'invalid_grant',
      );
      assert.match(body.error_description, /^entry:.*audience/);
    });
  });
});
