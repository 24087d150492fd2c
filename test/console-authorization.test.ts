// tessera-test: both-stores
// Who may use each admin console route. Every route declares it (`config.role`, as the API's
// routes do, or `consolePublic`) and one hook checks it; this table is the spec, and the walk
// of the registered routes fails for a route that is missing from it or declares otherwise.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import Fastify, { type RouteOptions } from 'fastify';
import { AuthFailureLimiter } from '../src/http/auth-failures.js';
import { registerConsole, requireDeclaredAccess } from '../src/modules/console/console.routes.js';
import { ROLES, type Role } from '../src/roles.js';
import { ConsoleClient } from './console-client.js';
import {
  type TestContext,
  buildTestApp,
  createApplication,
  createUser,
  registeredRoutes,
} from './helpers.js';

/** Who may use a route: anyone, any signed-in key, or a key holding every one of these roles. */
type Access = 'public' | Role[];

interface ConsoleRoute {
  method: 'GET' | 'POST';
  path: string;
  access: Access;
  /** A request that a key holding exactly `access` is served (not 401, 403 or 5xx). */
  request: (ids: Fixtures) => { path: string; fields?: Record<string, string> };
}

interface Fixtures {
  userId: string;
}

const MISSING_ID = '01900000-0000-7000-8000-000000000000';
const USERS = '/console/applications/a/users';

