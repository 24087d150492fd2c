import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { EventFilter, NewEvent } from '../store.js';
import {
  type ContractContext,
  T0,
  apiKeyRecord,
  applicationRecord,
  keyId,
  userRecord,
} from './fixtures.js';

function event(type: string, overrides: Partial<NewEvent> = {}): NewEvent {
  return {
    type,
    occurredAt: T0,
    actor: { type: 'api_key', id: 'key-1' },
    clientId: 'billing',
    resource: { type: 'application', id: { client_id: 'billing' } },
    changes: [{ member: 'display_name', before: null, after: 'Billing ü 😀' }],
    requestId: 'req-1',
    ...overrides,
  };
}

const EVERYTHING: EventFilter = {
  types: null,
  clientId: null,
  actorId: null,
  resourceType: null,
  since: null,
  until: null,
  visibleClientIds: null,
};

export function describeEventsContract(ctx: ContractContext): void {
  describe('events', () => {
    const all = (filter: Partial<EventFilter> = {}, after: string | null = null) =>
      ctx.store.events.listEvents({ ...EVERYTHING, ...filter }, { after, limit: 1000 });

    it('stores the events of a write with it, exactly as given, with ids in write order', async () => {
      const created = event('application.created', {
        changes: [{ member: 'external_token_validation', before: null, after: { a: [1, null] } }],
      });
      await ctx.store.applications.insertApplication(applicationRecord('billing'), [created]);
      const app = (await ctx.store.applications.findApplication('billing'))!;
      const updated = event('application.updated', { occurredAt: T0 + 5 });
      const trust = event('application.trust_changed', { occurredAt: T0 + 5, requestId: null });
      assert.equal(
        await ctx.store.applications.replaceApplication(
          { ...app, displayName: 'x', etag: 'e2' },
          app.etag,
          [updated, trust],
        ),
        true,
      );
      const events = await all();
      assert.deepEqual(
        events.map(({ id: _id, ...rest }) => rest),
        [created, updated, trust],
      );
      const ids = events.map((stored) => stored.id);
      assert.deepEqual([...ids].sort(), ids, 'ids sort as strings in write order');
      assert.equal(new Set(ids).size, 3);
      assert.equal(await ctx.store.events.lastEventId(), ids[2]);
    });

    it('writes no event when a conditional write finds the version moved on', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('billing'), []);
      const app = (await ctx.store.applications.findApplication('billing'))!;
      const stale = [event('application.updated')];
      assert.equal(
        await ctx.store.applications.replaceApplication(app, 'not-the-etag', stale),
        false,
      );
      assert.equal(
        await ctx.store.applications.deleteApplicationCascade('billing', 'stale', stale),
        false,
      );
      assert.equal(
        await ctx.store.users.deleteUser(
          { clientId: 'billing', provider: 'google_oauth2', identifier: 'none' },
          'x',
          stale,
        ),
        false,
      );
      assert.equal(await ctx.store.apiKeys.revokeApiKey('missing', T0, stale), false);
      assert.equal(await ctx.store.signingKeys.revokeSigningKey('missing', T0, stale), false);
      assert.deepEqual(await all(), []);
      assert.equal(await ctx.store.events.lastEventId(), null);
    });

    it('writes no event when the write fails', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('billing'), []);
      await assert.rejects(
        ctx.store.applications.insertApplication(applicationRecord('billing'), [event('x.y')]),
        DuplicateError,
      );
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(1)), []);
      assert.equal(
        await ctx.store.apiKeys.insertFirstApiKey(apiKeyRecord(keyId(2)), [event('x.y')]),
        false,
      );
      const user = userRecord('billing', 'google_oauth2', 'ada');
      await ctx.store.users.insertUsers([user], []);
      await assert.rejects(
        ctx.store.users.insertUsers(
          [userRecord('billing', 'google_oauth2', 'bob'), user],
          [event('user.created')],
        ),
      );
      assert.deepEqual(await all(), []);
    });

    it('filters by type, prefix, application, actor, resource type and time', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('billing'), [
        event('application.created', { occurredAt: T0 }),
      ]);
      await ctx.store.applications.insertApplication(applicationRecord('shop'), [
        event('application.created', { clientId: 'shop', occurredAt: T0 + 10 }),
      ]);
      await ctx.store.users.insertUser(userRecord('shop', 'google_oauth2', 'ada'), [
        event('user.created', {
          clientId: 'shop',
          actor: { type: 'scim', id: 'key-2' },
          resource: { type: 'user', id: { id: 'u1' } },
          occurredAt: T0 + 20,
        }),
      ]);
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(1)), [
        event('api_key.created', {
          clientId: null,
          actor: { type: 'cli', id: null },
          resource: { type: 'api_key', id: { id: keyId(1) } },
          occurredAt: T0 + 30,
        }),
      ]);
      const types = async (filter: Partial<EventFilter>) => (await all(filter)).map((e) => e.type);
      assert.deepEqual(await types({ types: ['application.'] }), [
        'application.created',
        'application.created',
      ]);
      assert.deepEqual(await types({ types: ['user.created', 'api_key.'] }), [
        'user.created',
        'api_key.created',
      ]);
      // `_` is not a wildcard: `api.key.` is not `api_key.`.
      assert.deepEqual(await types({ types: ['apixkey.'] }), []);
      assert.deepEqual(await types({ clientId: 'shop' }), ['application.created', 'user.created']);
      assert.deepEqual(await types({ visibleClientIds: ['billing'] }), ['application.created']);
      assert.deepEqual(await types({ visibleClientIds: [] }), []);
      assert.deepEqual(await types({ actorId: 'key-2' }), ['user.created']);
      assert.deepEqual(await types({ resourceType: 'api_key' }), ['api_key.created']);
      assert.deepEqual(await types({ since: T0 + 10, until: T0 + 30 }), [
        'application.created',
        'user.created',
      ]);
    });

    it('pages after an id, and prunes the events older than a time', async () => {
      const many = Array.from({ length: 25 }, (_, index) =>
        event('user.updated', { occurredAt: T0 + index }),
      );
      await ctx.store.applications.insertApplication(applicationRecord('billing'), many);
      const first = await ctx.store.events.listEvents(EVERYTHING, { after: null, limit: 10 });
      const second = await ctx.store.events.listEvents(EVERYTHING, {
        after: first.at(-1)!.id,
        limit: 10,
      });
      assert.equal(first.length, 10);
      assert.deepEqual(
        second.map((e) => e.occurredAt),
        Array.from({ length: 10 }, (_, index) => T0 + 10 + index),
      );
      const last = await ctx.store.events.lastEventId();
      assert.equal(await ctx.store.events.pruneEvents(T0 + 20, 15), 15);
      assert.equal(await ctx.store.events.pruneEvents(T0 + 20, 15), 5);
      assert.deepEqual(
        (await all()).map((e) => e.occurredAt),
        [20, 21, 22, 23, 24].map((n) => T0 + n),
      );
      // Ids are never reused, even once every event is pruned.
      assert.equal(await ctx.store.events.pruneEvents(T0 + 100, 100), 5);
      await ctx.store.applications.insertApplication(applicationRecord('shop'), [event('a.b')]);
      const [next] = await all();
      assert.ok(next!.id > last!, `${next!.id} comes after ${last}`);
    });

    it('lists newest first before an id, finds one event, and follows one resource by its id', async () => {
      await ctx.store.applications.insertApplication(
        applicationRecord('billing'),
        Array.from({ length: 7 }, (_, index) =>
          event('user.updated', {
            occurredAt: T0 + index,
            // Users u1 and u10 alternate: u1 must not match u10's events.
            resource: {
              type: 'user',
              id: { id: index % 2 === 0 ? 'u1' : 'u10', provider: 'p', identifier: `i${index}` },
            },
          }),
        ),
      );
      const newest = await ctx.store.events.listEventsNewestFirst(EVERYTHING, {
        before: null,
        limit: 3,
      });
      assert.deepEqual(
        newest.map((e) => e.occurredAt),
        [6, 5, 4].map((n) => T0 + n),
      );
      const older = await ctx.store.events.listEventsNewestFirst(
        { ...EVERYTHING, resourceId: 'u1' },
        { before: newest.at(-1)!.id, limit: 10 },
      );
      assert.deepEqual(
        older.map((e) => e.occurredAt),
        [2, 0].map((n) => T0 + n),
        'u1 renamed (i0, i2) is still u1; u10 is another user',
      );
      assert.equal((await all({ resourceId: 'u10' })).length, 3);
      assert.equal((await all({ resourceId: 'u' })).length, 0);
      assert.deepEqual(await ctx.store.events.findEvent(newest[1]!.id), newest[1]);
      assert.equal(await ctx.store.events.findEvent('9999999999999999'), undefined);
      assert.equal(await ctx.store.events.findEvent('not-an-id'), undefined);
    });

    it('gives concurrent writes distinct ids in the order they became visible', async () => {
      await ctx.store.applications.insertApplication(applicationRecord('billing'), []);
      await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          ctx.store.users.insertUser(userRecord('billing', 'google_oauth2', `u${index}`), [
            event('user.created', { requestId: `r${index}` }),
            event('user.registered', { requestId: `r${index}` }),
          ]),
        ),
      );
      const events = await all();
      assert.equal(events.length, 80);
      assert.equal(new Set(events.map((e) => e.id)).size, 80);
      // The events of one write are adjacent: nothing interleaves inside a transaction.
      for (let index = 0; index < 80; index += 2) {
        assert.equal(events[index]!.requestId, events[index + 1]!.requestId);
      }
    });
  });
}
