// The read behind an access token: an application and what a token says of one of its users,
// in one statement, and every change to either seen by the very next read.

import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { UserRecord } from '../store.js';
import { type ContractContext, applicationRecord, userRecord } from './fixtures.js';

export function describeTokenReadsContract(ctx: ContractContext): void {
  describe('the read behind an access token', () => {
    let rick: UserRecord;

    beforeEach(async () => {
      await ctx.store.applications.insertApplication(
        applicationRecord('todo', { jwtExpirationInMinutes: 15 }),
        [],
      );
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
      rick = userRecord('todo', 'citadel_oidc', 'rick', {
        name: 'Rick Sanchez',
        email: 'rick@the-citadel.com',
        locale: 'en-GB',
        roles: ['admin', 'evil_genius'],
        scopes: ['portal'],
      });
      await ctx.store.users.insertUsers(
        [rick, userRecord('other', 'citadel_oidc', 'morty', { roles: ['viewer'] })],
        [],
      );
    });

    const read = (clientId: string, provider: string, identifier: string) =>
      ctx.store.users.findApplicationWithTokenUser({ clientId, provider, identifier });

    it('reads the application and what a token says of the user', async () => {
      const found = await read('todo', 'citadel_oidc', 'rick');
      assert.equal(found?.application.clientId, 'todo');
      assert.equal(found?.application.jwtExpirationInMinutes, 15);
      assert.deepEqual(found?.user, {
        clientId: 'todo',
        provider: 'citadel_oidc',
        identifier: 'rick',
        name: 'Rick Sanchez',
        email: 'rick@the-citadel.com',
        locale: 'en-GB',
        roles: ['admin', 'evil_genius'],
        scopes: ['portal'],
        active: true,
      });
    });

    it('finds no user of another application, and no application that does not exist', async () => {
      const alone = await read('todo', 'citadel_oidc', 'morty');
      assert.equal(alone?.application.clientId, 'todo');
      assert.equal(alone?.user, undefined);
      assert.equal(await read('missing', 'citadel_oidc', 'rick'), undefined);
    });

    it('sees a change of the application in the next read', async () => {
      const before = await read('todo', 'citadel_oidc', 'rick');
      const validation = { google_oauth2: { issuer: 'https://accounts.google.com' } };
      const next = applicationRecord('todo', {
        jwtExpirationInMinutes: 5,
        mode: 'external',
        externalTokenValidation: validation,
        etag: 'app-todo-2',
      });
      assert.equal(
        await ctx.store.applications.replaceApplication(next, before!.application.etag, []),
        true,
      );
      const after = await read('todo', 'citadel_oidc', 'rick');
      assert.equal(after?.application.etag, 'app-todo-2');
      assert.equal(after?.application.jwtExpirationInMinutes, 5);
      assert.equal(after?.application.mode, 'external');
      assert.deepEqual(after?.application.externalTokenValidation, validation);
      // An unchanged application is read again as it was.
      assert.deepEqual(await read('todo', 'citadel_oidc', 'rick'), after);
    });

    it('sees a deactivated user, changed roles and a deleted application in the next read', async () => {
      await read('todo', 'citadel_oidc', 'rick');
      const changed = { ...rick, active: false, roles: ['viewer'], etag: 'user-rick-2' };
      assert.equal(await ctx.store.users.replaceUser(changed, rick.etag, []), true);
      const after = await read('todo', 'citadel_oidc', 'rick');
      assert.equal(after?.user?.active, false);
      assert.deepEqual(after?.user?.roles, ['viewer']);

      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('todo', 'app-todo-1', []),
        true,
      );
      assert.equal(await read('todo', 'citadel_oidc', 'rick'), undefined);
    });
  });
}
