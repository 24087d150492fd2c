import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { EventFilter, ImportCounts, ImportJobRecord, NewEvent, UserRecord } from '../store.js';
import {
  type ContractContext,
  T0,
  applicationRecord,
  byUserPosition,
  identityOf,
  userRecord,
  usersOf,
} from './fixtures.js';

const NO_COUNTS: ImportCounts = {
  read: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  skipped: 0,
  invalid: 0,
};

function importJob(id: string, overrides: Partial<ImportJobRecord> = {}): ImportJobRecord {
  return {
    id,
    clientId: 'app',
    format: 'tessera',
    dryRun: false,
    onConflict: 'update',
    status: 'running',
    counts: NO_COUNTS,
    failure: null,
    startedBy: 'key-1',
    createdAt: T0,
    updatedAt: T0,
    finishedAt: null,
    ...overrides,
  };
}

function createdEvent(user: UserRecord, jobId: string): NewEvent {
  return {
    type: 'user.created',
    occurredAt: T0,
    actor: { type: 'import', id: jobId },
    clientId: user.clientId,
    resource: { type: 'user', id: { provider: user.provider, identifier: user.identifier } },
    changes: null,
    requestId: null,
  };
}

const ALL_EVENTS: EventFilter = {
  types: null,
  clientId: null,
  actorId: null,
  resourceType: null,
  since: null,
  until: null,
  visibleClientIds: null,
};

async function collect(iterator: AsyncIterableIterator<UserRecord[]>): Promise<UserRecord[][]> {
  const pages: UserRecord[][] = [];
  for await (const page of iterator) pages.push(page);
  return pages;
}

