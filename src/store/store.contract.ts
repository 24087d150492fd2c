// The behaviour every Store backend owes its callers, written against the Store interface
// only: each backend's test file runs describeStoreContract with its own opener.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DuplicateError, MissingParentError } from './errors.js';
import type {
  ApiKeyRecord,
  ApplicationRecord,
  Store,
  UserFilter,
  UserPosition,
  UserRecord,
} from './store.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function applicationRecord(
  clientId: string,
  overrides: Partial<ApplicationRecord> = {},
): ApplicationRecord {
  return {
    clientId,
    displayName: `Application ${clientId}`,
    description: '',
    mode: 'internal',
    jwtExpirationInMinutes: 60,
    externalTokenValidation: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `app-${clientId}-1`,
    ...overrides,
  };
}

function userRecord(
  clientId: string,
  provider: string,
  identifier: string,
  overrides: Partial<UserRecord> = {},
): UserRecord {
  return {
    clientId,
    provider,
    identifier,
    name: `User ${identifier}`,
    avatar: null,
    email: 'someone@example.com',
    locale: 'en',
    roles: [],
    scopes: [],
    createdAt: T0,
    updatedAt: T0,
    etag: `user-${provider}-${identifier}-1`,
    ...overrides,
  };
}

function apiKeyRecord(id: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    name: `key ${id}`,
    secretDigest: createHash('sha256').update(`secret of ${id}`).digest('hex'),
    roles: ['applications:read'],
    applications: null,
    createdAt: T0,
    updatedAt: T0,
    expiresAt: null,
    lastUsedAt: null,
    ...overrides,
  };
}