const ROUTES: ConsoleRoute[] = [
  {
    method: 'GET',
    path: '/console/assets/{name}',
    access: 'public',
    request: () => ({ path: '/console/assets/console.css' }),
  },
  {
    method: 'GET',
    path: '/console/sign-in',
    access: 'public',
    request: () => ({ path: '/console/sign-in' }),
  },
  {
    method: 'POST',
    path: '/console/sign-in',
    access: 'public',
    request: () => ({ path: '/console/sign-in', fields: { key: '' } }),
  },
  { method: 'GET', path: '/console', access: [], request: () => ({ path: '/console' }) },
  {
    method: 'GET',
    path: '/console/account',
    access: [],
    request: () => ({ path: '/console/account' }),
  },
  {
    method: 'GET',
    path: '/console/users',
    access: ['users:read'],
    request: () => ({ path: '/console/users' }),
  },
  {
    method: 'POST',
    path: '/console/sign-out',
    access: [],
    request: () => ({ path: '/console/sign-out', fields: {} }),
  },

  {
    method: 'GET',
    path: '/console/applications',
    access: ['applications:read'],
    request: () => ({ path: '/console/applications' }),
  },
  {
    method: 'GET',
    path: '/console/applications/new',
    access: ['applications:write'],
    request: () => ({ path: '/console/applications/new' }),
  },
  {
    method: 'POST',
    path: '/console/applications',
    access: ['applications:write'],
    request: () => ({ path: '/console/applications', fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}',
    access: ['applications:read'],
    request: () => ({ path: '/console/applications/a' }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}',
    access: ['applications:write'],
    request: () => ({ path: '/console/applications/a', fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/delete',
    access: ['applications:write'],
    request: () => ({ path: '/console/applications/a/delete', fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/dry-run',
    access: ['applications:read'],
    request: () => ({ path: '/console/applications/a/dry-run', fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/authorization',
    access: ['applications:write'],
    request: () => ({ path: '/console/applications/a/authorization', fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/decision',
    access: ['applications:read', 'decisions:read'],
    request: () => ({ path: '/console/applications/a/decision', fields: {} }),
  },

  {
    method: 'GET',
    path: '/console/applications/{client_id}/users',
    access: ['users:read'],
    request: () => ({ path: USERS }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/export',
    access: ['users:read'],
    request: () => ({ path: `${USERS}/export` }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/new',
    access: ['users:write'],
    request: () => ({ path: `${USERS}/new` }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users',
    access: ['users:write'],
    request: () => ({ path: USERS, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/{id}',
    access: ['users:read'],
    request: ({ userId }) => ({ path: `${USERS}/${userId}` }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/{id}',
    access: ['users:write'],
    request: ({ userId }) => ({ path: `${USERS}/${userId}`, fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/{id}/active',
    access: ['users:write'],
    request: ({ userId }) => ({ path: `${USERS}/${userId}/active`, fields: { active: 'true' } }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/{id}/delete',
    access: ['users:write'],
    request: ({ userId }) => ({ path: `${USERS}/${userId}/delete`, fields: {} }),
  },

  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/import',
    access: ['users:write'],
    request: () => ({ path: `${USERS}/import` }),
  },
  // Sent as a plain form here (415): the upload itself is in console-imports.test.ts.
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/import',
    access: ['users:write'],
    request: () => ({ path: `${USERS}/import`, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/imports/{id}',
    access: ['users:read'],
    request: () => ({ path: `${USERS}/imports/${MISSING_ID}` }),
  },
  {
    method: 'GET',
    path: '/console/applications/{client_id}/users/imports/{id}/progress',
    access: ['users:read'],
    request: () => ({ path: `${USERS}/imports/${MISSING_ID}/progress` }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/imports/{id}/run',
    access: ['users:write'],
    request: () => ({ path: `${USERS}/imports/${MISSING_ID}/run`, fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/applications/{client_id}/users/imports/{id}/cancel',
    access: ['users:write'],
    request: () => ({ path: `${USERS}/imports/${MISSING_ID}/cancel`, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/api-keys',
    access: ['keys:read'],
    request: () => ({ path: '/console/api-keys' }),
  },
  {
    method: 'POST',
    path: '/console/api-keys',
    access: ['keys:read', 'keys:write'],
    request: () => ({ path: '/console/api-keys', fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/api-keys/{id}/rotate',
    access: ['keys:write'],
    request: () => ({ path: `/console/api-keys/${MISSING_ID}/rotate`, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/api-keys/{id}/revoke',
    access: ['keys:read', 'keys:write'],
    request: () => ({ path: `/console/api-keys/${MISSING_ID}/revoke` }),
  },
  {
    method: 'POST',
    path: '/console/api-keys/{id}/revoke',
    access: ['keys:read', 'keys:write'],
    request: () => ({ path: `/console/api-keys/${MISSING_ID}/revoke`, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/signing-keys',
    access: ['keys:read'],
    request: () => ({ path: '/console/signing-keys' }),
  },
  {
    method: 'POST',
    path: '/console/signing-keys/rotate',
    access: ['keys:write'],
    request: () => ({ path: '/console/signing-keys/rotate', fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/signing-keys/{kid}/revoke',
    access: ['keys:read', 'keys:write'],
    request: () => ({ path: '/console/signing-keys/0000/revoke' }),
  },
  {
    method: 'POST',
    path: '/console/signing-keys/{kid}/revoke',
    access: ['keys:read', 'keys:write'],
    request: () => ({ path: '/console/signing-keys/0000/revoke', fields: {} }),
  },

  {
    method: 'GET',
    path: '/console/events',
    access: ['events:read'],
    request: () => ({ path: '/console/events' }),
  },
  // An unreadable filter answers at once, where a good one would wait for new events.
  {
    method: 'GET',
    path: '/console/events/live',
    access: ['events:read'],
    request: () => ({ path: '/console/events/live?since=yesterday' }),
  },
  {
    method: 'GET',
    path: '/console/events/{id}',
    access: ['events:read'],
    request: () => ({ path: '/console/events/0000000000000001' }),
  },

  {
    method: 'GET',
    path: '/console/webhooks',
    access: ['webhooks:read'],
    request: () => ({ path: '/console/webhooks' }),
  },
  {
    method: 'POST',
    path: '/console/webhooks',
    access: ['webhooks:read', 'webhooks:write'],
    request: () => ({ path: '/console/webhooks', fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/webhooks/{id}',
    access: ['webhooks:read'],
    request: () => ({ path: `/console/webhooks/${MISSING_ID}` }),
  },
  {
    method: 'POST',
    path: '/console/webhooks/{id}/enabled',
    access: ['webhooks:write'],
    request: () => ({ path: `/console/webhooks/${MISSING_ID}/enabled`, fields: {} }),
  },
  {
    method: 'POST',
    path: '/console/webhooks/{id}/replay',
    access: ['webhooks:write'],
    request: () => ({ path: `/console/webhooks/${MISSING_ID}/replay`, fields: {} }),
  },
  {
    method: 'GET',
    path: '/console/webhooks/{id}/delete',
    access: ['webhooks:read', 'webhooks:write'],
    request: () => ({ path: `/console/webhooks/${MISSING_ID}/delete` }),
  },
  {
    method: 'POST',
    path: '/console/webhooks/{id}/delete',
    access: ['webhooks:read', 'webhooks:write'],
    request: () => ({ path: `/console/webhooks/${MISSING_ID}/delete`, fields: {} }),
  },
];

const label = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

/** What a route declares, in the table's terms, or null when it declares nothing. */
function declaredAccess(route: RouteOptions): Access | null {
  if (route.config?.consolePublic === true) return 'public';
  const role = route.config?.role;
  return role === undefined ? null : [role].flat();
}

describe('authorization of every console route', () => {
  let ctx: TestContext;
  let fixtures: Fixtures;
  /** For each role, a key holding every role but that one. */
  const allBut = {} as Record<Role, string>;
  let restricted: string;

  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx, { client_id: 'a' });
    const user = await createUser(ctx, 'a');
    fixtures = { userId: user.id as string };
    for (const role of ROLES) {
      allBut[role] = await ctx.createKey({ roles: ROLES.filter((other) => other !== role) });
    }
    restricted = await ctx.createKey({ applications: ['other'] });
  });
  after(() => ctx.close());

  /** A signed-in browser holding this key, with the CSRF token of a page every key may see. */
  async function signedIn(key: string): Promise<ConsoleClient> {
    const client = new ConsoleClient(ctx);
    assert.equal((await client.signIn(key)).statusCode, 303);
    assert.equal((await client.get('/console/account')).statusCode, 200);
    return client;
  }

  async function send(client: ConsoleClient, route: ConsoleRoute) {
    const { path, fields } = route.request(fixtures);
    return route.method === 'GET' ? client.get(path) : client.post(path, fields ?? {});
  }

  it('has a row for every route the app registers under /console, and no other', () => {
    // `/console` is served with and without its trailing slash: one row.
    const registered = registeredRoutes(ctx.app)
      .filter((route) => / \/console(\/|$)/.test(route))
      .map((route) => route.replace(/\/$/, ''));
    assert.deepEqual([...new Set(registered)].sort(), ROUTES.map(label).sort());
  });

  it('declares on every route what its row says (a route that declares nothing fails here)', async () => {
    const declared = new Map<string, Access | null>();
    const walked = Fastify();
    walked.addHook('onRoute', function collect(route) {
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue;
        const path = route.url.replace(/\/$/, '').replace(/:([a-z_]+)/g, '{$1}');
        declared.set(`${method} ${path}`, declaredAccess(route));
      }
    });
    await registerConsole(walked, {
      services: ctx.services,
      sessions: ctx.services.consoleSessions,
      clock: ctx.clock,
      failures: new AuthFailureLimiter({ perMinute: 0, purpose: 'console' }),
      oidc: null,
    });
    await walked.close();
    assert.deepEqual(
      Object.fromEntries([...declared].sort()),
      Object.fromEntries(ROUTES.map((route) => [label(route), route.access]).sort()),
    );
  });

  it('refuses to build a console route that declares no role', async () => {
    const app = Fastify();
    await assert.rejects(async () => {
      await app.register(async function undeclared(scope) {
        scope.addHook('onRoute', requireDeclaredAccess);
        scope.get('/forgotten', function forgotten() {
          return 'open to any session';
        });
      });
    }, /The console route GET \/forgotten declares no role/);
    await app.close();
  });

  it('answers 403 to a key that lacks any one of a route’s roles, naming it', async () => {
    for (const route of ROUTES) {
      if (route.access === 'public') continue;
      for (const role of route.access) {
        const response = await send(await signedIn(allBut[role]), route);
        assert.equal(response.statusCode, 403, `${label(route)} without ${role}`);
        assert.match(response.body, new RegExp(`lacks the role ${role}`), label(route));
      }
    }
  });

  it('serves a key holding exactly a route’s roles', async () => {
    for (const route of ROUTES) {
      const client =
        route.access === 'public'
          ? new ConsoleClient(ctx)
          : await signedIn(await ctx.createKey({ roles: route.access }));
      const response = await send(client, route);
      assert.ok(
        ![401, 403].includes(response.statusCode) && response.statusCode < 500,
        `${label(route)} answered ${response.statusCode}`,
      );
    }
  });

  it('answers 403 to a key restricted to other applications on every route of one application', async () => {
    const ofOne = ROUTES.filter((route) => route.path.includes('{client_id}'));
    assert.ok(ofOne.length > 0);
    for (const route of ofOne) {
      const response = await send(await signedIn(restricted), route);
      assert.equal(response.statusCode, 403, label(route));
      assert.match(response.body, /restricted to other applications/, label(route));
    }
  });
});
