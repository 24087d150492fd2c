// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  type TestContext,
} from './helpers.js';

const CLIENT = 'billing-web';
const USERS = `/applications/${CLIENT}/users`;

type Pair = readonly [provider: string, identifier: string];

/** (provider, identifier) in byte (UTF-8) order, as docs/api.md promises. */
function compareBytes(a: Pair, b: Pair): number {
  return (
    Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])) ||
    Buffer.compare(Buffer.from(a[1]), Buffer.from(b[1]))
  );
}

function listPath(query: Record<string, string> = {}, clientId = CLIENT): string {
  const search = new URLSearchParams(query).toString();
  return `/applications/${clientId}/users${search === '' ? '' : `?${search}`}`;
}

function pairsOf(response: LightMyRequestResponse): Pair[] {
  assert.equal(response.statusCode, 200, response.body);
  return response
    .json<{ items: { provider: string; identifier: string }[] }>()
    .items.map((user) => [user.provider, user.identifier] as const);
}

/** The target of `Link: <…>; rel="next"`, or undefined when there is none. */
function nextLink(response: LightMyRequestResponse): string | undefined {
  const header = response.headers.link;
  if (header === undefined) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(String(header));
  assert.ok(match, `unexpected Link header ${String(header)}`);
  return match[1];
}

/** Follows next_cursor from the first page to the last; returns every page's pairs. */
async function walkCursors(ctx: TestContext, query: Record<string, string>): Promise<Pair[][]> {
  const pages: Pair[][] = [];
  let cursor: string | null = null;
  do {
    const response = await call(
      ctx,
      'GET',
      listPath(cursor === null ? query : { ...query, cursor }),
    );
    pages.push(pairsOf(response));
    cursor = response.json<{ next_cursor: string | null }>().next_cursor;
    assert.equal(nextLink(response) === undefined, cursor === null);
    assert.ok(pages.length <= 1000, 'pagination does not end');
  } while (cursor !== null);
  return pages;
}

/** Follows the Link headers verbatim (a Link target is absolute; call() takes it after '/'). */
async function walkLinks(ctx: TestContext, firstPath: string): Promise<Pair[][]> {
  const pages: Pair[][] = [];
  let target: string | undefined = `/iam/api/v1${firstPath}`;
  while (target !== undefined) {
    const response = await call(ctx, 'GET', `/${target}`);
    pages.push(pairsOf(response));
    target = nextLink(response);
    assert.ok(pages.length <= 1000, 'pagination does not end');
  }
  return pages;
}

describe('GET /applications/:client_id/users — order', () => {
  let ctx: TestContext;
  const identifiers = [
    'Zeta',
    'alpha',
    'Alpha',
    'A',
    'a',
    'aa',
    '10',
    '9',
    '-x',
    ' leading',
    'a b',
    'a/b',
    'é',
    'z',
    '\ue000',
    '\ufffd',
    '😀',
    '日本',
  ];
  const pairs: Pair[] = [
    ...identifiers.map((identifier) => ['ab_c', identifier] as const),
    ...['ab_c-d', 'ab_cd', 'ab-c_d', 'a1_x', 'google_oauth2', 'z_z'].flatMap((provider) => [
      [provider, 'x'] as const,
      [provider, 'X'] as const,
    ]),
  ];
  const expected = [...pairs].sort(compareBytes);

  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    // Created in an order unrelated to the expected one.
    const shuffled = pairs.map((pair, index) => ({ pair, key: (index * 7919) % pairs.length }));
    shuffled.sort((a, b) => a.key - b.key);
    for (const { pair } of shuffled) {
      await createUser(ctx, CLIENT, { provider: pair[0], identifier: pair[1] });
    }
  });
  after(() => ctx.close());

  it('uses fixtures whose byte order differs from JavaScript string order', () => {
    const jsOrder = [...pairs].sort((a, b) =>
      a[0] === b[0] ? (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) : a[0] < b[0] ? -1 : 1,
    );
    assert.notDeepEqual(jsOrder, expected);
    const ab = expected.filter((pair) => pair[0] === 'ab_c').map((pair) => pair[1]);
    assert.ok(ab.indexOf('\ue000') < ab.indexOf('\ufffd'));
    assert.ok(ab.indexOf('\ufffd') < ab.indexOf('😀'));
  });

  it('lists users by (provider, identifier) in byte order', async () => {
    const response = await call(ctx, 'GET', listPath({ limit: '1000' }));
    assert.deepEqual(pairsOf(response), expected);
    assert.equal(response.json().next_cursor, null);
    assert.equal(response.headers.link, undefined);
  });

  it('keeps that order one user per page', async () => {
    const pages = await walkCursors(ctx, { limit: '1' });
    assert.ok(pages.every((page) => page.length === 1));
    assert.deepEqual(pages.flat(), expected);
  });

  it('filters one provider exactly, even one that prefixes others (ab_c vs ab_c-d, ab_cd)', async () => {
    const pages = await walkCursors(ctx, { provider: 'ab_c', limit: '5' });
    assert.equal(pages[0]?.length, 5);
    assert.deepEqual(
      pages.flat(),
      expected.filter((pair) => pair[0] === 'ab_c'),
    );
  });
});

