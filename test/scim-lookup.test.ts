// tessera-test: both-stores
// The one-read lookup (Okta's and Entra's `userName eq` / `externalId eq` before a create) answers
// byte for byte what the general path answers: the same users, Groups, totals, paging and
// projections, and the same errors (the general path reports them).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { GroupRecord, UserRecord } from '../src/store/store.js';
import { START_TIME, type TestContext, buildTestApp, createApplication } from './helpers.js';

const PROVIDER = 'okta_scim';
const RUNS = Number(process.env.TESSERA_PROPERTY_RUNS ?? 200);
// userNames of the SCIM provider differ in more than ASCII case (the database holds them to it):
// 'ALICE' finds 'alice'; 'éva' and 'Éva' differ in a letter that is not ASCII.
const NAMES = ['alice', 'ALICE-2', 'Alice.3', 'bob', 'éva', 'Éva', 'zed'];

function users(): UserRecord[] {
  return NAMES.map((identifier, n) => ({
    clientId: 'app',
    provider: PROVIDER,
    identifier,
    id: `id-${n}`,
    name: `User ${n}`,
    avatar: n % 2 === 0 ? `https://cdn.example.com/${n}.png` : null,
    email: `user${n}@example.com`,
    locale: 'en',
    roles: [['admins', 'readers'], ['readers'], [], ['admins', 'other'], ['readers']][n % 5]!,
    scopes: [],
    active: n % 3 !== 1,
    externalId: [null, 'ext-1', 'ext-1', 'EXT-1', 'ext-2'][n % 5]!,
    createdAt: START_TIME,
    updatedAt: START_TIME + n * 60_000,
    etag: `e${n}`,
  }));
}

function group(id: string, displayName: string): GroupRecord {
  return {
    clientId: 'app',
    id,
    displayName,
    externalId: null,
    createdAt: START_TIME,
    updatedAt: START_TIME,
    etag: `g-${id}`,
  };
}

const value = fc.constantFrom(
  ...NAMES,
  'ALICE',
  'nobody',
  'ext-1',
  'EXT-1',
  'ext-2',
  'id-3',
  '',
  'a"b',
  'tab\there',
);
const filter = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('userName', 'USERNAME', 'externalId', 'id'),
      fc.constantFrom('eq', 'EQ'),
      value,
    )
    .map(([a, o, v]) => `${a} ${o} ${JSON.stringify(v)}`),
  fc
    .tuple(fc.constantFrom('userName', 'externalId'), value, fc.boolean())
    .map(([a, v, b]) => `${a} eq ${JSON.stringify(v)} and active eq ${b}`),
  fc.constantFrom(
    'userName eq',
    'externalId sw "ext"',
    'title eq "x"',
    'active eq "yes"',
    'userName eq "alice" and userName eq "bob"',
  ),
);
const query = fc.record(
  {
    filter,
    startIndex: fc.constantFrom('1', '1', '2', '0', 'x'),
    count: fc.constantFrom('0', '1', '2', '100'),
    attributes: fc.constantFrom('groups', 'userName,groups.display', 'meta', 'nope!'),
    excludedAttributes: fc.constantFrom('groups', 'emails.type'),
  },
  { requiredKeys: ['filter'] },
);

