// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import {
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  type TestContext,
  userBody,
  userPath,
} from './helpers.js';

const CLIENT = 'billing-web';
const PROVIDER = 'google_oauth2';
const USERS = `/applications/${CLIENT}/users`;

/** A Location or Link target is an absolute path; call() takes those with a leading '//'. */
function absolute(target: string): string {
  return `/${target}`;
}

function timestamp(ctx: TestContext): string {
  return new Date(ctx.clock.now()).toISOString();
}

describe('POST /applications/:client_id/users', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'crm' });
  });

  it('returns 201 with Location, a strong ETag and the full resource (avatar null when omitted)', async () => {
    const response = await call(ctx, 'POST', USERS, { body: userBody() });
    assert.equal(response.statusCode, 201);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(
      response.headers.location,
      `/iam/api/v1/applications/${CLIENT}/users/${PROVIDER}/108234823498234`,
    );
    assert.match(String(response.headers.etag), /^"[^"]+"$/);
    const { id, ...rest } = response.json<{ id: string }>();
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(rest, {
      identifier: '108234823498234',
      provider: PROVIDER,
      name: 'Ada Lovelace',
      avatar: null,
      email: 'ada@example.com',
      locale: 'en-GB',
      roles: ['admin'],
      scopes: ['org:acme'],
      active: true,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('keeps id and an inactive state through a PUT that leaves active out', async () => {
    const { path } = await createFreshUser(ctx, 'inactive-1', { active: false });
    const before = (await call(ctx, 'GET', path)).json<{ id: string; active: boolean }>();
    assert.equal(before.active, false);
    const {
      id: _id,
      identifier: _i,
      provider: _p,
      active: _a,
      ...body
    } = userBody({ name: 'Again' });
    const response = await call(ctx, 'PUT', path, { body: { ...body, id: 'ignored-echo' } });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(
      {
        id: response.json<{ id: string }>().id,
        active: response.json<{ active: boolean }>().active,
      },
      { id: before.id, active: false },
    );
    const patched = await call(ctx, 'PATCH', path, { body: { active: null } });
    assert.equal(patched.json<{ active: boolean }>().active, true);
    const listed = await call(ctx, 'GET', `${USERS}?active=false&limit=1000`);
    assert.ok(
      !listed.json<{ items: { id: string }[] }>().items.some((user) => user.id === before.id),
    );
  });

  it('percent-encodes provider and identifier in Location, and following it returns the same user', async () => {
    const identifier = 'CN=Ada Lovelace,OU=R&D,O=Example';
    const created = await call(ctx, 'POST', USERS, {
      body: userBody({ identifier, provider: 'azure_saml', avatar: 'https://example.com/a.png' }),
    });
    assert.equal(created.statusCode, 201);
    assert.equal(
      created.headers.location,
      `/iam/api/v1/applications/${CLIENT}/users/azure_saml/CN%3DAda%20Lovelace%2COU%3DR%26D%2CO%3DExample`,
    );
    const followed = await call(ctx, 'GET', absolute(String(created.headers.location)));
    assert.equal(followed.statusCode, 200);
    assert.deepEqual(followed.json(), created.json());
    assert.equal(followed.headers.etag, created.headers.etag);
    assert.equal(followed.json().avatar, 'https://example.com/a.png');
  });

  it('refuses a second user with the same (provider, identifier) in one application with 409', async () => {
    const body = userBody({ identifier: 'dup-1', name: 'First' });
    assert.equal((await call(ctx, 'POST', USERS, { body })).statusCode, 201);
    const second = await call(ctx, 'POST', USERS, { body: { ...body, name: 'Second' } });
    const problem = problemOf(second, 409);
    assert.equal(problem.instance, `/iam/api/v1${USERS}`);
    const stored = await call(ctx, 'GET', userPath(CLIENT, PROVIDER, 'dup-1'));
    assert.equal(stored.json().name, 'First');
  });

  it('accepts the same identifier under another provider as a different user', async () => {
    await createUser(ctx, CLIENT, { identifier: 'shared-id', provider: 'github_oauth2' });
    const other = await call(ctx, 'POST', USERS, {
      body: userBody({ identifier: 'shared-id', provider: 'gitlab_oauth2' }),
    });
    assert.equal(other.statusCode, 201);
  });

  it('treats the same (provider, identifier) in another application as a different user', async () => {
    await createUser(ctx, CLIENT, { identifier: 'twin', name: 'Billing twin' });
    const response = await call(ctx, 'POST', '/applications/crm/users', {
      body: userBody({ identifier: 'twin', name: 'CRM twin' }),
    });
    assert.equal(response.statusCode, 201);
    assert.equal(response.headers.location, `/iam/api/v1/applications/crm/users/${PROVIDER}/twin`);

    const patched = await call(ctx, 'PATCH', userPath('crm', PROVIDER, 'twin'), {
      body: { name: 'CRM twin renamed' },
    });
    assert.equal(patched.statusCode, 200);
    const billing = await call(ctx, 'GET', userPath(CLIENT, PROVIDER, 'twin'));
    assert.equal(billing.json().name, 'Billing twin');

    assert.equal((await call(ctx, 'DELETE', userPath('crm', PROVIDER, 'twin'))).statusCode, 204);
    assert.equal((await call(ctx, 'GET', userPath(CLIENT, PROVIDER, 'twin'))).statusCode, 200);
  });

  it('answers 404 when the application does not exist', async () => {
    const response = await call(ctx, 'POST', '/applications/no-such-app/users', {
      body: userBody(),
    });
    const problem = problemOf(response, 404);
    assert.equal(problem.instance, '/iam/api/v1/applications/no-such-app/users');
  });

  it('lets exactly one of 40 concurrent identical creates succeed; the others get 409', async () => {
    const body = userBody({ identifier: 'race' });
    const responses = await Promise.all(
      Array.from({ length: 40 }, () => call(ctx, 'POST', USERS, { body })),
    );
    const statuses = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(statuses, [201, ...Array<number>(39).fill(409)]);
    for (const response of responses.filter((r) => r.statusCode === 409)) problemOf(response, 409);
    const list = await call(ctx, 'GET', `${USERS}?provider=${PROVIDER}&limit=1000`);
    const races = list
      .json()
      .items.filter((user: { identifier: string }) => user.identifier === 'race');
    assert.equal(races.length, 1);
  });

  it("deletes an application's users with the application", async () => {
    await createApplication(ctx, { client_id: 'short-lived' });
    await createUser(ctx, 'short-lived', { identifier: 'gone-with-app' });
    assert.equal((await call(ctx, 'DELETE', '/applications/short-lived')).statusCode, 204);
    await createApplication(ctx, { client_id: 'short-lived' });
    const list = await call(ctx, 'GET', '/applications/short-lived/users');
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json().items, []);
    assert.equal(
      (await call(ctx, 'GET', userPath('short-lived', PROVIDER, 'gone-with-app'))).statusCode,
      404,
    );
  });
});

const AWKWARD_IDENTIFIERS = [
  'a/b',
  'a%2Fb',
  '100%',
  '%2F',
  'user@example.com',
  'CN=Ada Lovelace,OU=R&D,O=Example',
  'with space',
  'trailing space ',
  ' leading',
  '..hidden',
  'a/../b',
  '?query#frag',
  '+plus+',
  'with+space',
  '日本語',
  'émoji 🎉',
  '~tilde',
  'é/'.repeat(128),
  '🎉'.repeat(256),
];

describe('awkward identifiers through every user route', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  for (const identifier of AWKWARD_IDENTIFIERS) {
    it(`creates, reads, replaces and patches ${JSON.stringify(identifier.slice(0, 24))} exactly`, async () => {
      const path = userPath(CLIENT, PROVIDER, identifier);
      const created = await call(ctx, 'POST', USERS, { body: userBody({ identifier }) });
      assert.equal(created.statusCode, 201);
      assert.equal(created.json().identifier, identifier);
      assert.equal(created.headers.location, `/iam/api/v1${path}`);

      const read = await call(ctx, 'GET', path);
      assert.equal(read.statusCode, 200);
      assert.equal(read.json().identifier, identifier);

      // The body repeats the identifier: PUT succeeds only if the decoded path equals it.
      const replaced = await call(ctx, 'PUT', path, {
        body: userBody({ identifier, name: 'Replaced' }),
      });
      assert.equal(replaced.statusCode, 200);
      assert.equal(replaced.json().identifier, identifier);
      assert.equal(replaced.json().name, 'Replaced');

      const patched = await call(ctx, 'PATCH', path, { body: { identifier, name: 'Patched' } });
      assert.equal(patched.statusCode, 200);
      assert.equal(patched.json().identifier, identifier);
      assert.equal(patched.json().name, 'Patched');
    });
  }

  it('lists every awkward identifier exactly as created', async () => {
    const list = await call(ctx, 'GET', `${USERS}?limit=1000`);
    assert.equal(list.statusCode, 200);
    const listed = list.json().items.map((user: { identifier: string }) => user.identifier);
    assert.deepEqual([...listed].sort(), [...AWKWARD_IDENTIFIERS].sort());
  });

  for (const identifier of AWKWARD_IDENTIFIERS) {
    it(`deletes ${JSON.stringify(identifier.slice(0, 24))} and only it`, async () => {
      const path = userPath(CLIENT, PROVIDER, identifier);
      const totalBefore = (await call(ctx, 'GET', `${USERS}?include_total=true`)).json().total;
      const deleted = await call(ctx, 'DELETE', path);
      assert.equal(deleted.statusCode, 204);
      assert.equal(deleted.body, '');
      problemOf(await call(ctx, 'GET', path), 404);
      assert.equal(
        (await call(ctx, 'GET', `${USERS}?include_total=true`)).json().total,
        totalBefore - 1,
      );
    });
  }
});

