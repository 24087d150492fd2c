// tessera-test: both-stores
// Tessera's own access tokens (docs/api.md, Access tokens): the trusted back-end route, the JWKS and discovery
// documents, signing-key rotation — and a resource server that verifies tokens with jose
// against the JWKS over HTTP, as any back end would.

import { strict as assert } from 'node:assert';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  jwtVerify,
} from 'jose';
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

async function issue(ctx: TestContext, path = ADA, key?: string) {
  return call(ctx, 'POST', `${path}/tokens`, key === undefined ? {} : { key });
}

function tokenOf(response: { json<T>(): T }): string {
  return response.json<{ access_token: string }>().access_token;
}

async function jwks(ctx: TestContext) {
  const response = await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
  return response.json<{ keys: Record<string, unknown>[] }>().keys;
}

describe('POST /applications/:client_id/users/:provider/:identifier/tokens', () => {
  const ctx = useTestApp({ clock: new TestClock(Date.now()) }, async () => {
    await createApplication(ctx, { client_id: 'app-a', jwt_expiration_in_minutes: 30 });
    await createUser(ctx, 'app-a');
  });

  it('answers 201 with a Bearer token, expires_in from jwt_expiration_in_minutes, never cached', async () => {
    const response = await issue(ctx);
    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.headers['cache-control'], 'no-store');
    const body = response.json<Record<string, unknown>>();
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type']);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 1800);
  });

  it('answers 404 for a missing user or application', async () => {
    const noUser = problemOf(await issue(ctx, userPath('app-a', 'google_oauth2', 'nobody')), 404);
    assert.match(String(noUser.detail), /has no user with provider "google_oauth2"/);
    // The application and the user are read together: a missing application is named first.
    const noApplication = problemOf(
      await issue(ctx, userPath('missing', 'google_oauth2', 'nobody')),
      404,
    );
    assert.equal(noApplication.detail, 'No application with client_id "missing".');
  });

  it('issues the very next token after a change of the application or the user by the change', async () => {
    await createApplication(ctx, { client_id: 'app-b', jwt_expiration_in_minutes: 30 });
    await createUser(ctx, 'app-b');
    const user = userPath('app-b', 'google_oauth2', '108234823498234');
    const claimsOf = (response: { json<T>(): T }) => decodeJwt(tokenOf(response));
    assert.equal((await issue(ctx, user)).json<{ expires_in: number }>().expires_in, 1800);

    const patched = await call(ctx, 'PATCH', '/applications/app-b', {
      body: { jwt_expiration_in_minutes: 5 },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    const shorter = await issue(ctx, user);
    assert.equal(shorter.json<{ expires_in: number }>().expires_in, 300);
    const claims = claimsOf(shorter);
    assert.equal(claims.exp! - claims.iat!, 300);

    const roles = await call(ctx, 'PATCH', user, { body: { roles: ['auditor'] } });
    assert.equal(roles.statusCode, 200, roles.body);
    assert.deepEqual(claimsOf(await issue(ctx, user)).roles, ['auditor']);

    const off = await call(ctx, 'PATCH', user, { body: { active: false } });
    assert.equal(off.statusCode, 200, off.body);
    problemOf(await issue(ctx, user), 409);
    await call(ctx, 'PATCH', user, { body: { active: true } });
    assert.equal((await issue(ctx, user)).statusCode, 201);

    const deleted = await call(ctx, 'DELETE', '/applications/app-b');
    assert.equal(deleted.statusCode, 204, deleted.body);
    const gone = problemOf(await issue(ctx, user), 404);
    assert.equal(gone.detail, 'No application with client_id "app-b".');
  });

  it('needs tokens:write, and a key restricted to the application', async () => {
    problemOf(
      await issue(ctx, ADA, await ctx.createKey({ roles: ['users:read', 'users:write'] })),
      403,
    );
    problemOf(
      await issue(
        ctx,
        ADA,
        await ctx.createKey({ roles: ['tokens:write'], applications: ['other'] }),
      ),
      403,
    );
    assert.equal(
      (
        await issue(
          ctx,
          ADA,
          await ctx.createKey({ roles: ['tokens:write'], applications: ['app-a'] }),
        )
      ).statusCode,
      201,
    );
    problemOf(await issue(ctx, ADA, null as unknown as string), 401);
  });
});

describe('a resource server verifying Tessera access tokens with jose against the JWKS', () => {
  let ctx: TestContext;
  let jwksUrl: URL;
  before(async () => {
    ctx = await buildTestApp({ clock: new TestClock(Date.now()) });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    jwksUrl = new URL(
      `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}/.well-known/jwks.json`,
    );
    await createApplication(ctx, { client_id: 'app-a', jwt_expiration_in_minutes: 30 });
    await createApplication(ctx, { client_id: 'app-b', jwt_expiration_in_minutes: 43200 });
    await createUser(ctx, 'app-a', { roles: ['admin', 'billing:approver'], scopes: ['org:acme'] });
    await createUser(ctx, 'app-b');
  });
  after(() => ctx.close());

  const verifierFor = (audience: string) => {
    const keys = createRemoteJWKSet(jwksUrl);
    return (token: string) => jwtVerify(token, keys, { issuer: ISSUER, audience, typ: 'at+jwt' });
  };

  it('verifies a token and finds every claim docs/api.md lists', async () => {
    const { payload, protectedHeader } = await verifierFor('app-a')(tokenOf(await issue(ctx)));
    assert.equal(protectedHeader.alg, 'ES256');
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.equal(typeof protectedHeader.kid, 'string');
    assert.deepEqual(Object.keys(payload).sort(), [
      'aud',
      'client_id',
      'email',
      'exp',
      'iat',
      'identifier',
      'iss',
      'jti',
      'locale',
      'name',
      'provider',
      'roles',
      'scopes',
      'sub',
    ]);
    assert.equal(payload.iss, ISSUER);
    assert.equal(payload.sub, 'google_oauth2|108234823498234');
    assert.equal(payload.aud, 'app-a');
    assert.equal(payload.client_id, 'app-a');
    assert.equal(payload.provider, 'google_oauth2');
    assert.equal(payload.identifier, '108234823498234');
    assert.deepEqual(payload.roles, ['admin', 'billing:approver']);
    assert.deepEqual(payload.scopes, ['org:acme']);
    assert.equal(payload.email, 'ada@example.com');
    assert.equal(payload.name, 'Ada Lovelace');
    assert.equal(payload.locale, 'en-GB');
    assert.equal(payload.iat, Math.floor(ctx.clock.now() / 1000));
    assert.equal(payload.exp! - payload.iat!, 60 * 30);
    assert.match(String(payload.jti), /^[0-9a-f-]{36}$/);
  });

  it('sets exp - iat = 60 × jwt_expiration_in_minutes (43200 minutes: 30 days)', async () => {
    const { payload } = await verifierFor('app-b')(
      tokenOf(await issue(ctx, userPath('app-b', 'google_oauth2', '108234823498234'))),
    );
    assert.equal(payload.exp! - payload.iat!, 60 * 43200);
  });

  it('gives every token its own jti', async () => {
    const first = await verifierFor('app-a')(tokenOf(await issue(ctx)));
    const second = await verifierFor('app-a')(tokenOf(await issue(ctx)));
    assert.notEqual(first.payload.jti, second.payload.jti);
  });

  it('rejects a token for application A in a verifier expecting application B', async () => {
    await assert.rejects(
      verifierFor('app-b')(tokenOf(await issue(ctx))),
      (error: Error & { code?: string; claim?: string }) => {
        assert.equal(error.code, 'ERR_JWT_CLAIM_VALIDATION_FAILED');
        assert.equal(error.claim, 'aud');
        return true;
      },
    );
  });

  it('serves the JWKS publicly and cacheably, without private members', async () => {
    tokenOf(await issue(ctx)); // the first token creates the first key (the server does at start)
    const response = await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'public, max-age=300');
    const keys = response.json<{ keys: Record<string, unknown>[] }>().keys;
    assert.equal(keys.length, 1);
    assert.deepEqual(Object.keys(keys[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(keys[0]!.use, 'sig');
  });

  it('describes itself at /.well-known/openid-configuration', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/.well-known/openid-configuration',
    });
    assert.equal(response.statusCode, 200);
    const body = response.json<Record<string, unknown>>();
    assert.equal(body.issuer, ISSUER);
    assert.equal(body.jwks_uri, `${ISSUER}/.well-known/jwks.json`);
    assert.equal(body.token_endpoint, `${ISSUER}/oauth2/token`);
    // Required members of OpenID Connect Discovery 1.0 §3.
    assert.deepEqual(body.response_types_supported, []);
    assert.deepEqual(body.subject_types_supported, ['public']);
    assert.deepEqual(body.grant_types_supported, [
      'urn:ietf:params:oauth:grant-type:token-exchange',
    ]);
    assert.deepEqual(body.access_token_signing_alg_values_supported, ['ES256', 'EdDSA', 'RS256']);
  });
});

