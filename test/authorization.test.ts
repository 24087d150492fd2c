// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { ROLES, type Role } from '../src/roles.js';
import {
  applicationBody,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  registeredRoutes,
  type TestContext,
  userBody,
  userPath,
} from './helpers.js';

const API = '/iam/api/v1';
const USER = userPath('a', 'google_oauth2', '108234823498234');
const MISSING_KEY_ID = '01900000-0000-7000-8000-000000000000';

/**
 * Every API route, by OpenAPI path, with the role it needs, a request that a key holding
 * that role may make, and what a key restricted to another application gets.
 */
interface RouteRow {
  method: string;
  path: string;
  role: Role;
  /** The concrete request; `adminKeyId` is the id of ctx.adminKey. */
  request: (adminKeyId: string) => { path: string; body?: unknown };
  /** What an all-roles key restricted to another application gets. */
  restricted: 'forbidden' | 'served';
}

const ROUTES: RouteRow[] = [
  {
    method: 'POST',
    path: '/applications',
    role: 'applications:write',
    request: () => ({ path: '/applications', body: applicationBody({ client_id: 'a' }) }),
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/applications',
    role: 'applications:read',
    request: () => ({ path: '/applications' }),
    restricted: 'served',
  },
  {
    method: 'GET',
    path: '/applications/{client_id}',
    role: 'applications:read',
    request: () => ({ path: '/applications/a' }),
    restricted: 'forbidden',
  },
  {
    method: 'PUT',
    path: '/applications/{client_id}',
    role: 'applications:write',
    request: () => ({ path: '/applications/a', body: { display_name: 'A', description: '' } }),
    restricted: 'forbidden',
  },
  {
    method: 'PATCH',
    path: '/applications/{client_id}',
    role: 'applications:write',
    request: () => ({ path: '/applications/a', body: { description: 'patched' } }),
    restricted: 'forbidden',
  },
  {
    method: 'DELETE',
    path: '/applications/{client_id}',
    role: 'applications:write',
    request: () => ({ path: '/applications/a' }),
    restricted: 'forbidden',
  },
  {
    method: 'POST',
    path: '/applications/{client_id}/users',
    role: 'users:write',
    request: () => ({ path: '/applications/a/users', body: userBody() }),
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/applications/{client_id}/users',
    role: 'users:read',
    request: () => ({ path: '/applications/a/users' }),
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/applications/{client_id}/users/{provider}/{identifier}',
    role: 'users:read',
    request: () => ({ path: USER }),
    restricted: 'forbidden',
  },
  {
    method: 'PUT',
    path: '/applications/{client_id}/users/{provider}/{identifier}',
    role: 'users:write',
    request: () => ({ path: USER, body: userBody() }),
    restricted: 'forbidden',
  },
  {
    method: 'PATCH',
    path: '/applications/{client_id}/users/{provider}/{identifier}',
    role: 'users:write',
    request: () => ({ path: USER, body: { name: 'Ada' } }),
    restricted: 'forbidden',
  },
  {
    method: 'DELETE',
    path: '/applications/{client_id}/users/{provider}/{identifier}',
    role: 'users:write',
    request: () => ({ path: USER }),
    restricted: 'forbidden',
  },
  {
    method: 'POST',
    path: '/api-keys',
    role: 'keys:write',
    // Unrestricted (applications omitted), so a restricted caller may not create it; the
    // role is keys:write so that a key holding only keys:write may grant it.
    request: () => ({ path: '/api-keys', body: { name: 'probe', roles: ['keys:write'] } }),
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/api-keys',
    role: 'keys:read',
    request: () => ({ path: '/api-keys' }),
    restricted: 'served',
  },
  {
    method: 'GET',
    path: '/api-keys/{id}',
    role: 'keys:read',
    request: (adminKeyId) => ({ path: `/api-keys/${adminKeyId}` }),
    // Served, as 404: the admin key lies outside the caller's restriction.
    restricted: 'served',
  },
  {
    method: 'DELETE',
    path: '/api-keys/{id}',
    role: 'keys:write',
    request: () => ({ path: `/api-keys/${MISSING_KEY_ID}` }),
    restricted: 'served',
  },
  {
    method: 'POST',
    path: '/api-keys/{id}/rotate',
    role: 'keys:write',
    request: () => ({ path: `/api-keys/${MISSING_KEY_ID}/rotate`, body: {} }),
    restricted: 'served',
  },
  {
    method: 'GET',
    path: '/signing-keys',
    role: 'keys:read',
    request: () => ({ path: '/signing-keys' }),
    restricted: 'served',
  },
  {
    method: 'GET',
    path: '/signing-keys/{kid}',
    role: 'keys:read',
    request: () => ({ path: '/signing-keys/no-such-kid' }),
    restricted: 'served',
  },
  {
    method: 'POST',
    path: '/signing-keys/rotate',
    role: 'keys:write',
    request: () => ({ path: '/signing-keys/rotate' }),
    // Signing keys serve every application: a restricted key may not add one.
    restricted: 'forbidden',
  },
  {
    method: 'POST',
    path: '/signing-keys/{kid}/revoke',
    role: 'keys:write',
    request: () => ({ path: '/signing-keys/no-such-kid/revoke' }),
    // Signing keys serve every application: a restricted key may not revoke one.
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/events',
    role: 'events:read',
    request: () => ({ path: '/events' }),
    // Served, showing only the events of the key's own applications.
    restricted: 'served',
  },
  {
    method: 'POST',
    path: '/webhooks',
    role: 'webhooks:write',
    request: () => ({
      path: '/webhooks',
      body: { url: 'https://hooks.example.com/x', event_types: ['user.*'] },
    }),
    // A webhook for every application: a restricted key must name its own in client_ids.
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/webhooks',
    role: 'webhooks:read',
    request: () => ({ path: '/webhooks' }),
    // Served, listing only webhooks confined to the key's own applications.
    restricted: 'served',
  },
  ...(
    [
      ['GET', '/webhooks/{id}', 'webhooks:read', '', undefined],
      ['PATCH', '/webhooks/{id}', 'webhooks:write', '', {}],
      ['DELETE', '/webhooks/{id}', 'webhooks:write', '', undefined],
      ['POST', '/webhooks/{id}/rotate-secret', 'webhooks:write', '/rotate-secret', undefined],
      ['POST', '/webhooks/{id}/replay', 'webhooks:write', '/replay', { after: null }],
      ['GET', '/webhooks/{id}/deliveries', 'webhooks:read', '/deliveries', undefined],
    ] as const
  ).map(([method, path, role, suffix, body]) => ({
    method,
    path,
    role,
    request: () => ({
      path: `/webhooks/no-such-webhook${suffix}`,
      ...(body === undefined ? {} : { body }),
    }),
    // Served, as 404: a webhook outside the caller's applications does not exist for it.
    restricted: 'served' as const,
  })),
  {
    method: 'POST',
    path: '/applications/{client_id}/users/import',
    role: 'users:write',
    // A line that is no user: at most an error line of a job, no user made.
    request: () => ({ path: '/applications/a/users/import', body: {} }),
    restricted: 'forbidden',
  },
  {
    method: 'GET',
    path: '/applications/{client_id}/users/export',
    role: 'users:read',
    request: () => ({ path: '/applications/a/users/export' }),
    restricted: 'forbidden',
  },
  ...(
    [
      ['GET', '/imports/{id}', 'users:read', ''],
      ['GET', '/imports/{id}/errors', 'users:read', '/errors'],
      ['DELETE', '/imports/{id}', 'users:write', ''],
    ] as const
  ).map(([method, path, role, suffix]) => ({
    method,
    path,
    role,
    request: () => ({ path: `/imports/${MISSING_KEY_ID}${suffix}` }),
    // Served, as 404: a job of an application outside the caller's does not exist for it.
    restricted: 'served' as const,
  })),
  {
    method: 'POST',
    path: '/applications/{client_id}/users/{provider}/{identifier}/tokens',
    role: 'tokens:write',
    request: () => ({ path: `${USER}/tokens` }),
    restricted: 'forbidden',
  },
  {
    method: 'POST',
    path: '/applications/{client_id}/external-tokens/validate',
    role: 'applications:read',
    request: () => ({ path: '/applications/a/external-tokens/validate', body: { token: 'x.y.z' } }),
    restricted: 'forbidden',
  },
];