describe('GET /applications/:client_id/users — filters', () => {
  let ctx: TestContext;
  const users = [
    [
      'google_oauth2',
      'ada',
      'Ada@Example.com',
      ['admin', 'billing:read'],
      ['org:acme', 'region:eu'],
    ],
    ['google_oauth2', 'bob', 'bob@example.com', ['viewer'], ['org:acme']],
    ['azure_saml', 'ada-saml', 'ada@example.com', ['admin'], ['org:globex']],
    ['azure_saml', 'carol', 'carol@example.com', ['administrator'], ['org:acme-eu']],
    ['github_oauth2', 'dave', 'ADA@EXAMPLE.COM', [], []],
  ] as const;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'crm' });
    for (const [provider, identifier, email, roles, scopes] of users) {
      await createUser(ctx, CLIENT, { provider, identifier, email, roles, scopes });
    }
    // Matches every filter below, in another application: must never show up.
    await createUser(ctx, 'crm', {
      provider: 'google_oauth2',
      identifier: 'ada',
      email: 'ada@example.com',
      roles: ['admin'],
      scopes: ['org:acme'],
    });
  });
  after(() => ctx.close());

  const cases: [Record<string, string>, string[]][] = [
    [{ provider: 'google_oauth2' }, ['ada', 'bob']],
    [{ provider: 'azure_saml' }, ['ada-saml', 'carol']],
    [{ provider: 'azure_sam' }, []],
    [{ email: 'ada@EXAMPLE.com' }, ['ada-saml', 'dave', 'ada']],
    [{ email: 'Ada@Example.com' }, ['ada-saml', 'dave', 'ada']],
    [{ email: 'ada@example.co' }, []],
    [{ role: 'admin' }, ['ada-saml', 'ada']],
    [{ role: 'Admin' }, []],
    [{ role: 'billing:read' }, ['ada']],
    [{ scope: 'org:acme' }, ['ada', 'bob']],
    [{ scope: 'org:acme-eu' }, ['carol']],
    [{ provider: 'google_oauth2', role: 'admin' }, ['ada']],
    [{ email: 'ada@example.com', role: 'admin' }, ['ada-saml', 'ada']],
    [{ email: 'ada@example.com', role: 'admin', scope: 'org:acme' }, ['ada']],
    [
      { provider: 'google_oauth2', email: 'ADA@example.com', role: 'admin', scope: 'region:eu' },
      ['ada'],
    ],
    [{ provider: 'azure_saml', scope: 'org:acme' }, []],
    [{ role: 'viewer', scope: 'org:globex' }, []],
    [{ role: 'nobody' }, []],
  ];

  for (const [query, identifiers] of cases) {
    it(`${new URLSearchParams(query).toString()} → ${JSON.stringify(identifiers)}`, async () => {
      const response = await call(ctx, 'GET', listPath({ ...query, include_total: 'true' }));
      assert.deepEqual(
        pairsOf(response).map((pair) => pair[1]),
        identifiers,
      );
      assert.equal(response.json().next_cursor, null);
      assert.equal(response.json().total, identifiers.length);
      assert.equal(response.headers.link, undefined);
    });
  }

  it('returns every user of the application without filters', async () => {
    const response = await call(ctx, 'GET', listPath());
    assert.deepEqual(
      pairsOf(response).map((pair) => pair[1]),
      ['ada-saml', 'carol', 'dave', 'ada', 'bob'],
    );
    assert.equal('total' in response.json(), false);
  });

  it('returns the full user resources, stored email case kept', async () => {
    const response = await call(ctx, 'GET', listPath({ provider: 'google_oauth2', role: 'admin' }));
    const [user] = response.json().items;
    const single = await call(ctx, 'GET', `/applications/${CLIENT}/users/google_oauth2/ada`);
    assert.deepEqual(user, single.json());
    assert.equal(user.email, 'Ada@Example.com');
  });

  it('answers 200 with an empty page for an application without users', async () => {
    await createApplication(ctx, { client_id: 'empty' });
    const response = await call(ctx, 'GET', listPath({ include_total: 'true' }, 'empty'));
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { items: [], next_cursor: null, total: 0 });
  });

  it('answers 404 for a missing application, with or without filters', async () => {
    problemOf(await call(ctx, 'GET', listPath({}, 'ghost')), 404);
    problemOf(await call(ctx, 'GET', listPath({ role: 'admin' }, 'ghost')), 404);
  });
});