describe('signing keys', () => {
  for (const algorithm of ['EdDSA', 'RS256'] as const) {
    it(`signs with ${algorithm} when IAM_TOKEN_ALG says so`, async () => {
      const ctx = await buildTestApp({ clock: new TestClock(Date.now()), tokens: { algorithm } });
      try {
        await createApplication(ctx, { client_id: 'app-a' });
        await createUser(ctx, 'app-a');
        const token = tokenOf(await issue(ctx));
        assert.equal(decodeProtectedHeader(token).alg, algorithm);
        const keys = await jwks(ctx);
        assert.equal(keys[0]!.alg, algorithm);
        assert.ok(!('d' in keys[0]!) && !('p' in keys[0]!), 'no private member is published');
        // A verifier with the published key accepts it, and refuses it with one byte changed.
        const keySet = createLocalJWKSet({ keys });
        const { payload, protectedHeader } = await jwtVerify(token, keySet, {
          audience: 'app-a',
          typ: 'at+jwt',
          algorithms: [algorithm],
        });
        assert.equal(payload.sub, 'google_oauth2|108234823498234');
        assert.equal(protectedHeader.kid, keys[0]!.kid);
        const [head, body, signature] = token.split('.');
        const bytes = Buffer.from(signature!, 'base64url');
        bytes[0]! ^= 1;
        await assert.rejects(
          jwtVerify(`${head}.${body}.${bytes.toString('base64url')}`, keySet),
          /signature verification failed/,
        );
      } finally {
        await ctx.close();
      }
    });
  }

  it('rotates: the new key is published at once, signs after the delay, and the old one stays until its tokens expired', async () => {
    const clock = new TestClock(Date.now());
    const ctx = await buildTestApp({ clock });
    try {
      await createApplication(ctx, { client_id: 'app-a' });
      await createUser(ctx, 'app-a');
      const firstKid = decodeProtectedHeader(tokenOf(await issue(ctx))).kid;
      const rotated = await ctx.services.signingKeys.rotate(CLI_ORIGIN);
      clock.advance(31_000); // past the instance's key cache
      assert.deepEqual(
        (await jwks(ctx)).map((key) => key.kid),
        [firstKid, rotated.kid],
      );
      assert.equal(decodeProtectedHeader(tokenOf(await issue(ctx))).kid, firstKid);

      clock.advance(ACTIVATION_DELAY_MS);
      assert.equal(decodeProtectedHeader(tokenOf(await issue(ctx))).kid, rotated.kid);
      assert.deepEqual(
        (await jwks(ctx)).map((key) => key.kid),
        [firstKid, rotated.kid],
      );

      // The old key signed until the new one activated; 30 days (+ a minute) later the
      // last token it can have signed has expired.
      // Written out, not MAX_TOKEN_LIFETIME_MS: shortening that constant must fail this test.
      clock.advance(43_200 * 60_000);
      assert.deepEqual(
        (await jwks(ctx)).map((key) => key.kid),
        [firstKid, rotated.kid],
      );
      clock.advance(61_000);
      assert.deepEqual(
        (await jwks(ctx)).map((key) => key.kid),
        [rotated.kid],
      );
      const states = (await ctx.services.signingKeys.listSigningKeys()).map((key) => key.state);
      assert.deepEqual(states, ['unpublished', 'active']);
    } finally {
      await ctx.close();
    }
  });

  it('lets instances starting together on one database agree on one first key', async () => {
    const ctx = await buildTestApp();
    try {
      const clock = new TestClock(Date.now());
      const instances = Array.from(
        { length: 5 },
        () => new SigningKeys({ store: ctx.store, clock, algorithm: 'ES256' }),
      );
      const added = await Promise.all(instances.map((instance) => instance.ensureSigningKey()));
      assert.equal(added.filter((key) => key !== null).length, 1);
      const kids = await Promise.all(
        instances.map(async (instance) => (await instance.currentSigner()).kid),
      );
      assert.equal(new Set(kids).size, 1);
      assert.equal((await ctx.store.signingKeys.listSigningKeys()).length, 1);
      // A restart with the same algorithm adds nothing.
      assert.equal(await instances[0]!.ensureSigningKey(), null);
    } finally {
      await ctx.close();
    }
  });

  it('adds a key of the new algorithm when IAM_TOKEN_ALG changes, as a rotation', async () => {
    const ctx = await buildTestApp();
    try {
      const clock = new TestClock(Date.now());
      const before = new SigningKeys({ store: ctx.store, clock, algorithm: 'ES256' });
      await before.ensureSigningKey();
      const after = new SigningKeys({ store: ctx.store, clock, algorithm: 'RS256' });
      const added = await after.ensureSigningKey();
      assert.equal(added?.algorithm, 'RS256');
      assert.equal((await after.currentSigner()).algorithm, 'ES256');
      clock.advance(ACTIVATION_DELAY_MS);
      assert.equal((await after.currentSigner()).algorithm, 'RS256');
    } finally {
      await ctx.close();
    }
  });
});