const label = (row: RouteRow) => `${row.method} ${row.path}`;

/** AuthZEN's routes: each needs decisions:read (their matrix is in test/authzen.test.ts). */
const AUTHZEN_ROUTES = [
  'POST /access/v1/evaluation',
  'POST /access/v1/evaluations',
  'POST /access/v1/search/subject',
  'POST /access/v1/search/resource',
  'POST /access/v1/search/action',
];

/**
 * Routes outside the API that anyone may call: health, metrics, the API documentation, token
 * discovery, and the token endpoint (whose credential is the outside ID token).
 */
const PUBLIC_ROUTES = [
  'GET /',
  'GET /.well-known/authzen-configuration',
  'GET /.well-known/jwks.json',
  'GET /.well-known/openid-configuration',
  'POST /oauth2/token',
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /openapi.json',
  'GET /docs',
  'GET /docs/',
  'GET /docs/static/index.html',
  'GET /docs/static/swagger-initializer.js',
  'GET /docs/*',
  'GET /docs/json',
  'GET /docs/yaml',
];

function assertAuthorized(response: LightMyRequestResponse): void {
  assert.ok(
    response.statusCode !== 401 && response.statusCode !== 403 && response.statusCode < 500,
    `expected the request to be served, got ${response.statusCode}: ${response.body}`,
  );
}

