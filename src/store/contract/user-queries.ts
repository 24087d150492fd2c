import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { GroupRecord, UserQuery, UserRecord } from '../store.js';
import type { UserPredicate } from '../user-predicate.js';
import {
  type ContractContext,
  T0,
  applicationRecord,
  identityOf,
  userRecord,
  usersOf,
} from './fixtures.js';

const PROVIDER = 'okta_scim';

function groupRecord(
  id: string,
  displayName: string,
  overrides: Partial<GroupRecord> = {},
): GroupRecord {
  return {
    clientId: 'app',
    id,
    displayName,
    externalId: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `group-${id}-1`,
    ...overrides,
  };
}

export function describeUserQueriesContract(ctx: ContractContext): void {
  describe('users by id, renames and predicates', () => {
    let users: UserRecord[];

    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
      users = [
        userRecord('app', PROVIDER, 'Alice@Example.com', {
          id: 'u-1',
          name: 'Alice Smith',
          email: 'Alice@Example.com',
          externalId: 'ext-A',
          updatedAt: T0 + 10,
        }),
        userRecord('app', PROVIDER, 'bob', {
          id: 'u-2',
          name: 'Bob',
          active: false,
          externalId: null,
        }),
        userRecord('app', PROVIDER, 'Éva', { id: 'u-3', name: 'ÉVA', externalId: '' }),
        userRecord('app', PROVIDER, 'carol', { id: 'u-4', name: 'Carol', externalId: 'ext-a' }),
        // Same identifier under another provider and in another application: never in the query.
        userRecord('app', 'google_oauth2', 'bob', { id: 'u-5' }),
        userRecord('other', PROVIDER, 'bob', { id: 'u-2' }),
      ];
      await ctx.store.users.insertUsers(users, []);
    });

    const query = (predicate: UserPredicate): UserQuery => ({
      clientId: 'app',
      provider: PROVIDER,
      predicate,
    });
    const idsOf = async (predicate: UserPredicate) =>
      (await ctx.store.users.queryUsers(query(predicate), { after: null, limit: 100 })).map(
        (user) => user.id,
      );
    const compare = (
      attribute: Extract<UserPredicate, { kind: 'compare' }>['attribute'],
      operator: Extract<UserPredicate, { kind: 'compare' }>['operator'],
      value: string | number | boolean,
    ): UserPredicate => ({ kind: 'compare', attribute, operator, value });

    it('finds a user by id in its own application only, and several by ids', async () => {
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-1'), users[0]);
      assert.equal((await ctx.store.users.findUserById('other', 'u-2'))?.clientId, 'other');
      assert.equal(await ctx.store.users.findUserById('other', 'u-1'), undefined);
      const found = await ctx.store.users.findUsersByIds('app', ['u-4', 'u-1', 'missing', 'u-4']);
      assert.deepEqual(found.map((user) => user.id).sort(), ['u-1', 'u-4']);
    });

    it('keeps active and externalId, and lists by active', async () => {
      assert.equal((await ctx.store.users.findUserById('app', 'u-2'))?.active, false);
      assert.equal((await ctx.store.users.findUserById('app', 'u-1'))?.externalId, 'ext-A');
      const inactive = await ctx.store.users.listUsers(usersOf('app', { active: false }), {
        after: null,
        limit: 10,
      });
      assert.deepEqual(
        inactive.map((user) => user.id),
        ['u-2'],
      );
      assert.equal(await ctx.store.users.countUsers(usersOf('app', { active: true })), 4);
    });

    it('renames a user: same id, new identity, the old one gone', async () => {
      const renamed = { ...users[1]!, identifier: 'robert', etag: 'renamed' };
      assert.equal(await ctx.store.users.replaceUser(renamed, users[1]!.etag, []), true);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(renamed)), renamed);
      assert.equal(await ctx.store.users.findUser(identityOf(users[1]!)), undefined);
      assert.deepEqual(await idsOf(compare('identifier', 'eq', 'ROBERT')), ['u-2']);
      // Onto a taken identity: refused, nothing changed.
      const clash = { ...renamed, identifier: 'carol', etag: 'clash' };
      await assert.rejects(ctx.store.users.replaceUser(clash, 'renamed', []), DuplicateError);
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-2'), renamed);
    });

    it('compares identifier, name and email ignoring ASCII case only', async () => {
      assert.deepEqual(await idsOf(compare('identifier', 'eq', 'alice@example.COM')), ['u-1']);
      assert.deepEqual(await idsOf(compare('identifier', 'eq', 'éva')), []);
      assert.deepEqual(await idsOf(compare('identifier', 'eq', 'Éva')), ['u-3']);
      assert.deepEqual(await idsOf(compare('name', 'eq', 'alice smith')), ['u-1']);
      assert.deepEqual(await idsOf(compare('name', 'eq', 'éva')), []);
      assert.deepEqual(await idsOf(compare('email', 'eq', 'ALICE@example.com')), ['u-1']);
      assert.deepEqual(await idsOf(compare('id', 'eq', 'U-1')), []);
    });

    it('treats a missing externalId as absent: only ne holds', async () => {
      assert.deepEqual(await idsOf(compare('externalId', 'eq', 'ext-a')), ['u-4']);
      assert.deepEqual(await idsOf(compare('externalId', 'ne', 'ext-a')), ['u-1', 'u-2', 'u-3']);
      assert.deepEqual(await idsOf(compare('externalId', 'sw', 'ext')), ['u-1', 'u-4']);
      assert.deepEqual(await idsOf({ kind: 'present', attribute: 'externalId' }), ['u-1', 'u-4']);
      assert.deepEqual(await idsOf({ kind: 'not', operand: compare('externalId', 'co', 'zz') }), [
        'u-1',
        'u-2',
        'u-4',
        'u-3',
      ]);
    });

    it('applies co, sw, ew (empty included) and orders by bytes', async () => {
      assert.deepEqual(await idsOf(compare('identifier', 'co', 'EXAMPLE')), ['u-1']);
      assert.deepEqual(await idsOf(compare('identifier', 'ew', 'ol')), ['u-4']);
      assert.deepEqual(await idsOf(compare('identifier', 'ew', 'carolx')), []);
      assert.deepEqual(await idsOf(compare('identifier', 'sw', '')), ['u-1', 'u-2', 'u-4', 'u-3']);
      // 'É' (0xC3 0x89) sorts after every ASCII letter.
      assert.deepEqual(await idsOf(compare('identifier', 'gt', 'bob')), ['u-4', 'u-3']);
      assert.deepEqual(await idsOf(compare('identifier', 'le', 'bob')), ['u-1', 'u-2']);
      assert.deepEqual(await idsOf(compare('updatedAt', 'gt', T0)), ['u-1']);
      assert.deepEqual(await idsOf(compare('active', 'eq', false)), ['u-2']);
      assert.deepEqual(
        await idsOf({
          kind: 'or',
          operands: [
            { kind: 'and', operands: [compare('active', 'eq', true), compare('name', 'sw', 'c')] },
            compare('id', 'eq', 'u-2'),
          ],
        }),
        ['u-2', 'u-4'],
      );
    });

    it('pages by offset or after an identifier, and counts', async () => {
      const all: UserPredicate = { kind: 'all' };
      const page = (offset: number) => ctx.store.users.queryUsers(query(all), { offset, limit: 2 });
      assert.deepEqual(
        (await page(0)).map((user) => user.id),
        ['u-1', 'u-2'],
      );
      assert.deepEqual(
        (await page(2)).map((user) => user.id),
        ['u-4', 'u-3'],
      );
      const after = await ctx.store.users.queryUsers(query(all), { after: 'bob', limit: 10 });
      assert.deepEqual(
        after.map((user) => user.id),
        ['u-4', 'u-3'],
      );
      assert.equal(await ctx.store.users.countQueriedUsers(query(all)), 4);
      assert.equal(
        await ctx.store.users.countQueriedUsers(query(compare('identifier', 'eq', 'BOB'))),
        1,
      );
    });
  });

  describe('groups', () => {
    let alice: UserRecord;
    let bob: UserRecord;

    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
      alice = userRecord('app', PROVIDER, 'alice', { id: 'u-1' });
      bob = userRecord('app', PROVIDER, 'bob', { id: 'u-2', roles: ['admins'] });
      await ctx.store.users.insertUsers([alice, bob], []);
      await ctx.store.groups.insertGroup(groupRecord('g-1', 'admins'), [], []);
    });

    it('stores groups with unique ids and display names per application', async () => {
      assert.deepEqual(
        await ctx.store.groups.findGroup('app', 'g-1'),
        groupRecord('g-1', 'admins'),
      );
      await assert.rejects(
        ctx.store.groups.insertGroup(groupRecord('g-2', 'admins'), [], []),
        DuplicateError,
      );
      await assert.rejects(
        ctx.store.groups.insertGroup(groupRecord('g-1', 'other'), [], []),
        DuplicateError,
      );
      await ctx.store.groups.insertGroup(groupRecord('g-0', 'readers'), [], []);
      assert.deepEqual(
        (await ctx.store.groups.listGroups('app')).map((g) => g.id),
        ['g-0', 'g-1'],
      );
    });

    it('reads an application with its groups in one call, as the separate reads do', async () => {
      await ctx.store.groups.insertGroup(groupRecord('g-0', 'readers'), [], []);
      await ctx.store.applications.insertApplication(applicationRecord('lonely'), []);
      for (const clientId of ['app', 'lonely']) {
        assert.deepEqual(await ctx.store.groups.findApplicationWithGroups(clientId), {
          application: await ctx.store.applications.findApplication(clientId),
          groups: await ctx.store.groups.listGroups(clientId),
        });
      }
      const found = await ctx.store.groups.findApplicationWithGroups('app');
      assert.deepEqual(
        found?.groups.map((g) => g.id),
        ['g-0', 'g-1'],
      );
      assert.deepEqual((await ctx.store.groups.findApplicationWithGroups('lonely'))?.groups, []);
      assert.equal(await ctx.store.groups.findApplicationWithGroups('missing'), undefined);
    });

    it('renames a group and its members in one transaction', async () => {
      const group = groupRecord('g-1', 'owners', { etag: 'g2' });
      const member = { ...bob, roles: ['owners'], etag: 'b2' };
      assert.equal(
        await ctx.store.groups.replaceGroup(
          group,
          'group-g-1-1',
          [{ next: member, expectedEtag: bob.etag }],
          [],
        ),
        true,
      );
      assert.deepEqual(await ctx.store.groups.findGroup('app', 'g-1'), group);
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-2'), member);
    });

    it('writes nothing when the group or any member changed meanwhile', async () => {
      const group = groupRecord('g-1', 'admins', { etag: 'g2' });
      const changes = [
        { next: { ...alice, roles: ['admins'], etag: 'a2' }, expectedEtag: alice.etag },
        { next: { ...bob, roles: [], etag: 'b2' }, expectedEtag: 'stale' },
      ];
      assert.equal(await ctx.store.groups.replaceGroup(group, 'group-g-1-1', changes, []), false);
      assert.equal(await ctx.store.groups.deleteGroup(group, 'group-g-1-1', changes, []), false);
      assert.equal(
        await ctx.store.groups.replaceGroup(group, 'stale', changes.slice(0, 1), []),
        false,
      );
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-1'), alice);
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-2'), bob);
      assert.deepEqual(
        await ctx.store.groups.findGroup('app', 'g-1'),
        groupRecord('g-1', 'admins'),
      );
    });

    it('deletes a group with its members’ role, and with its application', async () => {
      const stripped = { ...bob, roles: [], etag: 'b2' };
      const group = (await ctx.store.groups.findGroup('app', 'g-1'))!;
      assert.equal(
        await ctx.store.groups.deleteGroup(
          group,
          group.etag,
          [{ next: stripped, expectedEtag: bob.etag }],
          [],
        ),
        true,
      );
      assert.equal(await ctx.store.groups.findGroup('app', 'g-1'), undefined);
      assert.deepEqual(await ctx.store.users.findUserById('app', 'u-2'), stripped);
      await ctx.store.groups.insertGroup(groupRecord('g-3', 'x'), [], []);
      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('app', 'app-app-1', []),
        true,
      );
      assert.deepEqual(await ctx.store.groups.listGroups('app'), []);
    });
  });
}