describe('GET /applications/:client_id/users — pagination', () => {
  let ctx: TestContext;
  const COUNT = 130;
  const all: Pair[] = [];
  const even: Pair[] = [];
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'crm' });
    for (let index = 0; index < COUNT; index++) {
      const provider = index % 3 === 0 ? 'azure_saml' : 'google_oauth2';
      const identifier = `user-${(index * 37) % COUNT}`;
      const roles = index % 2 === 0 ? ['even'] : ['odd'];
      await createUser(ctx, CLIENT, { provider, identifier, roles });
      all.push([provider, identifier]);
      if (index % 2 === 0) even.push([provider, identifier]);
    }
    all.sort(compareBytes);
    even.sort(compareBytes);
    await createUser(ctx, 'crm', { identifier: 'crm-user' });
  });
  after(() => ctx.close());

  it('returns 100 users by default, with a next_cursor', async () => {
    const response = await call(ctx, 'GET', listPath());
    assert.deepEqual(pairsOf(response), all.slice(0, 100));
    assert.equal(typeof response.json().next_cursor, 'string');
  });

  for (const limit of ['1', '7', '65', '1000']) {
    it(`visits every user exactly once, in order, with limit=${limit}`, async () => {
      const pages = await walkCursors(ctx, { limit });
      assert.deepEqual(pages.flat(), all);
      assert.ok(pages.slice(0, -1).every((page) => page.length === Number(limit)));
    });
  }

  it('visits every matching user exactly once with a filter', async () => {
    const pages = await walkCursors(ctx, { role: 'even', limit: '9' });
    assert.deepEqual(pages.flat(), even);
    assert.equal(pages.length, Math.ceil(even.length / 9));
  });

  it('counts all matching users in total, not the page', async () => {
    const page = await call(ctx, 'GET', listPath({ limit: '4', include_total: 'true' }));
    assert.equal(page.json().items.length, 4);
    assert.equal(page.json().total, COUNT);
    const filtered = await call(
      ctx,
      'GET',
      listPath({ limit: '4', role: 'even', include_total: 'true' }),
    );
    assert.equal(filtered.json().total, even.length);
    const next = await call(
      ctx,
      'GET',
      listPath({
        limit: '4',
        role: 'even',
        include_total: 'true',
        cursor: filtered.json().next_cursor,
      }),
    );
    assert.equal(next.json().total, even.length);
    const without = await call(ctx, 'GET', listPath({ limit: '4', include_total: 'false' }));
    assert.equal('total' in without.json(), false);
  });

  it('sends Link: rel="next" that, followed verbatim, walks the same filtered list', async () => {
    const first = await call(ctx, 'GET', listPath({ role: 'even', limit: '10' }));
    const link = nextLink(first);
    assert.ok(link !== undefined);
    assert.ok(link.startsWith(`/iam/api/v1${USERS}?`));
    const params = new URLSearchParams(link.slice(link.indexOf('?') + 1));
    assert.equal(params.get('role'), 'even');
    assert.equal(params.get('limit'), '10');
    assert.equal(params.get('cursor'), first.json().next_cursor);
    const pages = await walkLinks(ctx, listPath({ role: 'even', limit: '10' }));
    assert.deepEqual(pages.flat(), even);
  });

  it('accepts a cursor with another limit', async () => {
    const first = await call(ctx, 'GET', listPath({ limit: '10' }));
    const next = await call(
      ctx,
      'GET',
      listPath({ limit: '20', cursor: first.json().next_cursor }),
    );
    assert.deepEqual(pairsOf(next), all.slice(10, 30));
  });

  it('refuses a cursor used with different filters or another application with 400', async () => {
    const first = await call(ctx, 'GET', listPath({ role: 'even', limit: '10' }));
    const cursor = String(first.json().next_cursor);
    const misuses = [
      listPath({ role: 'odd', limit: '10', cursor }),
      listPath({ limit: '10', cursor }),
      listPath({ role: 'even', provider: 'google_oauth2', limit: '10', cursor }),
      listPath({ role: 'even', limit: '10', cursor }, 'crm'),
    ];
    for (const path of misuses) {
      const problem = problemOf(await call(ctx, 'GET', path), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['cursor'],
        path,
      );
    }
  });

  it('refuses a cursor from the applications list with 400', async () => {
    await createApplication(ctx, { client_id: 'zzz' });
    const applications = await call(ctx, 'GET', '/applications?limit=1');
    const cursor = String(applications.json().next_cursor);
    const problem = problemOf(await call(ctx, 'GET', listPath({ cursor })), 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.parameter),
      ['cursor'],
    );
  });

  it('refuses tampered and malformed cursors with 400 naming parameter "cursor"', async () => {
    const first = await call(ctx, 'GET', listPath({ limit: '10' }));
    const cursor = String(first.json().next_cursor);
    const [payload = '', mac = ''] = cursor.split('.');
    const flip = (text: string, at: number) =>
      text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    const moved = Buffer.from(JSON.stringify(position).replace('user-', 'user-9')).toString(
      'base64url',
    );
    const tampered = [
      `${flip(payload, 3)}.${mac}`,
      `${payload}.${flip(mac, 5)}`,
      `${moved}.${mac}`,
      `${payload}.`,
      payload,
      `${cursor}.x`,
      cursor.slice(0, -2),
      'garbage',
      '',
    ];
    for (const value of tampered) {
      const problem = problemOf(
        await call(ctx, 'GET', listPath({ limit: '10', cursor: value })),
        400,
      );
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['cursor'],
        value,
      );
    }
  });
});