describe('authorization of every API route', () => {
  let ctx: TestContext;
  let adminKeyId: string;
  const keys = {} as Record<Role | 'unknown' | 'revoked' | 'expired' | 'restricted', string>;
  const unauthenticatedDetails = new Set<string>();

  before(async () => {
    ctx = await buildTestApp();
    adminKeyId = (await ctx.services.authenticator.authenticate(ctx.adminKey))!.id;
    await createApplication(ctx, { client_id: 'a' });
    await createUser(ctx, 'a');
    for (const role of ROLES) keys[role] = await ctx.createKey({ roles: [role], name: role });
    keys.unknown = `tsr_${'A'.repeat(43)}`;
    keys.restricted = await ctx.createKey({ applications: ['other'] });
    const doomed = await call(ctx, 'POST', '/api-keys', {
      body: { name: 'doomed', roles: [...ROLES] },
    });
    keys.revoked = doomed.json<{ key: string }>().key;
    assert.equal(
      (await call(ctx, 'DELETE', `/api-keys/${doomed.json<{ id: string }>().id}`)).statusCode,
      204,
    );
    keys.expired = await ctx.createKey({ expiresAt: ctx.clock.now() + 1_000 });
    ctx.clock.advance(1_000);
  });
  after(() => ctx.close());

  it('has a row for every route the app registers under /iam/api/v1, and no other', () => {
    const registered = registeredRoutes(ctx.app)
      .filter((route) => route.startsWith(`${API}/`) || route.includes(` ${API}/`))
      .map((route) => route.replace(` ${API}/`, ' /'))
      .sort();
    assert.deepEqual(registered, ROUTES.map(label).sort());
  });

  it('documents exactly those routes in the OpenAPI document', () => {
    const document = ctx.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(document.paths)
      .filter(([path]) => path.startsWith(`${API}/`))
      .flatMap(([path, operations]) =>
        Object.keys(operations).map(
          (method) => `${method.toUpperCase()} ${path.slice(API.length)}`,
        ),
      )
      .sort();
    assert.deepEqual(documented, ROUTES.map(label).sort());
  });

  it('registers no other route than the API, SCIM, AuthZEN and the public operational ones', async () => {
    // SCIM's routes have their own matrix: test/scim-authorization.test.ts.
    // The console's routes are session-guarded: the next test.
    const others = registeredRoutes(ctx.app).filter(
      (route) =>
        !route.includes(` ${API}/`) &&
        !route.includes(' /scim/v2/') &&
        !route.includes(' /console') &&
        !AUTHZEN_ROUTES.includes(route),
    );
    assert.deepEqual(
      registeredRoutes(ctx.app)
        .filter((route) => route.includes(' /access/'))
        .sort(),
      [...AUTHZEN_ROUTES].sort(),
    );
    assert.deepEqual(others.sort(), [...PUBLIC_ROUTES].sort());
    // Public means public: answered without asking for a key.
    for (const route of PUBLIC_ROUTES.filter((candidate) => !candidate.includes('*'))) {
      const [method, path] = route.split(' ') as [string, string];
      const response = await call(ctx, method, `/${path}`, { key: null });
      assert.ok(response.statusCode < 500, `${route}: ${response.statusCode}`);
      assert.notEqual(response.statusCode, 401, route);
      assert.equal(response.headers['www-authenticate'], undefined, route);
      if (method === 'GET') assert.ok([200, 302].includes(response.statusCode), route);
    }
  });

  it('serves the console only to a session, but for its sign-in and its assets', async () => {
    const consoleRoutes = registeredRoutes(ctx.app).filter((route) => route.includes(' /console'));
    const open = ['GET /console/sign-in', 'POST /console/sign-in', 'GET /console/assets/{name}'];
    assert.ok(consoleRoutes.length > 10, consoleRoutes.join(', '));
    for (const route of consoleRoutes.filter((candidate) => !open.includes(candidate))) {
      const [method, template] = route.split(' ') as [string, string];
      const path = template.replace(/\{[a-z_]+\}/g, 'x');
      // An API key is no console session.
      const response = await call(ctx, method, `/${path}`, {
        ...(method === 'POST'
          ? { rawBody: 'a=1', contentType: 'application/x-www-form-urlencoded' }
          : {}),
      });
      if (method === 'GET') {
        assert.equal(response.statusCode, 303, route);
        assert.equal(response.headers.location, '/console/sign-in', route);
      } else {
        assert.equal(response.statusCode, 401, route);
      }
    }
  });

  for (const row of ROUTES) {
    describe(label(row), () => {
      const send = (authorization: string | null) => {
        const { path, body } = row.request(adminKeyId);
        return call(ctx, row.method, path, {
          key: null,
          body,
          headers: authorization === null ? {} : { authorization },
        });
      };

      it('answers 401 with WWW-Authenticate: apikey to missing or bad credentials', async () => {
        const cases: [string, string | null][] = [
          ['no Authorization header', null],
          ['the scheme alone', 'apikey'],
          ['another scheme', 'Basic xyz'],
          ['a valid key under Bearer', `Bearer ${ctx.adminKey}`],
          ['a valid key followed by more text', `apikey  ${ctx.adminKey} extra`],
          ['an unknown key', `apikey ${keys.unknown}`],
          ['a revoked key', `apikey ${keys.revoked}`],
          ['an expired key', `apikey ${keys.expired}`],
        ];
        for (const [name, authorization] of cases) {
          const response = await send(authorization);
          const problem = problemOf(response, 401);
          assert.equal(response.headers['www-authenticate'], 'apikey', name);
          assert.equal(problem.instance, `${API}${row.request(adminKeyId).path}`);
          unauthenticatedDetails.add(problem.detail);
        }
      });

      it(`answers 403 to a key holding only another role than ${row.role}`, async () => {
        for (const role of ROLES.filter((other) => other !== row.role)) {
          const response = await send(`apikey ${keys[role]}`);
          problemOf(response, 403);
          assert.equal(response.headers['www-authenticate'], undefined, role);
        }
      });

      it(`serves a key holding only ${row.role}`, async () => {
        assertAuthorized(await send(`apikey ${keys[row.role]}`));
      });

      it('serves an all-roles key, with any case of the scheme and several spaces', async () => {
        for (const scheme of ['apikey ', 'APIKEY ', 'ApiKey ', 'apikey   ']) {
          assertAuthorized(await send(`${scheme}${ctx.adminKey}`));
        }
      });

      it(
        row.restricted === 'forbidden'
          ? 'answers 403 to a key restricted to another application'
          : 'serves a key restricted to another application',
        async () => {
          const response = await send(`apikey ${keys.restricted}`);
          if (row.restricted === 'forbidden') problemOf(response, 403);
          else assertAuthorized(response);
        },
      );

      if (row.method === 'GET') {
        it('guards HEAD, which Fastify exposes for every GET, with the same role', async () => {
          const { path } = row.request(adminKeyId);
          const anonymous = await call(ctx, 'HEAD', path, { key: null });
          assert.equal(anonymous.statusCode, 401);
          assert.equal(anonymous.headers['www-authenticate'], 'apikey');
          const otherRole = ROLES.find((role) => role !== row.role)!;
          assert.equal((await call(ctx, 'HEAD', path, { key: keys[otherRole] })).statusCode, 403);
          assertAuthorized(await call(ctx, 'HEAD', path, { key: keys[row.role] }));
        });
      }
    });
  }

  it('gives the same detail for every 401, whatever the cause', () => {
    assert.equal(unauthenticatedDetails.size, 1, [...unauthenticatedDetails].join(' | '));
  });
});

