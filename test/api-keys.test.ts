// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { after, before, beforeEach, afterEach, describe, it } from 'node:test';
import { ROLES, type Role } from '../src/roles.js';
import {
  START_TIME,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  problemOf,
  type TestContext,
} from './helpers.js';

const SECRET = /^tsr_[A-Za-z0-9_-]{43}$/;
const RECORD_FIELDS =
  'applications created_at expires_at id last_used_at name previous_expires_at revoked_at roles updated_at'.split(
    ' ',
  );
const HOUR = 3_600_000;
const iso = (epochMillis: number) => new Date(epochMillis).toISOString();

interface ApiKeyBody {
  id: string;
  name: string;
  roles: string[];
  applications: string[] | null;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  key?: string;
}

/** POSTs /api-keys (as the admin unless `caller` is given) and insists on 201. */
async function issueKey(
  ctx: TestContext,
  body: Record<string, unknown>,
  caller = ctx.adminKey,
): Promise<ApiKeyBody & { key: string }> {
  const response = await call(ctx, 'POST', '/api-keys', { key: caller, body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json();
}

/** Lets fire-and-forget writes (last_used_at) reach the store before the next read. */
const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

describe('POST /api-keys', () => {
  const ctx = useTestApp();

  it('returns 201 with the record, the secret, Location, ETag and Cache-Control: no-store', async () => {
    const response = await call(ctx, 'POST', '/api-keys', {
      body: { name: 'deploy bot', roles: ['applications:read', 'users:read'] },
    });
    assert.equal(response.statusCode, 201);
    const body = response.json<ApiKeyBody & { key: string }>();
    assert.deepEqual(Object.keys(body).sort(), [...RECORD_FIELDS, 'key'].sort());
    assert.match(body.key, SECRET);
    assert.equal(Buffer.from(body.key.slice(4), 'base64url').length, 32);
    const { id, key: _secret, ...record } = body;
    assert.equal(typeof id, 'string');
    assert.deepEqual(record, {
      name: 'deploy bot',
      roles: ['applications:read', 'users:read'],
      applications: null,
      created_at: iso(START_TIME),
      updated_at: iso(START_TIME),
      expires_at: null,
      last_used_at: null,
      previous_expires_at: null,
      revoked_at: null,
    });
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.equal(response.headers.location, `/iam/api/v1/api-keys/${body.id}`);
    assert.match(String(response.headers.etag), /^"[^"]+"$/);
  });

  it('generates a different secret and id every time', async () => {
    const first = await issueKey(ctx, { name: 'one', roles: ['users:read'] });
    const second = await issueKey(ctx, { name: 'one', roles: ['users:read'] });
    assert.notEqual(first.key, second.key);
    assert.notEqual(first.id, second.id);
  });

  it('stores restriction and expiry, the expiry normalised to UTC with milliseconds', async () => {
    await createApplication(ctx, { client_id: 'stored-a' });
    const body = await issueKey(ctx, {
      name: 'narrow',
      roles: ['users:read'],
      applications: ['stored-a', 'not-yet-created'],
      expires_at: '2026-06-01T02:00:00+02:00',
    });
    assert.deepEqual(body.applications, ['stored-a', 'not-yet-created']);
    assert.equal(body.expires_at, '2026-06-01T00:00:00.000Z');
    const read = await call(ctx, 'GET', `/api-keys/${body.id}`);
    assert.equal(read.statusCode, 200);
    const { key: _secret, ...record } = body;
    assert.deepEqual(read.json(), record);
  });

  it('makes a key that works at once for its roles and gets 403 outside them', async () => {
    const { key } = await issueKey(ctx, { name: 'reader', roles: ['applications:read'] });
    assert.equal((await call(ctx, 'GET', '/applications', { key })).statusCode, 200);
    const refused = await call(ctx, 'POST', '/applications', {
      key,
      body: { client_id: 'x', display_name: 'X', description: '' },
    });
    problemOf(refused, 403);
    problemOf(await call(ctx, 'GET', '/api-keys', { key }), 403);
  });

  it('stores the name trimmed', async () => {
    const body = await issueKey(ctx, { name: '  ci deploy \u00a0', roles: ['users:read'] });
    assert.equal(body.name, 'ci deploy');
  });

  const invalidBodies: [string, Record<string, unknown>, string[]][] = [
    ['a blank name', { name: '   ', roles: ['users:read'] }, ['/name']],
    ['a 201-character name', { name: 'n'.repeat(201), roles: ['users:read'] }, ['/name']],
    ['a name with a control character', { name: 'a\tb', roles: ['users:read'] }, ['/name']],
    ['a missing name', { roles: ['users:read'] }, ['/name']],
    ['a missing roles list', { name: 'k' }, ['/roles']],
    ['empty roles', { name: 'k', roles: [] }, ['/roles']],
    ['an unknown role', { name: 'k', roles: ['users:read', 'users:admin'] }, ['/roles/1']],
    ['duplicate roles', { name: 'k', roles: ['users:read', 'users:read'] }, ['/roles']],
    ['roles as a string', { name: 'k', roles: 'users:read' }, ['/roles']],
    [
      'an empty applications list',
      { name: 'k', roles: ['users:read'], applications: [] },
      ['/applications'],
    ],
    [
      'an invalid client_id in applications',
      { name: 'k', roles: ['users:read'], applications: ['ok', 'not ok'] },
      ['/applications/1'],
    ],
    [
      'duplicate applications',
      { name: 'k', roles: ['users:read'], applications: ['a', 'a'] },
      ['/applications'],
    ],
    [
      'expires_at in the past',
      { name: 'k', roles: ['users:read'], expires_at: '2025-12-31T23:59:59.999Z' },
      ['/expires_at'],
    ],
    [
      'expires_at equal to now',
      { name: 'k', roles: ['users:read'], expires_at: iso(START_TIME) },
      ['/expires_at'],
    ],
    [
      'expires_at as a date only',
      { name: 'k', roles: ['users:read'], expires_at: '2027-01-01' },
      ['/expires_at'],
    ],
    [
      'expires_at without an offset',
      { name: 'k', roles: ['users:read'], expires_at: '2027-01-01T00:00:00' },
      ['/expires_at'],
    ],
    [
      'expires_at as words',
      { name: 'k', roles: ['users:read'], expires_at: 'tomorrow' },
      ['/expires_at'],
    ],
    [
      'expires_at as a number',
      { name: 'k', roles: ['users:read'], expires_at: 1798761600000 },
      ['/expires_at'],
    ],
    ['an unknown member', { name: 'k', roles: ['users:read'], secret: 'mine' }, ['/secret']],
  ];
  for (const [label, body, pointers] of invalidBodies) {
    it(`refuses ${label} with 400`, async () => {
      const problem = problemOf(await call(ctx, 'POST', '/api-keys', { body }), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.pointer),
        pointers,
      );
      assert.equal(problem.instance, '/iam/api/v1/api-keys');
    });
  }

  it('accepts a name of exactly 200 characters after trimming', async () => {
    const body = await issueKey(ctx, { name: ` ${'n'.repeat(200)} `, roles: ['users:read'] });
    assert.equal(body.name, 'n'.repeat(200));
  });
});

describe('GET /api-keys and GET /api-keys/:id', () => {
  let ctx: TestContext;
  let issued: ApiKeyBody & { key: string };
  before(async () => {
    ctx = await buildTestApp();
    issued = await issueKey(ctx, { name: 'secretive', roles: ['keys:read'] });
    // Used once, so last_used_at is set and the record is at its most complete.
    assert.equal((await call(ctx, 'GET', '/api-keys', { key: issued.key })).statusCode, 200);
    await nextTick();
  });
  after(() => ctx.close());

  it('never shows the secret or its digest in a list', async () => {
    const response = await call(ctx, 'GET', '/api-keys?include_total=true');
    assert.equal(response.statusCode, 200);
    assert.ok(!response.body.includes(issued.key));
    assert.ok(!response.body.includes(issued.key.slice(4)));
    assert.ok(!response.body.includes(sha256Hex(issued.key)));
    const page = response.json<{ items: ApiKeyBody[]; next_cursor: null; total: number }>();
    const listed = page.items.find((item) => item.id === issued.id);
    assert.ok(listed);
    assert.deepEqual(Object.keys(listed).sort(), RECORD_FIELDS);
    assert.equal(page.total, 2);
    assert.equal(page.next_cursor, null);
  });

  it('never shows the secret or its digest for one key, and sends a strong ETag', async () => {
    const response = await call(ctx, 'GET', `/api-keys/${issued.id}`);
    assert.equal(response.statusCode, 200);
    assert.ok(!response.body.includes(issued.key));
    assert.ok(!response.body.includes(issued.key.slice(4)));
    assert.ok(!response.body.includes(sha256Hex(issued.key)));
    assert.deepEqual(Object.keys(response.json()).sort(), RECORD_FIELDS);
    const etag = String(response.headers.etag);
    assert.match(etag, /^"[^"]+"$/);
    const again = await call(ctx, 'GET', `/api-keys/${issued.id}`, {
      headers: { 'if-none-match': etag },
    });
    assert.equal(again.statusCode, 304);
    assert.equal(again.headers.etag, etag);
    assert.equal(again.body, '');
  });

  it('answers 404 for an unknown id', async () => {
    const problem = problemOf(
      await call(ctx, 'GET', '/api-keys/01900000-0000-7000-8000-000000000000'),
      404,
    );
    assert.equal(problem.instance, '/iam/api/v1/api-keys/01900000-0000-7000-8000-000000000000');
  });
});

describe('GET /api-keys pagination', () => {
  let ctx: TestContext;
  let ids: string[];
  before(async () => {
    ctx = await buildTestApp();
    const admin = await ctx.services.authenticator.authenticate(ctx.adminKey);
    ids = [admin!.id];
    for (let index = 0; index < 4; index += 1) {
      ids.push((await issueKey(ctx, { name: `key ${index}`, roles: ['users:read'] })).id);
    }
  });
  after(() => ctx.close());

  it('walks every key once, oldest first, with limit and cursor', async () => {
    const seen: string[] = [];
    let path = '/api-keys?limit=2&include_total=true';
    for (let pages = 0; pages < 3; pages += 1) {
      const response = await call(ctx, 'GET', path);
      assert.equal(response.statusCode, 200);
      const page = response.json<{
        items: ApiKeyBody[];
        next_cursor: string | null;
        total: number;
      }>();
      assert.equal(page.total, 5);
      seen.push(...page.items.map((item) => item.id));
      if (pages < 2) {
        assert.equal(page.items.length, 2);
        assert.equal(typeof page.next_cursor, 'string');
        const cursor = encodeURIComponent(page.next_cursor!);
        assert.equal(
          response.headers.link,
          `</iam/api/v1/api-keys?limit=2&include_total=true&cursor=${cursor}>; rel="next"`,
        );
        path = `/api-keys?limit=2&include_total=true&cursor=${cursor}`;
      } else {
        assert.equal(page.items.length, 1);
        assert.equal(page.next_cursor, null);
        assert.equal(response.headers.link, undefined);
      }
    }
    assert.deepEqual(seen, ids);
  });

  it('refuses a tampered cursor or one from another list with 400 on parameter cursor', async () => {
    const first = (await call(ctx, 'GET', '/api-keys?limit=1')).json<{ next_cursor: string }>();
    const tampered = `${first.next_cursor.slice(0, -2)}AA`;
    await createApplication(ctx, { client_id: 'a' });
    await createApplication(ctx, { client_id: 'b' });
    const foreign = (await call(ctx, 'GET', '/applications?limit=1')).json<{
      next_cursor: string;
    }>();
    for (const cursor of [tampered, foreign.next_cursor, 'not-a-cursor']) {
      const problem = problemOf(
        await call(ctx, 'GET', `/api-keys?cursor=${encodeURIComponent(cursor)}`),
        400,
      );
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['cursor'],
      );
    }
  });

  for (const limit of ['0', '1001', 'ten']) {
    it(`refuses limit=${limit} with 400 on parameter limit`, async () => {
      const problem = problemOf(await call(ctx, 'GET', `/api-keys?limit=${limit}`), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['limit'],
      );
    });
  }
});