describe('GET /applications/:client_id/users/:provider/:identifier', () => {
  let ctx: TestContext;
  let etag: string;
  const path = userPath(CLIENT, PROVIDER, 'reader');
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    const created = await call(ctx, 'POST', USERS, { body: userBody({ identifier: 'reader' }) });
    etag = String(created.headers.etag);
  });
  after(() => ctx.close());

  it('returns 200 with the ETag given at creation', async () => {
    const response = await call(ctx, 'GET', path);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers.etag, etag);
  });

  for (const header of ['current', '*', 'W/current', '"other", current']) {
    it(`answers 304 with the ETag and no body for If-None-Match: ${header}`, async () => {
      const value = header.replace('current', etag);
      const response = await call(ctx, 'GET', path, { headers: { 'if-none-match': value } });
      assert.equal(response.statusCode, 304);
      assert.equal(response.headers.etag, etag);
      assert.equal(response.body, '');
    });
  }

  it('answers 200 with the body when If-None-Match names another ETag', async () => {
    const response = await call(ctx, 'GET', path, { headers: { 'if-none-match': '"stale"' } });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().identifier, 'reader');
  });
});

/** Creates a user with this identifier and returns where it lives and its first version. */
async function createFreshUser(
  ctx: TestContext,
  identifier: string,
  overrides: Record<string, unknown> = {},
) {
  const created = await call(ctx, 'POST', USERS, {
    body: userBody({ identifier, ...overrides }),
  });
  assert.equal(created.statusCode, 201);
  return {
    identifier,
    path: userPath(CLIENT, PROVIDER, identifier),
    created,
    etag: String(created.headers.etag),
  };
}