describe('application restriction', () => {
  let ctx: TestContext;
  let restricted: string;
  before(async () => {
    ctx = await buildTestApp();
    for (const clientId of ['a', 'b', 'c', 'd'])
      await createApplication(ctx, { client_id: clientId });
    await createUser(ctx, 'b');
    restricted = await ctx.createKey({ applications: ['a', 'c', 'ghost'] });
  });
  after(() => ctx.close());

  it('lists only the allowed applications, and counts only them', async () => {
    const response = await call(ctx, 'GET', '/applications?include_total=true', {
      key: restricted,
    });
    assert.equal(response.statusCode, 200);
    const page = response.json<{
      items: { client_id: string }[];
      total: number;
      next_cursor: null;
    }>();
    assert.deepEqual(
      page.items.map((item) => item.client_id),
      ['a', 'c'],
    );
    assert.equal(page.total, 2);
    assert.equal(page.next_cursor, null);
  });

  it('pages through only the allowed applications', async () => {
    const first = await call(ctx, 'GET', '/applications?limit=1', { key: restricted });
    const page = first.json<{ items: { client_id: string }[]; next_cursor: string }>();
    assert.deepEqual(
      page.items.map((item) => item.client_id),
      ['a'],
    );
    const second = await call(
      ctx,
      'GET',
      `/applications?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`,
      { key: restricted },
    );
    const rest = second.json<{ items: { client_id: string }[]; next_cursor: string | null }>();
    assert.deepEqual(
      rest.items.map((item) => item.client_id),
      ['c'],
    );
  });

  it('decides 403 before lookup: an application that does not exist is still 403', async () => {
    const paths = [
      ['GET', '/applications/nowhere'],
      ['DELETE', '/applications/nowhere'],
      ['GET', '/applications/nowhere/users'],
      ['GET', userPath('nowhere', 'google_oauth2', 'x')],
      ['DELETE', userPath('nowhere', 'google_oauth2', 'x')],
    ] as const;
    for (const [method, path] of paths) {
      const existing = await call(ctx, method, path.replace('nowhere', 'b'), { key: restricted });
      const missing = await call(ctx, method, path, { key: restricted });
      const existingProblem = problemOf(existing, 403);
      const missingProblem = problemOf(missing, 403);
      assert.equal(missingProblem.detail, existingProblem.detail);
    }
    problemOf(
      await call(ctx, 'POST', '/applications', {
        key: restricted,
        body: applicationBody({ client_id: 'nowhere' }),
      }),
      403,
    );
  });

  it('serves an allowed application, and 404 for an allowed one that does not exist', async () => {
    assert.equal((await call(ctx, 'GET', '/applications/c', { key: restricted })).statusCode, 200);
    problemOf(await call(ctx, 'GET', '/applications/ghost', { key: restricted }), 404);
    const created = await call(ctx, 'POST', '/applications', {
      key: restricted,
      body: applicationBody({ client_id: 'ghost' }),
    });
    assert.equal(created.statusCode, 201);
  });
});

