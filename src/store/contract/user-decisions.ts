// The reads behind authorization decisions: an application with the users a batch names, in
// one statement, and the users a grant admits.

import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { UserGrant, UserRecord } from '../store.js';
import { type ContractContext, applicationRecord, userRecord } from './fixtures.js';

const AUTHORIZATION = { actions: { can_read: { roles: ['viewer'] } } };

export function describeUserDecisionsContract(ctx: ContractContext): void {
  describe('users read for authorization decisions', () => {
    let users: UserRecord[];

    beforeEach(async () => {
      await ctx.store.applications.insertApplication(
        applicationRecord('todo', { authorization: AUTHORIZATION }),
        [],
      );
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
      users = [
        userRecord('todo', 'citadel_oidc', 'rick', {
          id: 'u-rick',
          email: 'Rick@The-Citadel.com',
          roles: ['admin', 'evil_genius'],
        }),
        userRecord('todo', 'citadel_oidc', 'morty', {
          id: 'u-morty',
          email: 'morty@the-citadel.com',
          roles: ['editor'],
        }),
        userRecord('todo', 'smiths_oidc', 'summer', {
          id: 'u-summer',
          email: 'summer@the-smiths.com',
          roles: ['editor'],
        }),
        userRecord('todo', 'smiths_oidc', 'jerry', {
          id: 'u-jerry',
          email: 'jerry@the-smiths.com',
          roles: ['viewer', 'editor'],
          active: false,
        }),
        // The same identity in another application: never one of todo's users.
        userRecord('other', 'citadel_oidc', 'rick', { id: 'u-rick', roles: ['admin'] }),
      ];
      await ctx.store.users.insertUsers(users, []);
    });

    const byId = (found: UserRecord[]) =>
      found.map((user) => user.id).sort((a, b) => (a < b ? -1 : 1));

    it('reads the application and the users named by id or identity, each once', async () => {
      const found = await ctx.store.users.findApplicationWithUsers('todo', {
        ids: ['u-morty', 'u-summer', 'missing', 'u-morty'],
        identities: [
          { provider: 'citadel_oidc', identifier: 'rick' },
          { provider: 'smiths_oidc', identifier: 'summer' },
          { provider: 'smiths_oidc', identifier: 'nobody' },
        ],
      });
      assert.ok(found);
      assert.deepEqual(
        found.application,
        applicationRecord('todo', { authorization: AUTHORIZATION }),
      );
      assert.deepEqual(byId(found.users), ['u-morty', 'u-rick', 'u-summer']);
      assert.deepEqual(
        found.users.find((user) => user.id === 'u-rick'),
        users[0],
      );
    });

    it('reads the application alone when no user matches, and nothing without it', async () => {
      const alone = await ctx.store.users.findApplicationWithUsers('todo', {
        ids: ['missing'],
        identities: [{ provider: 'citadel_oidc', identifier: 'nobody' }],
      });
      assert.deepEqual(alone, {
        application: applicationRecord('todo', { authorization: AUTHORIZATION }),
        users: [],
      });
      const none = await ctx.store.users.findApplicationWithUsers('todo', {
        ids: [],
        identities: [],
      });
      assert.deepEqual(none?.users, []);
      assert.equal(
        await ctx.store.users.findApplicationWithUsers('missing', {
          ids: ['u-rick'],
          identities: [],
        }),
        undefined,
      );
    });

    it('finds inactive users too (deciding is the caller’s), in their own application only', async () => {
      const found = await ctx.store.users.findApplicationWithUsers('other', {
        ids: ['u-jerry', 'u-rick'],
        identities: [{ provider: 'citadel_oidc', identifier: 'morty' }],
      });
      assert.deepEqual(
        found?.users.map((user) => [user.clientId, user.id, user.roles]),
        [['other', 'u-rick', ['admin']]],
      );
      const jerry = await ctx.store.users.findApplicationWithUsers('todo', {
        ids: ['u-jerry'],
        identities: [],
      });
      assert.equal(jerry?.users[0]?.active, false);
    });

    it('reads what a decision needs of the same users, and the same application', async () => {
      const refs = {
        ids: ['u-morty', 'u-jerry', 'missing'],
        identities: [
          { provider: 'citadel_oidc', identifier: 'rick' },
          { provider: 'citadel_oidc', identifier: 'morty' },
        ],
      };
      const whole = await ctx.store.users.findApplicationWithUsers('todo', refs);
      const deciding = await ctx.store.users.findApplicationWithDecidingUsers('todo', refs);
      assert.deepEqual(deciding?.application, whole?.application);
      const decidingOf = (user: UserRecord) => ({
        id: user.id,
        provider: user.provider,
        identifier: user.identifier,
        email: user.email,
        roles: user.roles,
        active: user.active,
      });
      const sorted = <T extends { id: string }>(list: T[]) =>
        [...list].sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.deepEqual(sorted(deciding!.users), sorted(whole!.users.map(decidingOf)));
      assert.equal(deciding!.users.length, 3);
      assert.equal(
        await ctx.store.users.findApplicationWithDecidingUsers('missing', refs),
        undefined,
      );
    });

    it('sees a changed authorization model on the very next read', async () => {
      const refs = { ids: [], identities: [{ provider: 'citadel_oidc', identifier: 'rick' }] };
      const before = await ctx.store.users.findApplicationWithDecidingUsers('todo', refs);
      const changed = { actions: { can_read: { roles: ['editor'] } } };
      const next = {
        ...before!.application,
        authorization: changed,
        etag: 'changed-version',
      };
      assert.ok(
        await ctx.store.applications.replaceApplication(next, before!.application.etag, []),
      );
      const after = await ctx.store.users.findApplicationWithDecidingUsers('todo', refs);
      assert.deepEqual(after?.application.authorization, changed);
      assert.equal(after?.application.etag, 'changed-version');
    });

    it('reads a thousand refs in one call', async () => {
      const ids = Array.from({ length: 1000 }, (_, index) => `id-${index}`);
      const identities = ids.map((id) => ({ provider: 'citadel_oidc', identifier: id }));
      const found = await ctx.store.users.findApplicationWithUsers('todo', {
        ids: [...ids, 'u-summer'],
        identities: [...identities, { provider: 'citadel_oidc', identifier: 'morty' }],
      });
      assert.deepEqual(byId(found!.users), ['u-morty', 'u-summer']);
    });

    describe('listGrantedUsers', () => {
      const list = (grant: Omit<UserGrant, 'clientId'>, limit = 100, after = null) =>
        ctx.store.users.listGrantedUsers({ clientId: 'todo', ...grant }, { after, limit });

      it('lists active holders of any of the roles, in (provider, identifier) order', async () => {
        const found = await list({ roles: ['editor', 'evil_genius'], owner: null });
        assert.deepEqual(
          found.map((user) => user.identifier),
          ['morty', 'rick', 'summer'],
        );
        assert.deepEqual(await list({ roles: ['nobody'], owner: null }), []);
        assert.deepEqual(await list({ roles: [], owner: null }), []);
      });

      it('adds owners: holders of an owner role whose attribute equals the value', async () => {
        const owner = (attribute: 'email' | 'id' | 'identifier', value: string) =>
          list({ roles: ['admin'], owner: { roles: ['editor'], attribute, value } });
        const ids = async (found: Promise<UserRecord[]>) => byId(await found);
        assert.deepEqual(await ids(owner('email', 'MORTY@the-citadel.com')), ['u-morty', 'u-rick']);
        assert.deepEqual(await ids(owner('id', 'u-summer')), ['u-rick', 'u-summer']);
        assert.deepEqual(await ids(owner('identifier', 'summer')), ['u-rick', 'u-summer']);
        assert.deepEqual(await ids(owner('identifier', 'Summer')), ['u-rick']);
        // Rick owns by e-mail but holds no owner role; Jerry is inactive.
        assert.deepEqual(
          await ids(
            list({
              roles: [],
              owner: { roles: ['editor'], attribute: 'email', value: 'rick@the-citadel.com' },
            }),
          ),
          [],
        );
        assert.deepEqual(
          await ids(
            list({ roles: [], owner: { roles: ['editor'], attribute: 'id', value: 'u-jerry' } }),
          ),
          [],
        );
      });

      it('pages after a position', async () => {
        const first = await list({ roles: ['editor', 'admin'], owner: null }, 2);
        assert.deepEqual(
          first.map((user) => user.identifier),
          ['morty', 'rick'],
        );
        const last = first.at(-1)!;
        const next = await ctx.store.users.listGrantedUsers(
          { clientId: 'todo', roles: ['editor', 'admin'], owner: null },
          { after: { provider: last.provider, identifier: last.identifier }, limit: 2 },
        );
        assert.deepEqual(
          next.map((user) => user.identifier),
          ['summer'],
        );
      });
    });
  });
}