describe('API key parameters', () => {
  const ctx = useTestApp();

  const cases: [string, string, string][] = [
    ['GET', `/api-keys/${'x'.repeat(65)}`, 'id'],
    ['DELETE', `/api-keys/${'x'.repeat(65)}`, 'id'],
    ['GET', '/api-keys/a%00b', 'id'],
    ['DELETE', '/api-keys/%00', 'id'],
    ['GET', '/api-keys/%C3%A9', 'id'],
    ['GET', '/api-keys?sort=name', 'sort'],
    ['GET', '/api-keys/some-id?verbose=true', 'verbose'],
  ];
  for (const [method, path, parameter] of cases) {
    it(`refuses ${method} ${path.slice(0, 40)} with 400 on parameter ${parameter}`, async () => {
      const problem = problemOf(await call(ctx, method, path), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        [parameter],
      );
    });
  }

  it('refuses an unknown query parameter on POST /api-keys', async () => {
    const response = await call(ctx, 'POST', '/api-keys?dry_run=true', {
      body: { name: 'k', roles: ['users:read'] },
    });
    const problem = problemOf(response, 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.parameter),
      ['dry_run'],
    );
    assert.equal(await ctx.store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
  });
});

describe('DELETE /api-keys/:id', () => {
  const ctx = useTestApp();

  it('revokes at once: 204, then 401 for the key; the record stays, with revoked_at', async () => {
    const issued = await issueKey(ctx, { name: 'doomed', roles: ['applications:read'] });
    assert.equal((await call(ctx, 'GET', '/applications', { key: issued.key })).statusCode, 200);
    ctx.clock.advance(1_000);
    const deleted = await call(ctx, 'DELETE', `/api-keys/${issued.id}`);
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
    const refused = problemOf(await call(ctx, 'GET', '/applications', { key: issued.key }), 401);
    assert.equal(refused.instance, '/iam/api/v1/applications');
    const kept = await call(ctx, 'GET', `/api-keys/${issued.id}`);
    assert.equal(kept.statusCode, 200);
    const revokedAt = iso(START_TIME + 1_000);
    assert.equal(kept.json<ApiKeyBody & { revoked_at: string }>().revoked_at, revokedAt);
    // A second revocation changes nothing: same revoked_at, same ETag.
    ctx.clock.advance(1_000);
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${issued.id}`)).statusCode, 204);
    const again = await call(ctx, 'GET', `/api-keys/${issued.id}`);
    assert.equal(again.json<{ revoked_at: string }>().revoked_at, revokedAt);
    assert.equal(again.headers.etag, kept.headers.etag);
  });

  it('honours If-Match: a stale ETag → 412 and the key survives', async () => {
    const issued = await issueKey(ctx, { name: 'guarded', roles: ['users:read'] });
    problemOf(
      await call(ctx, 'DELETE', `/api-keys/${issued.id}`, { headers: { 'if-match': '"stale"' } }),
      412,
    );
    const current = await call(ctx, 'GET', `/api-keys/${issued.id}`);
    assert.equal(current.statusCode, 200);
    const deleted = await call(ctx, 'DELETE', `/api-keys/${issued.id}`, {
      headers: { 'if-match': String(current.headers.etag) },
    });
    assert.equal(deleted.statusCode, 204);
  });
});

describe('DELETE /api-keys/:id of the last administrator key', () => {
  const ctx = useTestApp();
  const ALL_ROLES = [...ROLES];

  async function idOf(secret: string): Promise<string> {
    return (await ctx.services.authenticator.authenticate(secret))!.id;
  }

  it('refuses with 409 last-admin-key, saying why, and the key keeps working', async () => {
    const admin = await idOf(ctx.adminKey);
    const refused = problemOf(await call(ctx, 'DELETE', `/api-keys/${admin}`), 409);
    assert.equal(refused.type, 'https://tessera.dev/problems/last-admin-key');
    assert.equal(refused.title, 'The last administrator key cannot be revoked');
    assert.match(refused.detail, /last working API key with every role.*Create another/);
    assert.equal((await call(ctx, 'GET', `/api-keys/${admin}`)).json().revoked_at, null);
    assert.equal((await call(ctx, 'GET', '/applications')).statusCode, 200);
  });

  it('counts neither an expired, a restricted nor a narrower key as another administrator', async () => {
    const admin = await idOf(ctx.adminKey);
    await createApplication(ctx, { client_id: 'only-app' });
    const soon = new Date(START_TIME + 60_000).toISOString();
    await issueKey(ctx, { name: 'expires', roles: ALL_ROLES, expires_at: soon });
    await issueKey(ctx, { name: 'restricted', roles: ALL_ROLES, applications: ['only-app'] });
    await issueKey(ctx, { name: 'narrower', roles: ALL_ROLES.filter((r) => r !== 'events:read') });
    ctx.clock.advance(60_000);
    problemOf(await call(ctx, 'DELETE', `/api-keys/${admin}`), 409);
  });

  it('revokes an administrator key while another works, then refuses the other; of two concurrent revocations of the last two, one goes through', async () => {
    const first = await idOf(ctx.adminKey);
    const second = await issueKey(ctx, { name: 'second admin', roles: ALL_ROLES });
    assert.equal((await call(ctx, 'DELETE', `/api-keys/${first}`)).statusCode, 204);
    problemOf(await call(ctx, 'DELETE', `/api-keys/${second.id}`, { key: second.key }), 409);

    const third = await issueKey(ctx, { name: 'third admin', roles: ALL_ROLES }, second.key);
    // Through the service, so neither request is refused for its own key being revoked first.
    const outcomes = await Promise.allSettled(
      [second.id, third.id].map((id) =>
        ctx.services.apiKeys.revokeApiKey('operator', id, {
          actor: { type: 'cli', id: null },
          requestId: null,
        }),
      ),
    );
    assert.deepEqual(
      outcomes
        .map((outcome) =>
          outcome.status === 'fulfilled' ? 'revoked' : (outcome.reason as { code: string }).code,
        )
        .sort(),
      ['last_admin_key', 'revoked'],
    );
  });
});

describe('API key expiry and last use', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await buildTestApp();
  });
  afterEach(() => ctx.close());

  it('accepts a key until the clock passes expires_at, then answers 401', async () => {
    const issued = await issueKey(ctx, {
      name: 'temporary',
      roles: ['applications:read'],
      expires_at: iso(START_TIME + HOUR),
    });
    assert.equal((await call(ctx, 'GET', '/applications', { key: issued.key })).statusCode, 200);
    ctx.clock.advance(HOUR - 1);
    assert.equal((await call(ctx, 'GET', '/applications', { key: issued.key })).statusCode, 200);
    ctx.clock.advance(2);
    const refused = await call(ctx, 'GET', '/applications', { key: issued.key });
    problemOf(refused, 401);
    assert.equal(refused.headers['www-authenticate'], 'apikey');
  });

  it('sets last_used_at on first use and rewrites it only after a minute', async () => {
    const issued = await issueKey(ctx, { name: 'busy', roles: ['applications:read'] });
    // The use is recorded off the request path (on PostgreSQL, a round trip later): read until
    // the expected value shows, for at most two seconds, and report what was there.
    const lastUsed = async (expected: string | null) => {
      let value: string | null = null;
      for (let attempt = 0; attempt < 100; attempt += 1) {
        await nextTick();
        const response = await call(ctx, 'GET', `/api-keys/${issued.id}`);
        value = response.json<ApiKeyBody>().last_used_at;
        if (value === expected) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return value;
    };
    assert.equal(await lastUsed(null), null);
    ctx.clock.advance(1_000);
    await call(ctx, 'GET', '/applications', { key: issued.key });
    assert.equal(await lastUsed(iso(START_TIME + 1_000)), iso(START_TIME + 1_000));
    ctx.clock.advance(30_000);
    await call(ctx, 'GET', '/applications', { key: issued.key });
    // Within the minute no write is even started: the cached record already holds the use.
    assert.equal(await lastUsed(iso(START_TIME + 1_000)), iso(START_TIME + 1_000));
    ctx.clock.advance(31_000);
    await call(ctx, 'GET', '/applications', { key: issued.key });
    assert.equal(await lastUsed(iso(START_TIME + 62_000)), iso(START_TIME + 62_000));
  });
});

describe('API keys cannot escalate privileges', () => {
  const ctx = useTestApp();

  const WRITER: Role[] = ['keys:write', 'users:read', 'users:write'];

  const forbidden: [string, Parameters<TestContext['createKey']>[0], Record<string, unknown>][] = [
    ['roles the caller lacks', { roles: WRITER }, { roles: ['users:read', 'applications:read'] }],
    [
      'keys:read from a caller holding only keys:write',
      { roles: ['keys:write'] },
      { roles: ['keys:read'] },
    ],
    [
      'an unrestricted key from a restricted caller (applications omitted)',
      { roles: WRITER, applications: ['a'] },
      { roles: ['users:read'] },
    ],
    [
      'an unrestricted key from a restricted caller (applications null)',
      { roles: WRITER, applications: ['a'] },
      { roles: ['users:read'], applications: null },
    ],
    [
      'a key for another application',
      { roles: WRITER, applications: ['a'] },
      { roles: ['users:read'], applications: ['b'] },
    ],
    [
      'a key for more applications than the caller',
      { roles: WRITER, applications: ['a'] },
      { roles: ['users:read'], applications: ['a', 'b'] },
    ],
    [
      'a never-expiring key from an expiring caller (expires_at omitted)',
      { roles: WRITER, expiresAt: START_TIME + HOUR },
      { roles: ['users:read'] },
    ],
    [
      'a never-expiring key from an expiring caller (expires_at null)',
      { roles: WRITER, expiresAt: START_TIME + HOUR },
      { roles: ['users:read'], expires_at: null },
    ],
    [
      'a key expiring after the caller',
      { roles: WRITER, expiresAt: START_TIME + HOUR },
      { roles: ['users:read'], expires_at: iso(START_TIME + HOUR + 1) },
    ],
  ];
  for (const [label, callerGrants, body] of forbidden) {
    it(`refuses ${label} with 403`, async () => {
      const caller = await ctx.createKey(callerGrants);
      const before = await ctx.store.apiKeys.countApiKeys({ includeRevoked: true });
      const response = await call(ctx, 'POST', '/api-keys', {
        key: caller,
        body: { name: 'escalation', ...body },
      });
      problemOf(response, 403);
      assert.equal(await ctx.store.apiKeys.countApiKeys({ includeRevoked: true }), before);
    });
  }

  const allowed: [string, Parameters<TestContext['createKey']>[0], Record<string, unknown>][] = [
    ['a subset of the roles', { roles: WRITER }, { roles: ['users:read'] }],
    ['all of its own roles', { roles: WRITER }, { roles: WRITER }],
    [
      'a subset of its applications',
      { roles: WRITER, applications: ['a', 'b'] },
      { roles: ['users:read'], applications: ['b'] },
    ],
    [
      'the same applications',
      { roles: WRITER, applications: ['a', 'b'] },
      { roles: ['users:read'], applications: ['b', 'a'] },
    ],
    [
      'a restricted key from an unrestricted caller',
      { roles: WRITER },
      { roles: ['users:read'], applications: ['anything'] },
    ],
    [
      'an earlier expiry',
      { roles: WRITER, expiresAt: START_TIME + HOUR },
      { roles: ['users:read'], expires_at: iso(START_TIME + HOUR - 1) },
    ],
    [
      'the same expiry',
      { roles: WRITER, expiresAt: START_TIME + HOUR },
      { roles: ['users:read'], expires_at: iso(START_TIME + HOUR) },
    ],
  ];
  for (const [label, callerGrants, body] of allowed) {
    it(`allows ${label} (201)`, async () => {
      const caller = await ctx.createKey(callerGrants);
      const created = await issueKey(ctx, { name: 'narrower', ...body }, caller);
      assert.deepEqual(created.roles, body.roles);
    });
  }
});

describe('API keys seen by a restricted caller', () => {
  let ctx: TestContext;
  let caller: string;
  const ids: Record<string, string> = {};
  before(async () => {
    ctx = await buildTestApp();
    caller = await ctx.createKey({
      roles: ['keys:read', 'keys:write', 'users:read'],
      applications: ['a'],
    });
    ids.caller = (await ctx.services.authenticator.authenticate(caller))!.id;
    ids.admin = (await ctx.services.authenticator.authenticate(ctx.adminKey))!.id;
    const grants: [string, string[] | null][] = [
      ['unrestricted', null],
      ['onlyA', ['a']],
      ['onlyB', ['b']],
      ['aAndB', ['a', 'b']],
      ['onlyA2', ['a']],
    ];
    for (const [name, applications] of grants) {
      ids[name] = (await issueKey(ctx, { name, roles: ['users:read'], applications })).id;
    }
  });
  after(() => ctx.close());

  it('lists only keys restricted within its applications, and counts only those', async () => {
    const response = await call(ctx, 'GET', '/api-keys?include_total=true', { key: caller });
    assert.equal(response.statusCode, 200);
    const page = response.json<{ items: ApiKeyBody[]; total: number; next_cursor: null }>();
    assert.deepEqual(
      page.items.map((item) => item.id),
      [ids.caller, ids.onlyA, ids.onlyA2],
    );
    assert.equal(page.total, 3);
    assert.equal(page.next_cursor, null);
  });

  it('pages through only its visible keys', async () => {
    const first = await call(ctx, 'GET', '/api-keys?limit=2', { key: caller });
    const page = first.json<{ items: ApiKeyBody[]; next_cursor: string }>();
    assert.deepEqual(
      page.items.map((item) => item.id),
      [ids.caller, ids.onlyA],
    );
    const second = await call(
      ctx,
      'GET',
      `/api-keys?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`,
      { key: caller },
    );
    const rest = second.json<{ items: ApiKeyBody[]; next_cursor: string | null }>();
    assert.deepEqual(
      rest.items.map((item) => item.id),
      [ids.onlyA2],
    );
    assert.equal(rest.next_cursor, null);
  });

  for (const name of ['admin', 'unrestricted', 'onlyB', 'aAndB']) {
    it(`answers 404 to GET and DELETE of the ${name} key, which stays`, async () => {
      problemOf(await call(ctx, 'GET', `/api-keys/${ids[name]}`, { key: caller }), 404);
      problemOf(await call(ctx, 'DELETE', `/api-keys/${ids[name]}`, { key: caller }), 404);
      assert.equal((await call(ctx, 'GET', `/api-keys/${ids[name]}`)).statusCode, 200);
    });
  }

  it('reads and revokes a key restricted to its own application', async () => {
    const read = await call(ctx, 'GET', `/api-keys/${ids.onlyA}`, { key: caller });
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json<ApiKeyBody>().applications, ['a']);
    assert.equal(
      (await call(ctx, 'DELETE', `/api-keys/${ids.onlyA}`, { key: caller })).statusCode,
      204,
    );
    const kept = await call(ctx, 'GET', `/api-keys/${ids.onlyA}`);
    assert.notEqual(kept.json<{ revoked_at: string | null }>().revoked_at, null);
  });
});
