import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { ApplicationRecord } from '../store.js';
import {
  type ContractContext,
  T0,
  applicationRecord,
  userRecord,
  byBytes,
  walkPages,
  pageSizes,
  identityOf,
  usersOf,
} from './fixtures.js';

export function describeApplicationsContract(ctx: ContractContext): void {
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
      await ctx.store.applications.insertApplication(full, []);
      await ctx.store.applications.insertApplication(plain, []);
      const found = await ctx.store.applications.findApplication('billing-web');
      assert.deepEqual(found, full);
      // Member order too: external_token_validation is returned exactly as given.
      assert.equal(JSON.stringify(found), JSON.stringify(full));
      assert.deepEqual(await ctx.store.applications.findApplication('plain'), plain);
    });

    it('finds nothing for a missing client_id or one that differs in case', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('App'), []);
      assert.equal(await ctx.store.applications.findApplication('app'), undefined);
      assert.equal(await ctx.store.applications.findApplication('missing'), undefined);
    });

    it('refuses an existing client_id with DuplicateError and keeps the first', async () => {
      const first = applicationRecord('billing');
      await ctx.store.applications.insertApplication(first, []);
      await assert.rejects(
        ctx.store.applications.insertApplication(
          applicationRecord('billing', { etag: 'other' }),
          [],
        ),
        DuplicateError,
      );
      assert.deepEqual(await ctx.store.applications.findApplication('billing'), first);
      await ctx.store.applications.insertApplication(applicationRecord('BILLING'), []);
      assert.equal(await ctx.store.applications.countApplications({ clientIds: null }), 2);
    });

    it('lists in byte order of client_id, in keyset pages of `limit` after `after`', async () => {
      const ids = ['b', 'B', 'a', 'A', '_x', '-x', '~', '0', '9', 'a.b', 'a-b', 'ab', 'a~', 'Z'];
      for (const id of ids)
        await ctx.store.applications.insertApplication(applicationRecord(id), []);
      const expected = [...ids].sort(byBytes);
      const pages = await walkPages<ApplicationRecord, string>(
        (after) =>
          ctx.store.applications.listApplications({ clientIds: null }, { after, limit: 4 }),
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
      const afterGap = await ctx.store.applications.listApplications(
        { clientIds: null },
        { after: 'a0', limit: 1000 },
      );
      assert.deepEqual(
        afterGap.map((row) => row.clientId),
        expected.filter((id) => byBytes(id, 'a0') > 0),
      );
      assert.deepEqual(
        await ctx.store.applications.listApplications(
          { clientIds: null },
          { after: '~', limit: 5 },
        ),
        [],
      );
      assert.equal(await ctx.store.applications.countApplications({ clientIds: null }), ids.length);
    });

    it('lists and counts only the given clientIds, paged', async () => {
      for (const id of ['a', 'b', 'c', 'd', 'e']) {
        await ctx.store.applications.insertApplication(applicationRecord(id), []);
      }
      const filter = { clientIds: ['e', 'b', 'missing', 'd', 'b', 'B'] };
      const pages = await walkPages<ApplicationRecord, string>(
        (after) => ctx.store.applications.listApplications(filter, { after, limit: 2 }),
        (row) => row.clientId,
        2,
      );
      assert.deepEqual(
        pages.map((page) => page.map((row) => row.clientId)),
        [['b', 'd'], ['e']],
      );
      assert.equal(await ctx.store.applications.countApplications(filter), 3);
    });

    it('lists and counts the client_ids that start with a prefix, within the clientIds', async () => {
      for (const id of ['bill', 'billing-web', 'billing~x', 'bilk', 'Billing', 'bim', 'z']) {
        await ctx.store.applications.insertApplication(applicationRecord(id), []);
      }
      const list = (filter: { clientIds: string[] | null; clientIdPrefix: string | null }) =>
        ctx.store.applications
          .listApplications(filter, { after: null, limit: 10 })
          .then((rows) => rows.map((row) => row.clientId));
      assert.deepEqual(await list({ clientIds: null, clientIdPrefix: 'bill' }), [
        'bill',
        'billing-web',
        'billing~x',
      ]);
      assert.deepEqual(await list({ clientIds: null, clientIdPrefix: 'x' }), []);
      assert.deepEqual(await list({ clientIds: ['bill', 'bim'], clientIdPrefix: 'bi' }), [
        'bill',
        'bim',
      ]);
      const pages = await walkPages<ApplicationRecord, string>(
        (after) =>
          ctx.store.applications.listApplications(
            { clientIds: null, clientIdPrefix: 'bi' },
            { after, limit: 2 },
          ),
        (row) => row.clientId,
        2,
      );
      assert.deepEqual(
        pages.map((page) => page.map((row) => row.clientId)),
        [['bilk', 'bill'], ['billing-web', 'billing~x'], ['bim']],
      );
      assert.equal(
        await ctx.store.applications.countApplications({ clientIds: null, clientIdPrefix: 'bil' }),
        4,
      );
    });

    it('lists and counts nothing for an empty clientIds list', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('a'), []);
      const filter = { clientIds: [] };
      assert.deepEqual(
        await ctx.store.applications.listApplications(filter, { after: null, limit: 10 }),
        [],
      );
      assert.equal(await ctx.store.applications.countApplications(filter), 0);
    });

    it('replaces an application only with its current etag', async () => {
      const stored = applicationRecord('billing');
      await ctx.store.applications.insertApplication(stored, []);
      const next = { ...full, clientId: 'billing', createdAt: T0, etag: 'app-billing-2' };
      assert.equal(
        await ctx.store.applications.replaceApplication(next, 'app-billing-0', []),
        false,
      );
      assert.deepEqual(await ctx.store.applications.findApplication('billing'), stored);
      assert.equal(await ctx.store.applications.replaceApplication(next, stored.etag, []), true);
      assert.deepEqual(await ctx.store.applications.findApplication('billing'), next);
      assert.equal(await ctx.store.applications.replaceApplication(stored, stored.etag, []), false);
      assert.deepEqual(await ctx.store.applications.findApplication('billing'), next);
    });

    it('replaces nothing and creates nothing for a missing application', async () => {
      const ghost = applicationRecord('ghost');
      assert.equal(await ctx.store.applications.replaceApplication(ghost, ghost.etag, []), false);
      assert.equal(await ctx.store.applications.findApplication('ghost'), undefined);
    });

    it('deletes an application with its users, leaving other applications’ users', async () => {
      const doomed = applicationRecord('doomed');
      await ctx.store.applications.insertApplication(doomed, []);
      await ctx.store.applications.insertApplication(applicationRecord('kept'), []);
      const doomedUser = userRecord('doomed', 'google_oauth2', 'alice');
      await ctx.store.users.insertUser(doomedUser, []);
      await ctx.store.users.insertUser(userRecord('doomed', 'google_oauth2', 'bob'), []);
      await ctx.store.users.insertUser(userRecord('kept', 'google_oauth2', 'alice'), []);

      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('doomed', 'stale', []),
        false,
      );
      assert.equal(await ctx.store.users.countUsers(usersOf('doomed')), 2);
      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('doomed', doomed.etag, []),
        true,
      );

      assert.equal(await ctx.store.applications.findApplication('doomed'), undefined);
      assert.equal(await ctx.store.users.findUser(identityOf(doomedUser)), undefined);
      assert.equal(await ctx.store.users.countUsers(usersOf('doomed')), 0);
      assert.deepEqual(
        (await ctx.store.users.listUsers(usersOf('kept'), { after: null, limit: 10 })).map(
          (user) => user.identifier,
        ),
        ['alice'],
      );
      // Nothing of the old users is left to collide with.
      await ctx.store.applications.insertApplication(doomed, []);
      await ctx.store.users.insertUser(doomedUser, []);
      assert.equal(await ctx.store.users.countUsers(usersOf('doomed')), 1);
    });

    it('deletes nothing for a missing application', async () => {
      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('ghost', 'any', []),
        false,
      );
      assert.equal(await ctx.store.applications.countApplications({ clientIds: null }), 0);
    });
  });
}