describe('routing without credentials', () => {
  const ctx = useTestApp();

  it('answers 404 to an unknown route, without asking for a key', async () => {
    const response = await call(ctx, 'GET', '/nope', { key: null });
    const problem = problemOf(response, 404);
    assert.equal(problem.instance, `${API}/nope`);
    assert.equal(response.headers['www-authenticate'], undefined);
  });

  it('authenticates before reading the body: a malformed body gets 401, or 403 without the role', async () => {
    const badBody = { rawBody: '{"client_id": ', contentType: 'application/json' };
    const anonymous = await call(ctx, 'POST', '/applications', { key: null, ...badBody });
    problemOf(anonymous, 401);
    const reader = await ctx.createKey({ roles: ['applications:read'] });
    problemOf(await call(ctx, 'POST', '/applications', { key: reader, ...badBody }), 403);
    problemOf(await call(ctx, 'POST', '/applications', badBody), 400);
  });

  it('answers 405 with Allow to another method on a known path', async () => {
    const response = await call(ctx, 'POST', '/api-keys/some-id', { key: null });
    problemOf(response, 405);
    assert.equal(response.headers.allow, 'DELETE, GET, HEAD');
  });
});

describe('rate limiting', () => {
  const ctx = useTestApp({ rateLimitPerMinute: 5 });

  it('answers 429 with Retry-After to the sixth request in a minute from one key', async () => {
    const busy = await ctx.createKey({ roles: ['applications:read'] });
    for (let request = 1; request <= 5; request += 1) {
      const response = await call(ctx, 'GET', '/applications', { key: busy });
      assert.equal(response.statusCode, 200, `request ${request}`);
      assert.equal(response.headers['ratelimit-limit'], '5');
      assert.equal(response.headers['ratelimit-remaining'], String(5 - request));
    }
    const limited = await call(ctx, 'GET', '/applications', { key: busy });
    const problem = problemOf(limited, 429);
    assert.equal(problem.instance, `${API}/applications`);
    assert.match(String(limited.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.ok(Number(limited.headers['retry-after']) <= 60);
    assert.equal(limited.headers['ratelimit-limit'], '5');
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.match(String(limited.headers['ratelimit-reset']), /^[0-9]+$/);
  });

  it('still serves another key', async () => {
    const other = await ctx.createKey({ roles: ['applications:read'] });
    assert.equal((await call(ctx, 'GET', '/applications', { key: other })).statusCode, 200);
  });
});