describe('SCIM lookup in one read', () => {
  let ctx: TestContext;
  let served = 0;

  before(async () => {
    ctx = await buildTestApp({ logLevel: 'warn' });
    await createApplication(ctx, { client_id: 'app', scim_provider: PROVIDER });
    await createApplication(ctx, { client_id: 'plain' });
    await ctx.store.users.insertUsers(users(), []);
    await ctx.store.groups.insertGroup(group('f0c1', 'readers'), [], []);
    await ctx.store.groups.insertGroup(group('0a2b', 'admins'), [], []);
  });
  after(() => ctx.close());

  async function get(clientId: string, search: Record<string, string>, quick: boolean) {
    const store = ctx.store.users;
    const original = store.queryScimUsers.bind(store);
    store.queryScimUsers = quick
      ? async (...args) => {
          const found = await original(...args);
          if (found !== undefined && found.length > 0) served++;
          return found;
        }
      : async () => undefined;
    try {
      return await ctx.app.inject({
        method: 'GET',
        url: `/scim/v2/${clientId}/Users?${new URLSearchParams(search)}`,
        headers: { authorization: `Bearer ${ctx.adminKey}` },
      });
    } finally {
      store.queryScimUsers = original;
    }
  }

  it(`answers ${RUNS} random lookups byte for byte as the general path does`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('app', 'app', 'plain', 'missing'),
        query,
        async (clientId, search) => {
          const quick = await get(clientId, search, true);
          const general = await get(clientId, search, false);
          const what = `${clientId} ${JSON.stringify(search)}`;
          assert.equal(quick.statusCode, general.statusCode, what);
          assert.equal(quick.headers['content-type'], general.headers['content-type'], what);
          assert.equal(quick.body, general.body, what);
        },
      ),
      { numRuns: RUNS },
    );
    // The property compared the one-read path, not the general path with itself.
    assert.ok(served > 0, 'the one-read path never answered');
  });

  it('answers the shapes Okta and Entra send in one read, as the general path does', async () => {
    const shapes: Record<string, string>[] = [
      { filter: 'userName eq "Alice"', startIndex: '1', count: '100' },
      { filter: 'userName eq "bob"', count: '1' },
      { filter: 'externalId eq "ext-1"', startIndex: '1', count: '100' },
      { filter: 'externalId eq "ext-1"', startIndex: '2', count: '1' },
      { filter: 'externalId eq "ext-1"', count: '1', excludedAttributes: 'groups' },
      { filter: 'id eq "id-3"', attributes: 'userName,groups.display' },
    ];
    for (const search of shapes) {
      const before = served;
      const quick = await get('app', search, true);
      assert.equal(served, before + 1, `not answered in one read: ${JSON.stringify(search)}`);
      assert.equal(quick.statusCode, 200);
      assert.equal(quick.body, (await get('app', search, false)).body, JSON.stringify(search));
    }
  });

  it('answers a lookup that finds nothing without the general read, and 404 when SCIM is off', async () => {
    const store = ctx.store.users;
    const queryUsers = store.queryUsers.bind(store);
    let generalReads = 0;
    store.queryUsers = (...args) => {
      generalReads++;
      return queryUsers(...args);
    };
    try {
      const search = { filter: 'userName eq "nobody"', startIndex: '1', count: '100' };
      const miss = await get('app', search, true);
      assert.equal(miss.statusCode, 200);
      assert.equal(miss.json<{ totalResults: number }>().totalResults, 0);
      assert.equal(generalReads, 0, 'the general path read the users again');
      const off = await get('plain', search, true);
      assert.equal(off.statusCode, 404);
      assert.equal(off.body, (await get('plain', search, false)).body);
      assert.equal(generalReads, 0, 'the general path answered the 404');
    } finally {
      store.queryUsers = queryUsers;
    }
  });

  it('leaves sorting to the general path, which refuses it', async () => {
    const search = { filter: 'userName eq "alice"', sortBy: 'userName' };
    const quick = await get('app', search, true);
    assert.equal(quick.statusCode, 400);
    assert.equal(quick.body, (await get('app', search, false)).body);
  });

  it('shows the Groups each user holds, ordered by id', async () => {
    const response = await get('app', { filter: 'userName eq "ALICE"' }, true);
    const body = response.json<{ totalResults: number; Resources: Record<string, unknown>[] }>();
    assert.equal(body.totalResults, 1);
    const first = body.Resources.find((user) => user.id === 'id-0')!;
    assert.deepEqual(
      (first.groups as { display: string }[]).map((g) => g.display),
      ['admins', 'readers'],
    );
  });
});