describe('GET /applications/:client_id/users — query validation', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  const invalid: [string, string][] = [
    ['provider=BAD', 'provider'],
    ['provider=google', 'provider'],
    ['provider=a_b&provider=c_d', 'provider'],
    ['role=a%20b', 'role'],
    ['role=a+b', 'role'],
    [`role=${'r'.repeat(65)}`, 'role'],
    ['role=', 'role'],
    ['scope=org', 'scope'],
    ['scope=org%3Aa%20b', 'scope'],
    ['email=', 'email'],
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=ten', 'limit'],
    ['include_total=yes', 'include_total'],
    ['include_total=1', 'include_total'],
    ['sort=name', 'sort'],
    ['Provider=google_oauth2', 'Provider'],
    ['offset=10', 'offset'],
  ];
  for (const [query, parameter] of invalid) {
    it(`?${query.slice(0, 40)} → 400 naming parameter "${parameter}"`, async () => {
      const response = await call(ctx, 'GET', `${USERS}?${query}`);
      const problem = problemOf(response, 400);
      assert.equal(problem.instance, `/iam/api/v1${USERS}`);
      assert.deepEqual([...new Set(problem.errors?.map((error) => error.parameter))], [parameter]);
    });
  }

  for (const limit of ['1', '1000']) {
    it(`accepts limit=${limit}`, async () => {
      const response = await call(ctx, 'GET', `${USERS}?limit=${limit}`);
      assert.equal(response.statusCode, 200);
    });
  }

  for (const method of ['GET', 'DELETE']) {
    it(`${method} of one user refuses any query parameter with 400`, async () => {
      await createUser(ctx, CLIENT, { identifier: `query-${method}` });
      const path = `${USERS}/google_oauth2/query-${method}?force=true`;
      const problem = problemOf(await call(ctx, method, path), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['force'],
      );
      assert.equal(
        (await call(ctx, 'GET', `${USERS}/google_oauth2/query-${method}`)).statusCode,
        200,
      );
    });
  }
});