describe('PUT /applications/:client_id/users/:provider/:identifier', () => {
  let ctx: TestContext;
  let counter = 0;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
  });
  after(() => ctx.close());

  const freshUser = (overrides: Record<string, unknown> = {}) =>
    createFreshUser(ctx, `put-${++counter}`, overrides);

  it('replaces every member and resets an omitted avatar to null', async () => {
    const { identifier, path } = await freshUser({ avatar: 'https://example.com/a.png' });
    const body = {
      name: '  Grace Hopper ',
      email: 'grace@example.org',
      locale: 'en-US',
      roles: [],
      scopes: ['org:navy', 'team:cobol'],
    };
    const response = await call(ctx, 'PUT', path, { body });
    assert.equal(response.statusCode, 200);
    const { id, ...rest } = response.json<{ id: string }>();
    assert.equal(typeof id, 'string');
    assert.deepEqual(rest, {
      identifier,
      provider: PROVIDER,
      ...body,
      name: 'Grace Hopper',
      avatar: null,
      active: true,
      created_at: timestamp(ctx),
      updated_at: timestamp(ctx),
    });
    assert.deepEqual((await call(ctx, 'GET', path)).json(), response.json());
  });

  it('refuses a body without a required member, leaving the user unchanged', async () => {
    const { path } = await freshUser();
    const { email: _email, ...body } = userBody({ name: 'Changed' });
    const problem = problemOf(await call(ctx, 'PUT', path, { body }), 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/email'],
    );
    assert.equal((await call(ctx, 'GET', path)).json().name, 'Ada Lovelace');
  });

  it('accepts provider, identifier and client_id equal to the path', async () => {
    const { identifier, path } = await freshUser();
    const response = await call(ctx, 'PUT', path, {
      body: userBody({ identifier, client_id: CLIENT, name: 'Echoed' }),
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().name, 'Echoed');
  });

  for (const [member, value] of [
    ['provider', 'github_oauth2'],
    ['identifier', 'someone-else'],
    ['client_id', 'crm'],
  ] as const) {
    it(`refuses a ${member} that differs from the path with 400 at /${member}`, async () => {
      const { identifier, path } = await freshUser();
      const body = userBody({ identifier, name: 'Changed', [member]: value });
      const problem = problemOf(await call(ctx, 'PUT', path, { body }), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.pointer),
        [`/${member}`],
      );
      assert.equal((await call(ctx, 'GET', path)).json().name, 'Ada Lovelace');
    });
  }

  it('keeps updated_at and the ETag when a GET body is PUT back unchanged', async () => {
    const { path, etag } = await freshUser();
    ctx.clock.advance(60_000);
    const read = await call(ctx, 'GET', path);
    const response = await call(ctx, 'PUT', path, { body: read.json() });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers.etag, etag);
    assert.deepEqual(response.json(), read.json());
  });

  it('moves updated_at to now and changes the ETag when something changes', async () => {
    const { identifier, path, etag } = await freshUser();
    const createdAt = timestamp(ctx);
    ctx.clock.advance(5_000);
    const response = await call(ctx, 'PUT', path, { body: userBody({ identifier, locale: 'fr' }) });
    assert.equal(response.statusCode, 200);
    assert.notEqual(response.headers.etag, etag);
    assert.equal(response.json().created_at, createdAt);
    assert.equal(response.json().updated_at, timestamp(ctx));
    assert.equal((await call(ctx, 'GET', path)).headers.etag, response.headers.etag);
  });

  it('applies with If-Match of the current ETag or *', async () => {
    const { identifier, path, etag } = await freshUser();
    const first = await call(ctx, 'PUT', path, {
      body: userBody({ identifier, name: 'One' }),
      headers: { 'if-match': etag },
    });
    assert.equal(first.statusCode, 200);
    const second = await call(ctx, 'PUT', path, {
      body: userBody({ identifier, name: 'Two' }),
      headers: { 'if-match': '*' },
    });
    assert.equal(second.statusCode, 200);
    assert.equal(second.json().name, 'Two');
  });

  for (const label of ['a stale ETag', 'the weak form of the ETag', 'an unquoted ETag']) {
    it(`answers 412 for If-Match with ${label}, leaving the user unchanged`, async () => {
      const { identifier, path, etag } = await freshUser();
      let ifMatch = `W/${etag}`;
      if (label === 'an unquoted ETag') ifMatch = etag.slice(1, -1);
      if (label === 'a stale ETag') {
        ifMatch = etag;
        await call(ctx, 'PATCH', path, { body: { locale: 'de' } });
      }
      const previous = await call(ctx, 'GET', path);
      const response = await call(ctx, 'PUT', path, {
        body: userBody({ identifier, name: 'Lost' }),
        headers: { 'if-match': ifMatch },
      });
      problemOf(response, 412);
      const afterwards = await call(ctx, 'GET', path);
      assert.deepEqual(afterwards.json(), previous.json());
      assert.equal(afterwards.headers.etag, previous.headers.etag);
    });
  }

  it('lets exactly one of 20 concurrent PUTs with the same If-Match win; the rest get 412', async () => {
    const { identifier, path, etag } = await freshUser();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        call(ctx, 'PUT', path, {
          body: userBody({ identifier, name: `Writer ${index}` }),
          headers: { 'if-match': etag },
        }),
      ),
    );
    const statuses = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)]);
    const winner = responses.find((response) => response.statusCode === 200)!;
    const stored = await call(ctx, 'GET', path);
    assert.equal(stored.json().name, winner.json().name);
    assert.equal(stored.headers.etag, winner.headers.etag);
  });
});

