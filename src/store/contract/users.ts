import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { DuplicateError, MissingParentError, USER_NAME_INDEX } from '../errors.js';
import type { UserFilter, UserPosition, UserRecord } from '../store.js';
import {
  type ContractContext,
  T0,
  applicationRecord,
  userRecord,
  byBytes,
  byUserPosition,
  walkPages,
  pageSizes,
  identityOf,
  usersOf,
} from './fixtures.js';

export function describeUsersContract(ctx: ContractContext): void {
  describe('users', () => {
    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
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
        labels: { email: { type: 'home', primary: false }, avatar: { type: 'thumbnail' } },
      });
      const plain = userRecord('app', 'github_oauth', 'plain');
      await ctx.store.users.insertUser(full, []);
      await ctx.store.users.insertUser(plain, []);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(full)), full);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(plain)), plain);
    });

    it('finds nothing in another application, for another provider or another case', async () => {
      await ctx.store.users.insertUser(userRecord('app', 'google_oauth2', 'Alice'), []);
      const missing = [
        { clientId: 'other', provider: 'google_oauth2', identifier: 'Alice' },
        { clientId: 'app', provider: 'github_oauth', identifier: 'Alice' },
        { clientId: 'app', provider: 'google_oauth2', identifier: 'alice' },
        { clientId: 'ghost', provider: 'google_oauth2', identifier: 'Alice' },
      ];
      for (const identity of missing) {
        assert.equal(await ctx.store.users.findUser(identity), undefined, JSON.stringify(identity));
      }
    });

    it('refuses an existing identity in one application with DuplicateError', async () => {
      const first = userRecord('app', 'google_oauth2', 'alice');
      await ctx.store.users.insertUser(first, []);
      await assert.rejects(
        ctx.store.users.insertUser({ ...first, name: 'Second', etag: 'other' }, []),
        DuplicateError,
      );
      assert.deepEqual(await ctx.store.users.findUser(identityOf(first)), first);
      // The same pair elsewhere, or the identifier under another provider, is another user.
      await ctx.store.users.insertUser({ ...first, clientId: 'other' }, []);
      await ctx.store.users.insertUser({ ...first, provider: 'google_oauth3', id: 'another' }, []);
      assert.equal(await ctx.store.users.countUsers(usersOf('app')), 2);
      assert.equal(await ctx.store.users.countUsers(usersOf('other')), 1);
    });

    it('refuses a user of a missing application with MissingParentError', async () => {
      const orphan = userRecord('ghost', 'google_oauth2', 'alice');
      await assert.rejects(ctx.store.users.insertUser(orphan, []), MissingParentError);
      await ctx.store.applications.insertApplication(applicationRecord('ghost'), []);
      assert.equal(await ctx.store.users.findUser(identityOf(orphan)), undefined);
    });

    it('inserts many users at once with insertUsers, or none of them', async () => {
      // More than one INSERT statement's worth, so the all-or-nothing spans statements.
      const many = Array.from({ length: 2500 }, (_, index) =>
        userRecord('app', 'google_oauth2', `bulk-${String(index).padStart(4, '0')}`, {
          roles: [`role-${index}`],
          scopes: ['org:acme'],
        }),
      );
      await ctx.store.users.insertUsers(many, []);
      assert.equal(await ctx.store.users.countUsers(usersOf('app')), many.length);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(many[2499]!)), many[2499]);
      await ctx.store.users.insertUsers([], []);

      const fresh = Array.from({ length: 1500 }, (_, index) =>
        userRecord('other', 'github_oauth', `fresh-${index}`),
      );
      // The duplicate sits in the second statement: the first one's rows are undone too.
      await assert.rejects(
        ctx.store.users.insertUsers([...fresh, { ...many[0]!, name: 'Again' }], []),
        DuplicateError,
      );
      await assert.rejects(
        ctx.store.users.insertUsers([...fresh, userRecord('ghost', 'google_oauth2', 'orphan')], []),
        MissingParentError,
      );
      assert.equal(await ctx.store.users.countUsers(usersOf('other')), 0);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(many[0]!)), many[0]);
    });

    it('lists in byte order of (provider, identifier), in keyset pages', async () => {
      const providers = ['ab_cd', 'ab_c-d', 'ab_c', 'ab_c0', 'a_b'];
      const identifiers = ['a', 'aa', 'a a', 'B', 'é', '\uE000', '\uFFFD', '😀', '~', '請'];
      const positions = providers.flatMap((provider) =>
        identifiers.map((identifier) => ({ provider, identifier })),
      );
      for (const { provider, identifier } of positions) {
        await ctx.store.users.insertUser(userRecord('app', provider, identifier), []);
      }
      await ctx.store.users.insertUser(userRecord('other', 'ab_c', 'elsewhere'), []);
      const expected = [...positions].sort(byUserPosition);
      // Guards the fixture: UTF-16 order differs from byte order for these identifiers.
      assert.notDeepEqual([...identifiers].sort(), [...identifiers].sort(byBytes));

      const pages = await walkPages<UserRecord, UserPosition>(
        (after) => ctx.store.users.listUsers(usersOf('app'), { after, limit: 7 }),
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
      const rest = await ctx.store.users.listUsers(usersOf('app'), { after, limit: 1000 });
      assert.deepEqual(
        rest.map((user) => ({ provider: user.provider, identifier: user.identifier })),
        expected.filter((position) => byUserPosition(position, after) > 0),
      );
      assert.equal(await ctx.store.users.countUsers(usersOf('app')), positions.length);
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
        for (const user of users) await ctx.store.users.insertUser(user, []);
      });

      for (const { filter, expected } of cases) {
        it(`lists and counts ${JSON.stringify(filter)} as ${JSON.stringify(expected)}`, async () => {
          const pages = await walkPages<UserRecord, UserPosition>(
            (after) => ctx.store.users.listUsers(usersOf('app', filter), { after, limit: 2 }),
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
          assert.equal(await ctx.store.users.countUsers(usersOf('app', filter)), expected.length);
        });
      }

      it('lists and counts nothing for an application without users or a missing one', async () => {
        await ctx.store.applications.insertApplication(applicationRecord('empty'), []);
        for (const clientId of ['empty', 'ghost']) {
          const filter = usersOf(clientId);
          assert.deepEqual(await ctx.store.users.listUsers(filter, { after: null, limit: 10 }), []);
          assert.equal(await ctx.store.users.countUsers(filter), 0);
        }
      });
    });

    it('replaces a user only with its current etag, and filters see the new values', async () => {
      const stored = userRecord('app', 'google_oauth2', 'alice', {
        email: 'old@example.com',
        roles: ['reader'],
      });
      await ctx.store.users.insertUser(stored, []);
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
      assert.equal(await ctx.store.users.replaceUser(next, 'stale', []), false);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(stored)), stored);
      assert.equal(await ctx.store.users.replaceUser(next, stored.etag, []), true);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(stored)), next);
      assert.equal(await ctx.store.users.replaceUser(stored, stored.etag, []), false);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(stored)), next);

      for (const [filter, count] of [
        [{ email: 'old@example.com' }, 0],
        [{ email: 'new@example.com' }, 1],
        [{ role: 'reader' }, 0],
        [{ role: 'writer' }, 1],
        [{ scope: 'tenant:9' }, 1],
      ] as const) {
        assert.equal(await ctx.store.users.countUsers(usersOf('app', filter)), count);
      }
    });

    it('replaces a profile that keeps the identity alike, and refuses it for a renamed user', async () => {
      const stored = userRecord('app', 'google_oauth2', 'alice', { externalId: 'ext-1' });
      await ctx.store.users.insertUser(stored, []);
      const next: UserRecord = {
        ...stored,
        name: 'Alice Kept',
        email: 'Kept@Example.com',
        roles: ['writer'],
        active: false,
        externalId: 'ext-2',
        labels: { email: { type: 'work', primary: true } },
        updatedAt: T0 + 1,
        etag: 'user-alice-2',
      };
      const keeps = { keepsIdentity: true };
      assert.equal(await ctx.store.users.replaceUser(next, 'stale', [], keeps), false);
      assert.equal(await ctx.store.users.replaceUser(next, stored.etag, [], keeps), true);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(stored)), next);
      assert.equal(
        await ctx.store.users.countUsers(usersOf('app', { email: 'kept@example.com' })),
        1,
      );
      // Told wrongly that the identity stays: nothing changes, rather than half of the user.
      const renamed = { ...next, identifier: 'alicia', updatedAt: T0 + 2, etag: 'user-alice-3' };
      assert.equal(await ctx.store.users.replaceUser(renamed, next.etag, [], keeps), false);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(stored)), next);
      assert.equal(await ctx.store.users.replaceUser(renamed, next.etag, []), true);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(renamed)), renamed);
    });

    it('replaces nothing and creates nothing for a missing user', async () => {
      const ghost = userRecord('app', 'google_oauth2', 'ghost');
      assert.equal(await ctx.store.users.replaceUser(ghost, ghost.etag, []), false);
      assert.equal(await ctx.store.users.findUser(identityOf(ghost)), undefined);
    });

    it('deletes a user only with its current etag', async () => {
      const alice = userRecord('app', 'google_oauth2', 'alice');
      const bob = userRecord('app', 'google_oauth2', 'bob');
      await ctx.store.users.insertUser(alice, []);
      await ctx.store.users.insertUser(bob, []);
      await ctx.store.users.insertUser({ ...alice, clientId: 'other' }, []);
      assert.equal(await ctx.store.users.deleteUser(identityOf(alice), 'stale', []), false);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(alice)), alice);
      assert.equal(await ctx.store.users.deleteUser(identityOf(alice), alice.etag, []), true);
      assert.equal(await ctx.store.users.findUser(identityOf(alice)), undefined);
      assert.equal(await ctx.store.users.deleteUser(identityOf(alice), alice.etag, []), false);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(bob)), bob);
      assert.equal(await ctx.store.users.countUsers(usersOf('other')), 1);
    });
  });

  describe('SCIM userNames: unique under the SCIM provider regardless of ASCII case', () => {
    const SCIM = 'okta_scim';
    const isUserNameClash = (error: unknown) =>
      error instanceof DuplicateError && error.index === USER_NAME_INDEX;

    beforeEach(async () => {
      await ctx.store.applications.insertApplication(
        applicationRecord('hr', { scimProvider: SCIM }),
        [],
      );
      await ctx.store.applications.insertApplication(
        applicationRecord('crm', { scimProvider: SCIM }),
        [],
      );
    });

    it('refuses a second user of the SCIM provider whose identifier differs only in case', async () => {
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'Bob'), []);
      for (const identifier of ['bob', 'BOB', 'bOb']) {
        await assert.rejects(
          ctx.store.users.insertUser(userRecord('hr', SCIM, identifier), []),
          isUserNameClash,
          identifier,
        );
      }
      // Non-ASCII letters are not folded; other providers and applications are apart.
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'Éva'), []);
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'éva'), []);
      await ctx.store.users.insertUser(userRecord('hr', 'google_oauth2', 'bob'), []);
      await ctx.store.users.insertUser(userRecord('hr', 'google_oauth2', 'BOB'), []);
      await ctx.store.users.insertUser(userRecord('crm', SCIM, 'bob'), []);
      const { users } = ctx.store;
      assert.equal((await users.listUsers(usersOf('hr'), { after: null, limit: 10 })).length, 5);
    });

    it('refuses the same in a bulk insert, which then inserts nothing', async () => {
      await assert.rejects(
        ctx.store.users.insertUsers(
          [userRecord('hr', SCIM, 'Ann'), userRecord('hr', SCIM, 'ANN')],
          [],
        ),
        isUserNameClash,
      );
      assert.deepEqual(
        await ctx.store.users.listUsers(usersOf('hr'), { after: null, limit: 10 }),
        [],
      );
    });

    it('keys each row of a full bulk statement by its own application and provider', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('plain'), []);
      // 1,000 rows fill one statement: SCIM users of hr and crm, and users of other providers
      // and of an application without SCIM, whose identifiers differ from theirs only in case.
      const mixed = Array.from({ length: 250 }, (_, index) => [
        userRecord('hr', SCIM, `Mixed-${index}`),
        userRecord('hr', 'google_oauth2', `MIXED-${index}`),
        userRecord('crm', SCIM, `mixed-${index}`),
        userRecord('plain', SCIM, `MIXED-${index}`),
      ]).flat();
      await ctx.store.users.insertUsers(mixed, []);
      assert.equal(await ctx.store.users.countUsers(usersOf('hr')), 500);
      // The SCIM users of hr hold their userNames; the others hold none.
      await assert.rejects(
        ctx.store.users.insertUser(userRecord('hr', SCIM, 'MIXED-249'), []),
        isUserNameClash,
      );
      await assert.rejects(
        ctx.store.users.insertUsers(
          [
            ...Array.from({ length: 999 }, (_, index) => userRecord('crm', SCIM, `new-${index}`)),
            userRecord('crm', SCIM, 'MIXED-0'),
          ],
          [],
        ),
        isUserNameClash,
      );
      await ctx.store.users.insertUser(userRecord('plain', SCIM, 'mixed-0', { id: 'plain-0' }), []);
      await ctx.store.users.insertUser(userRecord('hr', 'google_oauth2', 'mixed-0'), []);
      assert.equal(await ctx.store.users.countUsers(usersOf('crm')), 250);
    });

    it('refuses a rename onto another case of a taken userName, and frees the old one', async () => {
      const bob = userRecord('hr', SCIM, 'Bob');
      const carol = userRecord('hr', SCIM, 'carol');
      await ctx.store.users.insertUser(bob, []);
      await ctx.store.users.insertUser(carol, []);
      await assert.rejects(
        ctx.store.users.replaceUser({ ...carol, identifier: 'BOB', etag: 'c2' }, carol.etag, []),
        isUserNameClash,
      );
      assert.equal(
        await ctx.store.users.replaceUser(
          { ...bob, identifier: 'robert', etag: 'b2' },
          bob.etag,
          [],
        ),
        true,
      );
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'BOB'), []);
      // Changing anything else keeps the key: a second 'ROBERT' is still refused.
      const robert = { ...bob, identifier: 'robert', etag: 'b2' };
      assert.equal(
        await ctx.store.users.replaceUser({ ...robert, active: false, etag: 'b3' }, 'b2', []),
        true,
      );
      await assert.rejects(
        ctx.store.users.insertUser(userRecord('hr', SCIM, 'ROBERT'), []),
        isUserNameClash,
      );
    });

    it('moves the rule with the application’s SCIM provider, or refuses the move and changes nothing', async () => {
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'Bob'), []);
      await ctx.store.users.insertUser(userRecord('hr', 'entra_scim', 'Dee'), []);
      await ctx.store.users.insertUser(userRecord('hr', 'entra_scim', 'DEE'), []);
      const hr = applicationRecord('hr', { scimProvider: SCIM });
      const toEntra = { ...hr, scimProvider: 'entra_scim', etag: 'hr-2' };
      await assert.rejects(
        ctx.store.applications.replaceApplication(toEntra, hr.etag, []),
        isUserNameClash,
      );
      assert.deepEqual(await ctx.store.applications.findApplication('hr'), hr);
      assert.deepEqual(
        (await ctx.store.users.findUserNameClashes('hr', 'entra_scim', 10)).map(
          (user) => user.identifier,
        ),
        ['DEE', 'Dee'],
      );
      await assert.rejects(
        ctx.store.users.insertUser(userRecord('hr', SCIM, 'bob'), []),
        isUserNameClash,
      );
      // Once the clash is gone the move goes through: okta_scim's users are free, entra_scim's not.
      const dee = (await ctx.store.users.findUser({
        clientId: 'hr',
        provider: 'entra_scim',
        identifier: 'DEE',
      }))!;
      assert.equal(await ctx.store.users.deleteUser(dee, dee.etag, []), true);
      assert.equal(await ctx.store.applications.replaceApplication(toEntra, hr.etag, []), true);
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'bob'), []);
      await assert.rejects(
        ctx.store.users.insertUser(userRecord('hr', 'entra_scim', 'dee'), []),
        isUserNameClash,
      );
      // SCIM off: no provider is held to it.
      const off = { ...toEntra, scimProvider: null, etag: 'hr-3' };
      assert.equal(await ctx.store.applications.replaceApplication(off, 'hr-2', []), true);
      await ctx.store.users.insertUser(userRecord('hr', 'entra_scim', 'dee'), []);
    });

    it('records the events of an application change that moves the rule, and none of a refused one', async () => {
      const hr = applicationRecord('hr', { scimProvider: SCIM });
      const event = {
        type: 'application.updated',
        occurredAt: T0,
        actor: { type: 'system' as const, id: null },
        clientId: 'hr',
        resource: { type: 'application' as const, id: { client_id: 'hr' } },
        changes: null,
        requestId: null,
      };
      const before = await ctx.store.events.lastEventId();
      const next = { ...hr, scimProvider: 'entra_scim', etag: 'hr-2' };
      assert.equal(await ctx.store.applications.replaceApplication(next, hr.etag, [event]), true);
      const events = await ctx.store.events.listEvents(
        {
          types: ['application.updated'],
          clientId: 'hr',
          actorId: null,
          resourceType: null,
          since: null,
          until: null,
          visibleClientIds: null,
        },
        { after: before, limit: 10 },
      );
      assert.equal(events.length, 1);
      // A stale version moves nothing and records nothing.
      assert.equal(
        await ctx.store.applications.replaceApplication({ ...next, scimProvider: SCIM }, 'stale', [
          event,
        ]),
        false,
      );
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'x'), []);
      await ctx.store.users.insertUser(userRecord('hr', SCIM, 'X'), []);
    });
  });
}
