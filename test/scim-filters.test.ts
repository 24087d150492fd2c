// tessera-test: both-stores
// Property: any SCIM filter over Users returns, through the server (parser → store predicate →
// SQL on this pass's store), exactly the users an in-memory evaluation of the same filter over
// their SCIM representations selects (scim.evaluate.ts, which follows RFC 7644 §3.4.2.2).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { matchesFilter } from '../src/modules/scim/scim.evaluate.js';
import { parseFilter } from '../src/modules/scim/scim.filter.js';
import { USER_DEFINITIONS } from '../src/modules/scim/scim.user-query.js';
import { toScimUser } from '../src/modules/scim/scim.users.js';
import type { UserRecord } from '../src/store/store.js';
import { foldAsciiCase } from '../src/store/user-predicate.js';
import { START_TIME, type TestContext, buildTestApp, createApplication } from './helpers.js';

const PROVIDER = 'okta_scim';
const STEMS = ['alice', 'ALICE', 'Alice', 'bob', 'Bob', 'éva', 'Éva', 'al', 'a-b', 'zed', 'Zo'];
const RUNS = Number(process.env.TESSERA_PROPERTY_RUNS ?? 300);

/** Identifiers from the stems; one that equals an earlier one ignoring ASCII case gets its number. */
function identifiers(): string[] {
  const taken = new Set<string>();
  return Array.from({ length: 36 }, (_, n) => {
    const bare = `${STEMS[n % STEMS.length]}${n % 4 === 0 ? '' : n}`;
    // SCIM userNames differ in more than ASCII case: the database holds them to it.
    const identifier = taken.has(foldAsciiCase(bare)) ? `${bare}${n}` : bare;
    taken.add(foldAsciiCase(identifier));
    return identifier;
  });
}

function users(): UserRecord[] {
  const names = identifiers();
  return Array.from({ length: 36 }, (_, n) => {
    const stem = STEMS[n % STEMS.length]!;
    return {
      clientId: 'app',
      provider: PROVIDER,
      identifier: names[n]!,
      id: `id-${String(n).padStart(2, '0')}${n % 3 === 0 ? 'X' : 'x'}`,
      name: `${STEMS[(n * 7) % STEMS.length]} ${n % 5 === 0 ? 'Smith' : 'smith'}`,
      avatar: null,
      email: `${stem.normalize('NFD').replace(/[^A-Za-z-]/g, '')}${n}@Example.com`,
      locale: 'en',
      roles: [],
      scopes: [],
      active: n % 3 !== 1,
      externalId: n % 4 === 1 ? null : n % 4 === 2 ? '' : `${n % 2 === 0 ? 'EXT' : 'ext'}-${n % 5}`,
      createdAt: START_TIME,
      updatedAt: START_TIME + (n % 6) * 60_000,
      etag: `e${n}`,
    };
  });
}

const text = fc.constantFrom(
  'alice',
  'ALICE',
  'al',
  'Al',
  'bob',
  'É',
  'é',
  'ext',
  'EXT-1',
  'ext-2',
  'smith',
  'Smith',
  '',
  'x',
  'X',
  '@example.com',
  'id-0',
  '1',
);
const stringOperator = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le');
const stringAttribute = fc.constantFrom(
  'userName',
  'externalId',
  'id',
  'displayName',
  'name.formatted',
  'emails.value',
  'emails',
  'title',
);

const comparison: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(stringAttribute, stringOperator, text)
    .map(([a, o, v]) => `${a} ${o} ${JSON.stringify(v)}`),
  fc
    .tuple(fc.constantFrom('eq', 'ne'), fc.boolean(), fc.constantFrom('active', 'ACTIVE'))
    .map(([o, v, a]) => `${a} ${o} ${v ? 'True' : 'false'}`),
  fc
    .tuple(fc.constantFrom('eq', 'ne', 'gt', 'ge', 'lt', 'le'), fc.integer({ min: -1, max: 6 }))
    .map(([o, m]) => `meta.lastModified ${o} "${new Date(START_TIME + m * 60_000).toISOString()}"`),
  fc
    .constantFrom('userName', 'externalId', 'title', 'emails', 'name.formatted')
    .map((a) => `${a} pr`),
  fc.constantFrom('eq', 'ne').map((o) => `externalId ${o} null`),
  fc
    .tuple(stringOperator, text)
    .map(([o, v]) => `emails[type eq "work" and value ${o} ${JSON.stringify(v)}]`),
  fc
    .tuple(stringOperator, text)
    .map(([o, v]) => `emails[type eq "WORK"].value ${o} ${JSON.stringify(v)}`),
);

const filter: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    comparison,
    fc
      .tuple(tie('node'), fc.constantFrom('and', 'or', 'AND', 'Or'), tie('node'))
      .map(([l, op, r]) => `(${l}) ${op} (${r})`),
    tie('node').map((inner) => `not (${inner})`),
  ),
})).node;

describe('SCIM filters: SQL against an in-memory evaluation', () => {
  let ctx: TestContext;
  const data = users();
  const base = 'http://scim.test/scim/v2/app';

  before(async () => {
    ctx = await buildTestApp({ logLevel: 'warn' });
    await createApplication(ctx, { client_id: 'app', scim_provider: PROVIDER });
    await ctx.store.users.insertUsers(data, []);
  });
  after(() => ctx.close());

  it(`returns the same users for ${RUNS} random filters`, async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (text) => {
        const response = await ctx.app.inject({
          method: 'GET',
          url: `/scim/v2/app/Users?count=1000&attributes=id&filter=${encodeURIComponent(text)}`,
          headers: { authorization: `Bearer ${ctx.adminKey}` },
        });
        assert.equal(response.statusCode, 200, `${text}: ${response.body}`);
        const body = response.json<{ totalResults: number; Resources: { id: string }[] }>();
        const parsed = parseFilter(text);
        const expected = data
          .filter((user) => matchesFilter(toScimUser(user, [], base), parsed, USER_DEFINITIONS))
          .map((user) => user.id)
          .sort();
        assert.deepEqual(body.Resources.map((user) => user.id).sort(), expected, text);
        assert.equal(body.totalResults, expected.length, text);
      }),
      { numRuns: RUNS },
    );
  });
});