export function describeImportsContract(ctx: ContractContext): void {
  describe('users read for an import', () => {
    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
    });

    it('finds the named users by identity or by id, each once, in their application only', async () => {
      const users = Array.from({ length: 1200 }, (_, n) =>
        userRecord('app', n % 2 === 0 ? 'google_oauth2' : 'azure_saml', `user-${n}-ü`),
      );
      await ctx.store.users.insertUsers(users, []);
      await ctx.store.users.insertUser(userRecord('other', 'google_oauth2', 'user-0-ü'), []);
      const named = users.filter((_, n) => n % 3 === 0);
      const found = await ctx.store.users.findUsersForImport('app', {
        identities: [
          ...named.map((user) => ({ provider: user.provider, identifier: user.identifier })),
          { provider: 'google_oauth2', identifier: 'nobody' },
        ],
        // The first is named both ways; the last is nobody's.
        ids: [named[0]!.id, users[1]!.id, 'no-such-id'],
      });
      assert.deepEqual(found?.sort(byUserPosition), [...named, users[1]!].sort(byUserPosition));
    });

    it('answers an empty list for an application without those users, and undefined without the application', async () => {
      assert.deepEqual(
        await ctx.store.users.findUsersForImport('app', {
          identities: [{ provider: 'google_oauth2', identifier: 'nobody' }],
          ids: [],
        }),
        [],
      );
      assert.equal(
        await ctx.store.users.findUsersForImport('ghost', {
          identities: [{ provider: 'google_oauth2', identifier: 'nobody' }],
          ids: ['x'],
        }),
        undefined,
      );
    });
  });

  describe('user export', () => {
    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
      await ctx.store.applications.insertApplication(applicationRecord('other'), []);
    });

    it('yields every matching user of the application in list order, in pages of the size asked', async () => {
      const users = Array.from({ length: 23 }, (_, n) =>
        userRecord('app', n % 2 === 0 ? 'google_oauth2' : 'azure_saml', `user-${n}-ü`, {
          roles: n % 3 === 0 ? ['admin'] : [],
        }),
      );
      await ctx.store.users.insertUsers(users, []);
      await ctx.store.users.insertUser(userRecord('other', 'google_oauth2', 'elsewhere'), []);
      const pages = await collect(ctx.store.users.exportUsers(usersOf('app'), 5));
      assert.deepEqual(
        pages.map((page) => page.length),
        [5, 5, 5, 5, 3],
      );
      assert.deepEqual(pages.flat(), [...users].sort(byUserPosition));
      const admins = (
        await collect(ctx.store.users.exportUsers(usersOf('app', { role: 'admin' }), 100))
      ).flat();
      assert.deepEqual(
        admins.map((user) => user.identifier),
        users
          .filter((user) => user.roles.includes('admin'))
          .sort(byUserPosition)
          .map((user) => user.identifier),
      );
      assert.deepEqual(await collect(ctx.store.users.exportUsers(usersOf('ghost'), 10)), []);
    });

    it('reads one snapshot: writes made while it runs are not seen, and go on meanwhile', async () => {
      const users = Array.from({ length: 6 }, (_, n) =>
        userRecord('app', 'google_oauth2', `u${n}`),
      );
      await ctx.store.users.insertUsers(users, []);
      const iterator = ctx.store.users.exportUsers(usersOf('app'), 2);
      const first = await iterator.next();
      assert.deepEqual(
        (first.value as UserRecord[]).map((user) => user.identifier),
        ['u0', 'u1'],
      );
      // Written while the export is half way: acknowledged, yet not in the export.
      await ctx.store.users.insertUser(userRecord('app', 'google_oauth2', 'u9'), []);
      const last = users[5]!;
      assert.equal(await ctx.store.users.deleteUser(identityOf(last), last.etag, []), true);
      const renamed = { ...users[3]!, name: 'Changed meanwhile', etag: 'moved' };
      assert.equal(await ctx.store.users.replaceUser(renamed, users[3]!.etag, []), true);
      const rest: UserRecord[] = [];
      for await (const page of iterator) rest.push(...page);
      assert.deepEqual(rest, users.slice(2));
      // And the store saw every write.
      assert.equal(await ctx.store.users.countUsers(usersOf('app')), 6);
    });

    it('releases its snapshot when left early', async () => {
      await ctx.store.users.insertUsers(
        Array.from({ length: 5 }, (_, n) => userRecord('app', 'google_oauth2', `u${n}`)),
        [],
      );
      for (let round = 0; round < 3; round++) {
        for await (const page of ctx.store.users.exportUsers(usersOf('app'), 2)) {
          assert.equal(page.length, 2);
          break;
        }
      }
      await ctx.store.users.insertUser(userRecord('app', 'google_oauth2', 'after'), []);
      assert.equal(await ctx.store.users.countUsers(usersOf('app')), 6);
    });
  });

  describe('import jobs', () => {
    beforeEach(async () => {
      await ctx.store.applications.insertApplication(applicationRecord('app'), []);
    });

    it('stores a job and finds it as stored', async () => {
      const job = importJob('job-1', { format: 'auth0', dryRun: true, onConflict: 'skip' });
      await ctx.store.imports.insertImportJob(job);
      assert.deepEqual(await ctx.store.imports.findImportJob('job-1'), job);
      assert.equal(await ctx.store.imports.findImportJob('job-2'), undefined);
      await assert.rejects(ctx.store.imports.insertImportJob(job), DuplicateError);
    });

    it('records a batch in one transaction: users, changes, events, error lines and counts', async () => {
      const existing = userRecord('app', 'google_oauth2', 'old', { name: 'Before' });
      await ctx.store.users.insertUser(existing, []);
      await ctx.store.imports.insertImportJob(importJob('job-1'));
      const created = userRecord('app', 'google_oauth2', 'new', { id: 'kept-id' });
      const changed = { ...existing, name: 'After', etag: 'etag-2', updatedAt: T0 + 5 };
      const counts = { ...NO_COUNTS, read: 4, created: 1, updated: 1, invalid: 2 };
      const recorded = await ctx.store.imports.recordImportBatch(
        'job-1',
        {
          counts,
          errors: [
            { line: 2, pointer: '/email', detail: 'not an e-mail address' },
            { line: 2, pointer: '/locale', detail: 'not a language tag' },
            { line: 4, pointer: '', detail: 'not JSON' },
          ],
          inserts: [created],
          changes: [{ next: changed, expectedEtag: existing.etag }],
          recordedAt: T0 + 5,
        },
        [createdEvent(created, 'job-1')],
      );
      assert.equal(recorded, true);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(created)), created);
      assert.deepEqual(await ctx.store.users.findUser(identityOf(existing)), changed);
      const job = await ctx.store.imports.findImportJob('job-1');
      assert.deepEqual(job?.counts, counts);
      assert.equal(job?.updatedAt, T0 + 5);
      assert.deepEqual(
        await ctx.store.imports.listImportErrors('job-1', { after: null, limit: 10 }),
        [
          { line: 2, index: 0, pointer: '/email', detail: 'not an e-mail address' },
          { line: 2, index: 1, pointer: '/locale', detail: 'not a language tag' },
          { line: 4, index: 0, pointer: '', detail: 'not JSON' },
        ],
      );
      assert.deepEqual(
        await ctx.store.imports.listImportErrors('job-1', {
          after: { line: 2, index: 0 },
          limit: 1,
        }),
        [{ line: 2, index: 1, pointer: '/locale', detail: 'not a language tag' }],
      );
      const events = await ctx.store.events.listEvents(ALL_EVENTS, { after: null, limit: 10 });
      assert.deepEqual(
        events.map((event) => [event.type, event.actor]),
        [['user.created', { type: 'import', id: 'job-1' }]],
      );
    });

    it('writes nothing of a batch whose changed user moved on, or of a job no longer running', async () => {
      const existing = userRecord('app', 'google_oauth2', 'old');
      await ctx.store.users.insertUser(existing, []);
      await ctx.store.imports.insertImportJob(importJob('job-1'));
      const created = userRecord('app', 'google_oauth2', 'new');
      const batch = {
        counts: { ...NO_COUNTS, read: 2, created: 1, updated: 1 },
        errors: [{ line: 1, pointer: '/name', detail: 'blank' }],
        inserts: [created],
        changes: [{ next: { ...existing, name: 'After', etag: 'e2' }, expectedEtag: 'stale' }],
        recordedAt: T0 + 1,
      };
      assert.equal(
        await ctx.store.imports.recordImportBatch('job-1', batch, [createdEvent(created, 'job-1')]),
        false,
      );
      assert.equal(await ctx.store.users.findUser(identityOf(created)), undefined);
      assert.deepEqual(
        await ctx.store.imports.listImportErrors('job-1', { after: null, limit: 10 }),
        [],
      );
      assert.deepEqual((await ctx.store.imports.findImportJob('job-1'))?.counts, NO_COUNTS);
      assert.deepEqual(
        await ctx.store.events.listEvents(ALL_EVENTS, { after: null, limit: 10 }),
        [],
      );

      assert.equal(
        await ctx.store.imports.finishImportJob('job-1', 'cancelled', T0 + 2, null),
        true,
      );
      assert.equal(
        await ctx.store.imports.recordImportBatch('job-1', { ...batch, changes: [] }, [
          createdEvent(created, 'job-1'),
        ]),
        false,
      );
      assert.equal(await ctx.store.users.findUser(identityOf(created)), undefined);
      assert.deepEqual(
        await ctx.store.events.listEvents(ALL_EVENTS, { after: null, limit: 10 }),
        [],
      );
    });

    it('refuses a batch that inserts an existing identity with DuplicateError, writing nothing', async () => {
      const existing = userRecord('app', 'google_oauth2', 'taken');
      await ctx.store.users.insertUser(existing, []);
      await ctx.store.imports.insertImportJob(importJob('job-1'));
      const fresh = userRecord('app', 'google_oauth2', 'fresh');
      await assert.rejects(
        ctx.store.imports.recordImportBatch(
          'job-1',
          {
            counts: { ...NO_COUNTS, read: 2, created: 2 },
            errors: [],
            inserts: [fresh, { ...existing, id: 'another-id' }],
            changes: [],
            recordedAt: T0 + 1,
          },
          [],
        ),
        DuplicateError,
      );
      assert.equal(await ctx.store.users.findUser(identityOf(fresh)), undefined);
      assert.deepEqual((await ctx.store.imports.findImportJob('job-1'))?.counts, NO_COUNTS);
    });

    it('finishes a running job once; a finished job records no progress', async () => {
      await ctx.store.imports.insertImportJob(importJob('job-1'));
      await ctx.store.imports.touchImportJob('job-1', T0 + 7);
      assert.equal((await ctx.store.imports.findImportJob('job-1'))?.updatedAt, T0 + 7);
      assert.equal(
        await ctx.store.imports.finishImportJob(
          'job-1',
          'failed',
          T0 + 9,
          'the body was cut short',
        ),
        true,
      );
      assert.equal(
        await ctx.store.imports.finishImportJob('job-1', 'succeeded', T0 + 10, null),
        false,
      );
      assert.equal(
        await ctx.store.imports.finishImportJob('ghost', 'succeeded', T0 + 10, null),
        false,
      );
      const job = await ctx.store.imports.findImportJob('job-1');
      assert.equal(job?.status, 'failed');
      assert.equal(job?.failure, 'the body was cut short');
      assert.equal(job?.finishedAt, T0 + 9);
    });

    it('goes with its application', async () => {
      await ctx.store.imports.insertImportJob(importJob('job-1'));
      const application = await ctx.store.applications.findApplication('app');
      await ctx.store.applications.deleteApplicationCascade('app', application!.etag, []);
      assert.equal(await ctx.store.imports.findImportJob('job-1'), undefined);
    });
  });
}
