// tessera-test: both-stores
// Who may call SCIM, and what every failure looks like there: a SCIM error body
// (application/scim+json), never a problem document. Every SCIM route, every credential.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type TestContext, buildTestApp, createApplication } from './helpers.js';

const SCIM_ROUTES = [
  ['GET', '/ServiceProviderConfig', 'users:read'],
  ['GET', '/ResourceTypes', 'users:read'],
  ['GET', '/Schemas', 'users:read'],
  ['GET', '/ResourceTypes/{id}', 'users:read'],
  ['GET', '/Schemas/{id}', 'users:read'],
  ['POST', '/.search', 'users:read'],
  ['GET', '/Users', 'users:read'],
  ['POST', '/Users/.search', 'users:read'],
  ['POST', '/Users', 'users:write'],
  ['GET', '/Users/{id}', 'users:read'],
  ['PUT', '/Users/{id}', 'users:write'],
  ['PATCH', '/Users/{id}', 'users:write'],
  ['DELETE', '/Users/{id}', 'users:write'],
  ['GET', '/Groups', 'users:read'],
  ['POST', '/Groups/.search', 'users:read'],
  ['POST', '/Groups', 'users:write'],
  ['GET', '/Groups/{id}', 'users:read'],
  ['PUT', '/Groups/{id}', 'users:write'],
  ['PATCH', '/Groups/{id}', 'users:write'],
  ['DELETE', '/Groups/{id}', 'users:write'],
] as const;

function assertScimError(response: LightMyRequestResponse, status: number, scimType?: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.equal(response.headers['content-type'], 'application/scim+json');
  const body = response.json<{
    schemas: string[];
    status: string;
    scimType?: string;
    detail: string;
  }>();
  assert.deepEqual(body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
  assert.equal(body.status, String(status));
  assert.equal(typeof body.detail, 'string');
  if (scimType !== undefined) assert.equal(body.scimType, scimType);
}

describe('SCIM authorization and errors', () => {
  let ctx: TestContext;
  const keys: Record<string, string> = {};

  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx, { client_id: 'hr', scim_provider: 'okta_scim' });
    await createApplication(ctx, { client_id: 'plain' });
    keys.reader = await ctx.createKey({ roles: ['users:read'], name: 'reader' });
    keys.writer = await ctx.createKey({ roles: ['users:write'], name: 'writer' });
    keys.elsewhere = await ctx.createKey({
      roles: ['users:read', 'users:write'],
      applications: ['plain'],
      name: 'elsewhere',
    });
    keys.scim = await ctx.createKey({
      roles: ['users:read', 'users:write'],
      applications: ['hr'],
      name: 'scim',
    });
  });
  after(() => ctx.close());

  const send = (method: string, path: string, authorization: string | null, clientId = 'hr') =>
    ctx.app.inject({
      method: method as 'GET',
      url: `/scim/v2/${clientId}${path.replace('{id}', 'missing-id')}`,
      headers: {
        ...(authorization === null ? {} : { authorization }),
        ...(['POST', 'PUT', 'PATCH'].includes(method)
          ? { 'content-type': 'application/scim+json' }
          : {}),
      },
      ...(['POST', 'PUT', 'PATCH'].includes(method) ? { payload: '{}' } : {}),
    });

  it('registers these SCIM routes', () => {
    for (const [method, path] of SCIM_ROUTES) {
      const url = `/scim/v2/:client_id${path.replace('{id}', ':id')}`;
      assert.ok(ctx.app.hasRoute({ method, url }), `${method} ${url}`);
    }
  });

  for (const [method, path, role] of SCIM_ROUTES) {
    describe(`${method} ${path}`, () => {
      it('answers 401 with WWW-Authenticate: Bearer to missing or bad credentials', async () => {
        for (const authorization of [
          null,
          'Bearer',
          'Basic eHl6',
          `Bearer tsr_${'A'.repeat(43)}`,
        ]) {
          const response = await send(method, path, authorization);
          assertScimError(response, 401);
          assert.equal(response.headers['www-authenticate'], 'Bearer');
        }
      });

      it(`needs ${role}, and a key allowed for the application (403 before any lookup)`, async () => {
        const other = role === 'users:read' ? keys.writer! : keys.reader!;
        assertScimError(await send(method, path, `Bearer ${other}`), 403);
        assertScimError(await send(method, path, `Bearer ${keys.elsewhere!}`), 403);
        assertScimError(await send(method, path, `Bearer ${keys.elsewhere!}`, 'no-such-app'), 403);
      });

      it('serves a key with the role, as Bearer or apikey', async () => {
        for (const scheme of ['Bearer', 'apikey', 'BEARER']) {
          const response = await send(method, path, `${scheme} ${keys.scim!}`);
          assert.ok(
            ![401, 403].includes(response.statusCode) && response.statusCode < 500,
            response.body,
          );
        }
      });

      it('is 404 where SCIM is off, as where the application is missing', async () => {
        assertScimError(await send(method, path, `Bearer ${ctx.adminKey}`, 'plain'), 404);
        assertScimError(await send(method, path, `Bearer ${ctx.adminKey}`, 'missing'), 404);
      });
    });
  }

  it('answers unknown routes (404) and methods (405 with Allow) with SCIM errors', async () => {
    const auth = { authorization: `Bearer ${keys.scim!}` };
    assertScimError(
      await ctx.app.inject({ method: 'GET', url: '/scim/v2/hr/Nope', headers: auth }),
      404,
    );
    const wrong = await ctx.app.inject({
      method: 'POST',
      url: '/scim/v2/hr/Schemas',
      headers: auth,
    });
    assertScimError(wrong, 405);
    assert.match(String(wrong.headers.allow), /GET/);
  });

  it('refuses other media types (415) and unreadable JSON (400 invalidSyntax)', async () => {
    const auth = { authorization: `Bearer ${keys.scim!}` };
    const xml = await ctx.app.inject({
      method: 'POST',
      url: '/scim/v2/hr/Users',
      headers: { ...auth, 'content-type': 'application/xml' },
      payload: '<u/>',
    });
    assertScimError(xml, 415);
    const broken = await ctx.app.inject({
      method: 'POST',
      url: '/scim/v2/hr/Users',
      headers: { ...auth, 'content-type': 'application/scim+json' },
      payload: '{"userName":',
    });
    assertScimError(broken, 400, 'invalidSyntax');
  });

  it('keeps problem documents on the Tessera API', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/iam/api/v1/applications/hr/users',
      headers: { authorization: `Bearer ${ctx.adminKey}` },
    });
    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['content-type'], 'application/problem+json');
    assert.equal(response.headers['www-authenticate'], 'apikey');
  });
});