describe('PATCH /applications/:client_id/users/:provider/:identifier', () => {
  let ctx: TestContext;
  let counter = 0;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
  });
  after(() => ctx.close());

  const freshUser = (overrides: Record<string, unknown> = {}) =>
    createFreshUser(ctx, `patch-${++counter}`, overrides);

  it('resets avatar to null with null and leaves the other members alone', async () => {
    const { path, created } = await freshUser({ avatar: 'https://example.com/a.png' });
    ctx.clock.advance(1_000);
    const response = await call(ctx, 'PATCH', path, { body: { avatar: null } });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), {
      ...created.json(),
      avatar: null,
      updated_at: timestamp(ctx),
    });
  });

  for (const member of ['name', 'email', 'locale', 'roles', 'scopes']) {
    it(`refuses null for ${member} (required, no default) with 400 at /${member}`, async () => {
      const { path, created } = await freshUser();
      const problem = problemOf(await call(ctx, 'PATCH', path, { body: { [member]: null } }), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.pointer),
        [`/${member}`],
      );
      assert.deepEqual((await call(ctx, 'GET', path)).json(), created.json());
    });
  }

  it('replaces roles and scopes wholesale instead of merging arrays', async () => {
    const { path } = await freshUser({ roles: ['admin', 'billing:read'], scopes: ['org:acme'] });
    const response = await call(ctx, 'PATCH', path, { body: { roles: ['viewer'], scopes: [] } });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().roles, ['viewer']);
    assert.deepEqual(response.json().scopes, []);
  });

  it('stores a patched name trimmed', async () => {
    const { path } = await freshUser();
    const response = await call(ctx, 'PATCH', path, { body: { name: '\u00a0 Grace Hopper  ' } });
    assert.equal(response.json().name, 'Grace Hopper');
  });

  for (const [label, body] of [
    ['an empty patch', {}],
    ['the same values', { name: 'Ada Lovelace', roles: ['admin'], avatar: null }],
    ['a name that trims to the same value', { name: '  Ada Lovelace ' }],
    ['echoed identity and read-only members', { provider: PROVIDER, updated_at: 'x' }],
  ] as const) {
    it(`keeps updated_at and the ETag for ${label}`, async () => {
      const { path, created, etag } = await freshUser();
      ctx.clock.advance(60_000);
      const response = await call(ctx, 'PATCH', path, { body });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers.etag, etag);
      assert.deepEqual(response.json(), created.json());
    });
  }

  it('moves updated_at and the ETag on a change, and accepts application/json', async () => {
    const { path, etag } = await freshUser();
    ctx.clock.advance(2_500);
    const response = await call(ctx, 'PATCH', path, {
      body: { email: 'ada@lovelace.example' },
      contentType: 'application/json',
    });
    assert.equal(response.statusCode, 200);
    assert.notEqual(response.headers.etag, etag);
    assert.equal(response.json().email, 'ada@lovelace.example');
    assert.equal(response.json().updated_at, timestamp(ctx));
  });

  it('refuses an identifier that differs from the path with 400 at /identifier', async () => {
    const { path } = await freshUser();
    const problem = problemOf(
      await call(ctx, 'PATCH', path, { body: { identifier: 'other', name: 'X' } }),
      400,
    );
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/identifier'],
    );
  });

  it('answers 412 for a stale If-Match and 200 for the current one', async () => {
    const { path, etag } = await freshUser();
    const moved = await call(ctx, 'PATCH', path, { body: { locale: 'it' } });
    const stale = await call(ctx, 'PATCH', path, {
      body: { name: 'Lost' },
      headers: { 'if-match': etag },
    });
    problemOf(stale, 412);
    assert.equal((await call(ctx, 'GET', path)).json().name, 'Ada Lovelace');
    const current = await call(ctx, 'PATCH', path, {
      body: { name: 'Kept' },
      headers: { 'if-match': String(moved.headers.etag) },
    });
    assert.equal(current.statusCode, 200);
    assert.equal(current.json().name, 'Kept');
  });
});