/** A key id in the service's shape (UUID v7 text), ordered by `n`. */
function keyId(n: number): string {
  return `0198a3c2-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;
}

const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

const byUserPosition = (a: UserPosition, b: UserPosition): number =>
  byBytes(a.provider, b.provider) || byBytes(a.identifier, b.identifier);

/** Walks a keyset-paged list to its end and returns the pages. */
async function walkPages<Row, Position>(
  fetchPage: (after: Position | null) => Promise<Row[]>,
  positionOf: (row: Row) => Position,
  limit: number,
): Promise<Row[][]> {
  const pages: Row[][] = [];
  let after: Position | null = null;
  for (;;) {
    const page = await fetchPage(after);
    assert.ok(page.length <= limit, `a page holds at most ${limit} rows`);
    if (page.length === 0) return pages;
    pages.push(page);
    if (page.length < limit) return pages;
    after = positionOf(page[page.length - 1]!);
  }
}

function pageSizes(total: number, limit: number): number[] {
  const sizes = Array.from({ length: Math.floor(total / limit) }, () => limit);
  return total % limit === 0 ? sizes : [...sizes, total % limit];
}

const identityOf = (user: UserRecord) => ({
  clientId: user.clientId,
  provider: user.provider,
  identifier: user.identifier,
});

export function describeStoreContract(name: string, openStore: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    let closed: boolean;

    beforeEach(async () => {
      store = await openStore();
      closed = false;
      await store.migrate();
    });

    afterEach(async () => {
      if (!closed) await store.close();
    });

    describe('applications', () => {
      const full = applicationRecord('billing-web', {
        displayName: 'Facturation 請求 😀',
        description: 'line one\nline\ttwo',
        mode: 'external',
        jwtExpirationInMinutes: 43200,
        externalTokenValidation: {
          zeta: 1,
          alpha: { nested: [1, 'two', null, true, { deep: -1.5 }] },
          '': 'empty key',
          text: 'ü 請 😀 \u0000 "quoted" \\',
          numbers: [0, 0.1, 1e300, -42, 9007199254740991],
          flags: { on: true, off: false, none: null },
          list: [],
          object: {},
        },
        createdAt: T0,
        updatedAt: 4102444800000,
        etag: 'W/"not-an-etag-format"',
      });

      it('returns from findApplication exactly what insertApplication stored', async () => {
        const plain = applicationRecord('plain');
        await store.applications.insertApplication(full);
        await store.applications.insertApplication(plain);
        const found = await store.applications.findApplication('billing-web');
        assert.deepEqual(found, full);
        // Member order too: external_token_validation is returned exactly as given.
        assert.equal(JSON.stringify(found), JSON.stringify(full));
        assert.deepEqual(await store.applications.findApplication('plain'), plain);
      });

      it('finds nothing for a missing client_id or one that differs in case', async () => {
        await store.applications.insertApplication(applicationRecord('App'));
        assert.equal(await store.applications.findApplication('app'), undefined);
        assert.equal(await store.applications.findApplication('missing'), undefined);
      });

      it('refuses an existing client_id with DuplicateError and keeps the first', async () => {
        const first = applicationRecord('billing');
        await store.applications.insertApplication(first);
        await assert.rejects(
          store.applications.insertApplication(applicationRecord('billing', { etag: 'other' })),
          DuplicateError,
        );
        assert.deepEqual(await store.applications.findApplication('billing'), first);
        await store.applications.insertApplication(applicationRecord('BILLING'));
        assert.equal(await store.applications.countApplications({ clientIds: null }), 2);
      });

      it('lists in byte order of client_id, in keyset pages of `limit` after `after`', async () => {
        const ids = ['b', 'B', 'a', 'A', '_x', '-x', '~', '0', '9', 'a.b', 'a-b', 'ab', 'a~', 'Z'];
        for (const id of ids) await store.applications.insertApplication(applicationRecord(id));
        const expected = [...ids].sort(byBytes);
        const pages = await walkPages<ApplicationRecord, string>(
          (after) => store.applications.listApplications({ clientIds: null }, { after, limit: 4 }),
          (row) => row.clientId,
          4,
        );
        assert.deepEqual(
          pages.map((page) => page.length),
          pageSizes(ids.length, 4),
        );
        assert.deepEqual(
          pages.flat().map((row) => row.clientId),
          expected,
        );
        assert.deepEqual(pages.flat()[0], applicationRecord(expected[0]!));
        const afterGap = await store.applications.listApplications(
          { clientIds: null },
          { after: 'a0', limit: 1000 },
        );
        assert.deepEqual(
          afterGap.map((row) => row.clientId),
          expected.filter((id) => byBytes(id, 'a0') > 0),
        );
        assert.deepEqual(
          await store.applications.listApplications({ clientIds: null }, { after: '~', limit: 5 }),
          [],
        );
        assert.equal(await store.applications.countApplications({ clientIds: null }), ids.length);
      });

      it('lists and counts only the given clientIds, paged', async () => {
        for (const id of ['a', 'b', 'c', 'd', 'e']) {
          await store.applications.insertApplication(applicationRecord(id));
        }
        const filter = { clientIds: ['e', 'b', 'missing', 'd', 'b', 'B'] };
        const pages = await walkPages<ApplicationRecord, string>(
          (after) => store.applications.listApplications(filter, { after, limit: 2 }),
          (row) => row.clientId,
          2,
        );
        assert.deepEqual(
          pages.map((page) => page.map((row) => row.clientId)),
          [['b', 'd'], ['e']],
        );
        assert.equal(await store.applications.countApplications(filter), 3);
      });

      it('lists and counts nothing for an empty clientIds list', async () => {
        await store.applications.insertApplication(applicationRecord('a'));
        const filter = { clientIds: [] };
        assert.deepEqual(
          await store.applications.listApplications(filter, { after: null, limit: 10 }),
          [],
        );
        assert.equal(await store.applications.countApplications(filter), 0);
      });

      it('replaces an application only with its current etag', async () => {
        const stored = applicationRecord('billing');
        await store.applications.insertApplication(stored);
        const next = { ...full, clientId: 'billing', createdAt: T0, etag: 'app-billing-2' };
        assert.equal(await store.applications.replaceApplication(next, 'app-billing-0'), false);
        assert.deepEqual(await store.applications.findApplication('billing'), stored);
        assert.equal(await store.applications.replaceApplication(next, stored.etag), true);
        assert.deepEqual(await store.applications.findApplication('billing'), next);
        assert.equal(await store.applications.replaceApplication(stored, stored.etag), false);
        assert.deepEqual(await store.applications.findApplication('billing'), next);
      });

      it('replaces nothing and creates nothing for a missing application', async () => {
        const ghost = applicationRecord('ghost');
        assert.equal(await store.applications.replaceApplication(ghost, ghost.etag), false);
        assert.equal(await store.applications.findApplication('ghost'), undefined);
      });

      it('deletes an application with its users, leaving other applications’ users', async () => {
        const doomed = applicationRecord('doomed');
        await store.applications.insertApplication(doomed);
        await store.applications.insertApplication(applicationRecord('kept'));
        const doomedUser = userRecord('doomed', 'google_oauth2', 'alice');
        await store.users.insertUser(doomedUser);
        await store.users.insertUser(userRecord('doomed', 'google_oauth2', 'bob'));
        await store.users.insertUser(userRecord('kept', 'google_oauth2', 'alice'));

        assert.equal(await store.applications.deleteApplicationCascade('doomed', 'stale'), false);
        assert.equal(await store.users.countUsers(usersOf('doomed')), 2);
        assert.equal(
          await store.applications.deleteApplicationCascade('doomed', doomed.etag),
          true,
        );

        assert.equal(await store.applications.findApplication('doomed'), undefined);
        assert.equal(await store.users.findUser(identityOf(doomedUser)), undefined);
        assert.equal(await store.users.countUsers(usersOf('doomed')), 0);
        assert.deepEqual(
          (await store.users.listUsers(usersOf('kept'), { after: null, limit: 10 })).map(
            (user) => user.identifier,
          ),
          ['alice'],
        );
        // Nothing of the old users is left to collide with.
        await store.applications.insertApplication(doomed);
        await store.users.insertUser(doomedUser);
        assert.equal(await store.users.countUsers(usersOf('doomed')), 1);
      });

      it('deletes nothing for a missing application', async () => {
        assert.equal(await store.applications.deleteApplicationCascade('ghost', 'any'), false);
        assert.equal(await store.applications.countApplications({ clientIds: null }), 0);
      });
    });

    function usersOf(clientId: string, filter: Partial<UserFilter> = {}): UserFilter {
      return { clientId, provider: null, email: null, role: null, scope: null, ...filter };
    }

    describe('users', () => {
      beforeEach(async () => {
        await store.applications.insertApplication(applicationRecord('app'));
        await store.applications.insertApplication(applicationRecord('other'));
      });

      it('returns from findUser exactly what insertUser stored', async () => {
        const full = userRecord('app', 'google_oauth2', 'Ünïcödé/請 😀 a@b %2F', {
          name: 'Zoë 請 😀',
          avatar: 'https://cdn.example.com/a.png?size=64',
          email: 'Zoe.Mixed@Example.COM',
          locale: 'zh-Hant-TW',
          roles: ['admin', 'billing:read', 'v1.2:x-y'],
          scopes: ['tenant:42', 'path:a\\b"c', 'région:請'],
          createdAt: 1,
          updatedAt: 4102444800000,
          etag: 'user-etag-ü',
        });
        const plain = userRecord('app', 'github_oauth', 'plain');
        await store.users.insertUser(full);
        await store.users.insertUser(plain);
        assert.deepEqual(await store.users.findUser(identityOf(full)), full);
        assert.deepEqual(await store.users.findUser(identityOf(plain)), plain);
      });

      it('finds nothing in another application, for another provider or another case', async () => {
        await store.users.insertUser(userRecord('app', 'google_oauth2', 'Alice'));
        const missing = [
          { clientId: 'other', provider: 'google_oauth2', identifier: 'Alice' },
          { clientId: 'app', provider: 'github_oauth', identifier: 'Alice' },
          { clientId: 'app', provider: 'google_oauth2', identifier: 'alice' },
          { clientId: 'ghost', provider: 'google_oauth2', identifier: 'Alice' },
        ];
        for (const identity of missing) {
          assert.equal(await store.users.findUser(identity), undefined, JSON.stringify(identity));
        }
      });

      it('refuses an existing identity in one application with DuplicateError', async () => {
        const first = userRecord('app', 'google_oauth2', 'alice');
        await store.users.insertUser(first);
        await assert.rejects(
          store.users.insertUser({ ...first, name: 'Second', etag: 'other' }),
          DuplicateError,
        );
        assert.deepEqual(await store.users.findUser(identityOf(first)), first);
        // The same pair elsewhere, or the identifier under another provider, is another user.
        await store.users.insertUser({ ...first, clientId: 'other' });
        await store.users.insertUser({ ...first, provider: 'google_oauth3' });
        assert.equal(await store.users.countUsers(usersOf('app')), 2);
        assert.equal(await store.users.countUsers(usersOf('other')), 1);
      });

      it('refuses a user of a missing application with MissingParentError', async () => {
        const orphan = userRecord('ghost', 'google_oauth2', 'alice');
        await assert.rejects(store.users.insertUser(orphan), MissingParentError);
        await store.applications.insertApplication(applicationRecord('ghost'));
        assert.equal(await store.users.findUser(identityOf(orphan)), undefined);
      });

      it('lists in byte order of (provider, identifier), in keyset pages', async () => {
        const providers = ['ab_cd', 'ab_c-d', 'ab_c', 'ab_c0', 'a_b'];
        const identifiers = ['a', 'aa', 'a a', 'B', 'é', '\uE000', '\uFFFD', '😀', '~', '請'];
        const positions = providers.flatMap((provider) =>
          identifiers.map((identifier) => ({ provider, identifier })),
        );
        for (const { provider, identifier } of positions) {
          await store.users.insertUser(userRecord('app', provider, identifier));
        }
        await store.users.insertUser(userRecord('other', 'ab_c', 'elsewhere'));
        const expected = [...positions].sort(byUserPosition);
        // Guards the fixture: UTF-16 order differs from byte order for these identifiers.
        assert.notDeepEqual([...identifiers].sort(), [...identifiers].sort(byBytes));

        const pages = await walkPages<UserRecord, UserPosition>(
          (after) => store.users.listUsers(usersOf('app'), { after, limit: 7 }),
          (user) => ({ provider: user.provider, identifier: user.identifier }),
          7,
        );
        assert.deepEqual(
          pages.map((page) => page.length),
          pageSizes(positions.length, 7),
        );
        assert.deepEqual(
          pages.flat().map((user) => ({ provider: user.provider, identifier: user.identifier })),
          expected,
        );
        const after = { provider: 'ab_c', identifier: 'b' };
        const rest = await store.users.listUsers(usersOf('app'), { after, limit: 1000 });
        assert.deepEqual(
          rest.map((user) => ({ provider: user.provider, identifier: user.identifier })),
          expected.filter((position) => byUserPosition(position, after) > 0),
        );
        assert.equal(await store.users.countUsers(usersOf('app')), positions.length);
      });

      describe('filters', () => {
        // Near misses on purpose: prefix providers, 'admins', 'Admin', 'tenant:10', LIKE wildcards.
        const users = [
          userRecord('app', 'ab_c', 'u1', {
            email: 'Alice@Example.com',
            roles: ['admin', 'billing'],
            scopes: ['tenant:1'],
          }),
          userRecord('app', 'ab_c', 'u2', {
            email: 'bob@example.com',
            roles: ['admins'],
            scopes: ['tenant:10', 'tenant:_'],
          }),
          userRecord('app', 'ab_c-d', 'u3', {
            email: 'alice@example.com',
            roles: ['admin'],
            scopes: ['tenant:1', 'path:a\\b"c'],
          }),
          userRecord('app', 'ab_cd', 'u4', {
            email: 'ALICE@EXAMPLE.COM',
            roles: ['Admin', 'admin'],
            scopes: ['tenant:1'],
          }),
          userRecord('app', 'ab_c', 'u5', {
            email: 'Ünïcode@example.com',
            roles: ['billing'],
            scopes: ['tenant:%'],
          }),
          userRecord('app', 'ab_c', 'u6', {
            email: 'alice@example.com',
            roles: ['admin'],
            scopes: ['tenant:2'],
          }),
          userRecord('other', 'ab_c', 'u7', {
            email: 'alice@example.com',
            roles: ['admin'],
            scopes: ['tenant:1'],
          }),
        ];
        const cases: { filter: Partial<UserFilter>; expected: string[] }[] = [
          { filter: {}, expected: ['u1', 'u2', 'u5', 'u6', 'u3', 'u4'] },
          { filter: { provider: 'ab_c' }, expected: ['u1', 'u2', 'u5', 'u6'] },
          { filter: { provider: 'ab_c-d' }, expected: ['u3'] },
          { filter: { provider: 'ab' }, expected: [] },
          { filter: { email: 'alice@example.com' }, expected: ['u1', 'u6', 'u3', 'u4'] },
          { filter: { email: 'aLiCe@eXaMpLe.CoM' }, expected: ['u1', 'u6', 'u3', 'u4'] },
          { filter: { email: 'üNÏCODE@EXAMPLE.COM' }, expected: ['u5'] },
          { filter: { email: 'alice@example' }, expected: [] },
          { filter: { role: 'admin' }, expected: ['u1', 'u6', 'u3', 'u4'] },
          { filter: { role: 'Admin' }, expected: ['u4'] },
          { filter: { role: 'admi' }, expected: [] },
          { filter: { scope: 'tenant:1' }, expected: ['u1', 'u3', 'u4'] },
          { filter: { scope: 'tenant:_' }, expected: ['u2'] },
          { filter: { scope: 'tenant:%' }, expected: ['u5'] },
          { filter: { scope: 'path:a\\b"c' }, expected: ['u3'] },
          { filter: { provider: 'ab_c', role: 'admin' }, expected: ['u1', 'u6'] },
          {
            filter: { email: 'ALICE@example.com', scope: 'tenant:1' },
            expected: ['u1', 'u3', 'u4'],
          },
          {
            filter: {
              provider: 'ab_c',
              email: 'alice@example.com',
              role: 'admin',
              scope: 'tenant:1',
            },
            expected: ['u1'],
          },
          { filter: { role: 'billing', scope: 'tenant:2' }, expected: [] },
        ];

        beforeEach(async () => {
          for (const user of users) await store.users.insertUser(user);
        });

        for (const { filter, expected } of cases) {
          it(`lists and counts ${JSON.stringify(filter)} as ${JSON.stringify(expected)}`, async () => {
            const pages = await walkPages<UserRecord, UserPosition>(
              (after) => store.users.listUsers(usersOf('app', filter), { after, limit: 2 }),
              (user) => ({ provider: user.provider, identifier: user.identifier }),
              2,
            );
            assert.deepEqual(
              pages.map((page) => page.length),
              pageSizes(expected.length, 2),
            );
            assert.deepEqual(
              pages.flat().map((user) => user.identifier),
              expected,
            );
            assert.equal(await store.users.countUsers(usersOf('app', filter)), expected.length);
          });
        }

        it('lists and counts nothing for an application without users or a missing one', async () => {
          await store.applications.insertApplication(applicationRecord('empty'));
          for (const clientId of ['empty', 'ghost']) {
            const filter = usersOf(clientId);
            assert.deepEqual(await store.users.listUsers(filter, { after: null, limit: 10 }), []);
            assert.equal(await store.users.countUsers(filter), 0);
          }
        });
      });

      it('replaces a user only with its current etag, and filters see the new values', async () => {
        const stored = userRecord('app', 'google_oauth2', 'alice', {
          email: 'old@example.com',
          roles: ['reader'],
        });
        await store.users.insertUser(stored);
        const next: UserRecord = {
          ...stored,
          name: 'Alice Replaced',
          avatar: 'https://example.com/alice.png',
          email: 'New@Example.com',
          locale: 'fr-CA',
          roles: ['writer'],
          scopes: ['tenant:9'],
          updatedAt: T0 + 1,
          etag: 'user-alice-2',
        };
        assert.equal(await store.users.replaceUser(next, 'stale'), false);
        assert.deepEqual(await store.users.findUser(identityOf(stored)), stored);
        assert.equal(await store.users.replaceUser(next, stored.etag), true);
        assert.deepEqual(await store.users.findUser(identityOf(stored)), next);
        assert.equal(await store.users.replaceUser(stored, stored.etag), false);
        assert.deepEqual(await store.users.findUser(identityOf(stored)), next);

        for (const [filter, count] of [
          [{ email: 'old@example.com' }, 0],
          [{ email: 'new@example.com' }, 1],
          [{ role: 'reader' }, 0],
          [{ role: 'writer' }, 1],
          [{ scope: 'tenant:9' }, 1],
        ] as const) {
          assert.equal(await store.users.countUsers(usersOf('app', filter)), count);
        }
      });

      it('replaces nothing and creates nothing for a missing user', async () => {
        const ghost = userRecord('app', 'google_oauth2', 'ghost');
        assert.equal(await store.users.replaceUser(ghost, ghost.etag), false);
        assert.equal(await store.users.findUser(identityOf(ghost)), undefined);
      });

      it('deletes a user only with its current etag', async () => {
        const alice = userRecord('app', 'google_oauth2', 'alice');
        const bob = userRecord('app', 'google_oauth2', 'bob');
        await store.users.insertUser(alice);
        await store.users.insertUser(bob);
        await store.users.insertUser({ ...alice, clientId: 'other' });
        assert.equal(await store.users.deleteUser(identityOf(alice), 'stale'), false);
        assert.deepEqual(await store.users.findUser(identityOf(alice)), alice);
        assert.equal(await store.users.deleteUser(identityOf(alice), alice.etag), true);
        assert.equal(await store.users.findUser(identityOf(alice)), undefined);
        assert.equal(await store.users.deleteUser(identityOf(alice), alice.etag), false);
        assert.deepEqual(await store.users.findUser(identityOf(bob)), bob);
        assert.equal(await store.users.countUsers(usersOf('other')), 1);
      });
    });

    describe('API keys', () => {
      it('returns from findApiKey and findApiKeyByDigest exactly what insertApiKey stored', async () => {
        const restricted = apiKeyRecord(keyId(1), {
          name: 'Clé de facturation 請 😀',
          roles: ['applications:read', 'users:write'],
          applications: ['billing-web', 'Billing.API'],
          createdAt: T0,
          updatedAt: T0 + 5,
          expiresAt: 8.64e15,
          lastUsedAt: 0,
        });
        const open = apiKeyRecord(keyId(2));
        await store.apiKeys.insertApiKey(restricted);
        await store.apiKeys.insertApiKey(open);
        assert.deepEqual(await store.apiKeys.findApiKey(restricted.id), restricted);
        assert.deepEqual(
          await store.apiKeys.findApiKeyByDigest(restricted.secretDigest),
          restricted,
        );
        assert.deepEqual(await store.apiKeys.findApiKey(open.id), open);
        assert.deepEqual(await store.apiKeys.findApiKeyByDigest(open.secretDigest), open);
        assert.equal(await store.apiKeys.findApiKey(keyId(3)), undefined);
        assert.equal(await store.apiKeys.findApiKeyByDigest('0'.repeat(64)), undefined);
      });

      it('refuses an existing id or secret digest with DuplicateError', async () => {
        const first = apiKeyRecord(keyId(1));
        await store.apiKeys.insertApiKey(first);
        const sameId = apiKeyRecord(keyId(1), { secretDigest: 'f'.repeat(64) });
        const sameDigest = apiKeyRecord(keyId(2), { secretDigest: first.secretDigest });
        await assert.rejects(store.apiKeys.insertApiKey(sameId), DuplicateError);
        await assert.rejects(store.apiKeys.insertApiKey(sameDigest), DuplicateError);
        assert.equal(await store.apiKeys.countApiKeys(), 1);
        assert.deepEqual(await store.apiKeys.findApiKey(first.id), first);
        assert.equal(await store.apiKeys.findApiKeyByDigest(sameId.secretDigest), undefined);
      });

      it('lists keys by id in keyset pages and counts them', async () => {
        const ids = [7, 1, 12, 3, 9, 16, 2].map(keyId);
        for (const id of ids) await store.apiKeys.insertApiKey(apiKeyRecord(id));
        const pages = await walkPages<ApiKeyRecord, string>(
          (after) => store.apiKeys.listApiKeys({ after, limit: 3 }),
          (key) => key.id,
          3,
        );
        assert.deepEqual(
          pages.map((page) => page.map((key) => key.id)),
          [[1, 2, 3], [7, 9, 12], [16]].map((page) => page.map(keyId)),
        );
        assert.deepEqual(pages[0]![0], apiKeyRecord(keyId(1)));
        assert.equal(await store.apiKeys.countApiKeys(), ids.length);
      });

      it('inserts the first key only into an empty key table', async () => {
        assert.equal(await store.apiKeys.countApiKeys(), 0);
        const first = apiKeyRecord(keyId(1), {
          roles: ['keys:write', 'keys:read'],
          applications: ['a'],
          expiresAt: T0 + 1000,
          lastUsedAt: T0 + 10,
          updatedAt: T0 + 20,
        });
        assert.equal(await store.apiKeys.insertFirstApiKey(first), true);
        assert.deepEqual(await store.apiKeys.findApiKey(first.id), first);
        const second = apiKeyRecord(keyId(2));
        assert.equal(await store.apiKeys.insertFirstApiKey(second), false);
        assert.equal(await store.apiKeys.findApiKey(second.id), undefined);
        assert.equal(await store.apiKeys.countApiKeys(), 1);
      });

      it('inserts no first key when any key exists', async () => {
        await store.apiKeys.insertApiKey(apiKeyRecord(keyId(5)));
        assert.equal(await store.apiKeys.insertFirstApiKey(apiKeyRecord(keyId(1))), false);
        assert.equal(await store.apiKeys.findApiKey(keyId(1)), undefined);
      });

      it('lets exactly one of 10 concurrent insertFirstApiKey calls insert', async () => {
        const candidates = Array.from({ length: 10 }, (_, n) => apiKeyRecord(keyId(n + 1)));
        const outcomes = await Promise.all(
          candidates.map((key) => store.apiKeys.insertFirstApiKey(key)),
        );
        assert.equal(outcomes.filter(Boolean).length, 1);
        const winner = candidates[outcomes.indexOf(true)]!;
        assert.deepEqual(await store.apiKeys.listApiKeys({ after: null, limit: 100 }), [winner]);
      });

      it('updates grants: roles and applications set, expiry cleared, updatedAt set', async () => {
        const key = apiKeyRecord(keyId(1), {
          applications: ['a'],
          expiresAt: T0 + 1000,
          lastUsedAt: T0 + 7,
        });
        await store.apiKeys.insertApiKey(key);
        await store.apiKeys.insertApiKey(apiKeyRecord(keyId(2)));
        const roles = ['keys:read', 'keys:write', 'users:read'];
        await store.apiKeys.updateApiKeyGrants(key.id, {
          roles,
          applications: null,
          updatedAt: T0 + 60000,
        });
        const unrestricted = {
          ...key,
          roles,
          applications: null,
          expiresAt: null,
          updatedAt: T0 + 60000,
        };
        assert.deepEqual(await store.apiKeys.findApiKey(key.id), unrestricted);
        await store.apiKeys.updateApiKeyGrants(key.id, {
          roles: ['events:read'],
          applications: ['b', 'c'],
          updatedAt: T0 + 120000,
        });
        assert.deepEqual(await store.apiKeys.findApiKey(key.id), {
          ...unrestricted,
          roles: ['events:read'],
          applications: ['b', 'c'],
          updatedAt: T0 + 120000,
        });
        assert.deepEqual(await store.apiKeys.findApiKey(keyId(2)), apiKeyRecord(keyId(2)));
      });

      it('records uses without ever moving last_used_at backwards', async () => {
        const key = apiKeyRecord(keyId(1));
        await store.apiKeys.insertApiKey(key);
        const steps: [number, number][] = [
          [T0 + 60000, T0 + 60000],
          [T0 + 120000, T0 + 120000],
          [T0 + 90000, T0 + 120000],
          [T0 + 120000, T0 + 120000],
          [T0, T0 + 120000],
        ];
        for (const [usedAt, expected] of steps) {
          await store.apiKeys.touchApiKey(key.id, usedAt);
          assert.deepEqual(await store.apiKeys.findApiKey(key.id), {
            ...key,
            lastUsedAt: expected,
          });
        }
        await store.apiKeys.touchApiKey(keyId(2), T0);
        assert.equal(await store.apiKeys.countApiKeys(), 1);
      });

      it('deletes a key and reports whether it existed', async () => {
        const doomed = apiKeyRecord(keyId(1));
        await store.apiKeys.insertApiKey(doomed);
        await store.apiKeys.insertApiKey(apiKeyRecord(keyId(2)));
        assert.equal(await store.apiKeys.deleteApiKey(doomed.id), true);
        assert.equal(await store.apiKeys.findApiKey(doomed.id), undefined);
        assert.equal(await store.apiKeys.findApiKeyByDigest(doomed.secretDigest), undefined);
        assert.equal(await store.apiKeys.deleteApiKey(doomed.id), false);
        assert.equal(await store.apiKeys.deleteApiKey(keyId(3)), false);
        assert.deepEqual(await store.apiKeys.findApiKey(keyId(2)), apiKeyRecord(keyId(2)));
      });
    });

    describe('settings', () => {
      it('returns the first value written, forever', async () => {
        assert.equal(await store.settings.getOrCreateSetting('cursor_key', 'first'), 'first');
        assert.equal(await store.settings.getOrCreateSetting('cursor_key', 'second'), 'first');
        assert.equal(await store.settings.getOrCreateSetting('other', 'ü 請 😀'), 'ü 請 😀');
        assert.equal(await store.settings.getOrCreateSetting('cursor_key', ''), 'first');
      });

      it('finds and replaces settings', async () => {
        assert.equal(await store.settings.findSetting('bootstrap'), undefined);
        await store.settings.putSetting('bootstrap', 'one');
        assert.equal(await store.settings.findSetting('bootstrap'), 'one');
        await store.settings.putSetting('bootstrap', 'two');
        assert.equal(await store.settings.findSetting('bootstrap'), 'two');
        assert.equal(await store.settings.getOrCreateSetting('bootstrap', 'three'), 'two');
        assert.equal(await store.settings.findSetting('other'), undefined);
      });

      it('gives 10 concurrent callers the same value', async () => {
        const initials = Array.from({ length: 10 }, (_, n) => `value-${n}`);
        const values = await Promise.all(
          initials.map((initial) => store.settings.getOrCreateSetting('cursor_key', initial)),
        );
        assert.ok(initials.includes(values[0]!), `${values[0]} is one of the initial values`);
        assert.deepEqual(
          values,
          initials.map(() => values[0]),
        );
        assert.equal(await store.settings.getOrCreateSetting('cursor_key', 'late'), values[0]);
      });
    });

    describe('lifecycle', () => {
      it('answers ping', async () => {
        await store.ping();
        assert.ok(store.kind === 'sqlite' || store.kind === 'postgres');
      });

      it('migrates again without harm, keeping the data', async () => {
        const stored = applicationRecord('billing');
        await store.applications.insertApplication(stored);
        await store.migrate();
        await store.migrate();
        assert.deepEqual(await store.applications.findApplication('billing'), stored);
      });

      it('settles writes started before close by the time close resolves', async () => {
        const settled: string[] = [];
        const writes = [
          store.applications.insertApplication(applicationRecord('a')),
          store.applications.insertApplication(applicationRecord('b')),
          store.apiKeys.insertApiKey(apiKeyRecord(keyId(1))),
        ].map((write, index) => write.then(() => settled.push(`write ${index}`)));
        const refused = store.applications
          .insertApplication(applicationRecord('a'))
          .catch((error: unknown) => settled.push(`refused: ${(error as Error).name}`));
        // A read-after-write: it must complete, not fail on a released database.
        const setting = store.settings.getOrCreateSetting('name', 'value');
        await store.close();
        closed = true;
        assert.deepEqual(settled.sort(), [
          'refused: DuplicateError',
          'write 0',
          'write 1',
          'write 2',
        ]);
        await Promise.all([...writes, refused]);
        assert.equal(await setting, 'value');
      });
    });
  });
}