describe('POST /applications/:client_id/external-tokens/validate', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx, {
      client_id: 'app-a',
      external_token_validation: {
        google_oauth2: {
          issuer: 'https://accounts.google.com',
          jwks_uri: 'ftp://x',
          audience: 'a',
        },
      },
    });
  });
  after(() => ctx.close());

  it('reports the decoded token, the matched entry and the failing check', async () => {
    const token = `${Buffer.from('{"alg":"RS256","kid":"k1"}').toString('base64url')}.${Buffer.from(
      '{"iss":"https://accounts.google.com","sub":"1","aud":"a"}',
    ).toString('base64url')}.c2ln`;
    const response = await call(ctx, 'POST', '/applications/app-a/external-tokens/validate', {
      body: { token },
    });
    assert.equal(response.statusCode, 200, response.body);
    const report = response.json<Record<string, unknown>>();
    assert.equal(report.valid, false);
    assert.equal(report.failed_check, 'jwks_uri');
    assert.match(String(report.detail), /https:/);
    assert.deepEqual(report.header, { alg: 'RS256', kid: 'k1' });
    assert.deepEqual(report.claims, { iss: 'https://accounts.google.com', sub: '1', aud: 'a' });
    assert.equal(report.provider, 'google_oauth2');
    assert.deepEqual(report.entry, {
      issuer: 'https://accounts.google.com',
      jwks_uri: 'ftp://x',
      audience: 'a',
    });
    assert.equal(report.user, null);
    assert.equal(report.user_exists, null);
  });

  it('answers 404 for a missing application and 400 for a body without a token', async () => {
    problemOf(
      await call(ctx, 'POST', '/applications/missing/external-tokens/validate', {
        body: { token: 'x' },
      }),
      404,
    );
    problemOf(
      await call(ctx, 'POST', '/applications/app-a/external-tokens/validate', { body: {} }),
      400,
    );
  });
});