describe('DELETE /applications/:client_id/users/:provider/:identifier', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  it('answers 204 with no body, then 404 for GET and for a second DELETE', async () => {
    await createUser(ctx, CLIENT, { identifier: 'leaver' });
    const path = userPath(CLIENT, PROVIDER, 'leaver');
    const response = await call(ctx, 'DELETE', path);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    problemOf(await call(ctx, 'GET', path), 404);
    problemOf(await call(ctx, 'DELETE', path), 404);
  });

  it('answers 412 for a stale If-Match and keeps the user; deletes with the current one', async () => {
    const created = await call(ctx, 'POST', USERS, { body: userBody({ identifier: 'guarded' }) });
    const path = userPath(CLIENT, PROVIDER, 'guarded');
    const moved = await call(ctx, 'PATCH', path, { body: { name: 'Moved on' } });
    problemOf(
      await call(ctx, 'DELETE', path, { headers: { 'if-match': String(created.headers.etag) } }),
      412,
    );
    assert.equal((await call(ctx, 'GET', path)).json().name, 'Moved on');
    const deleted = await call(ctx, 'DELETE', path, {
      headers: { 'if-match': String(moved.headers.etag) },
    });
    assert.equal(deleted.statusCode, 204);
  });

  it('deletes with If-Match: *', async () => {
    await createUser(ctx, CLIENT, { identifier: 'starred' });
    const path = userPath(CLIENT, PROVIDER, 'starred');
    assert.equal(
      (await call(ctx, 'DELETE', path, { headers: { 'if-match': '*' } })).statusCode,
      204,
    );
    problemOf(await call(ctx, 'GET', path), 404);
  });
});
