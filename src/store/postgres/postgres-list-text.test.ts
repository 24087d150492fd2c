// PostgreSQL writes a page of users as the API's JSON text (listUsersText). The property: for
// generated users (any Unicode PostgreSQL text holds: quotes, backslashes, control characters,
// astral characters; timestamps across the years 1970–9999), under every filter and from any
// position, its text is byte for byte what the API writes from the same page read as rows
// (listUsers, toUserResource, JSON.stringify), and it says the same about the page's end.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { toUserResource } from '../../modules/users/users.schemas.js';
import { openTestPostgresStore, skipWithoutPostgres } from '../../../test/postgres.js';
import { applicationRecord, userRecord, usersOf } from '../contract/fixtures.js';
import type { Store, UserRecord } from '../store.js';

const skip = await skipWithoutPostgres();

// PostgreSQL text holds every code point but NUL; the surrogates are not code points.
const codePoint = fc
  .oneof(
    fc.integer({ min: 1, max: 0x7f }),
    fc.integer({ min: 0x80, max: 0xd7ff }),
    fc.integer({ min: 0xe000, max: 0x10ffff }),
  )
  .map((point) => String.fromCodePoint(point));
const text = fc.string({ unit: codePoint, maxLength: 24 });
// An identifier holds no unit separator (the store's key joins provider and identifier by it).
const identifier = fc
  .string({ unit: codePoint, minLength: 1, maxLength: 24 })
  .map((value) => value.replaceAll('\u001f', '_'));
const millis = fc.integer({ min: 0, max: Date.UTC(10_000, 0, 1) - 1 });
const names = fc.constantFrom('admin', 'viewer', 'édition', '"quoted"', 'back\\slash', 'tab\t');
const PROVIDERS = ['google_oauth2', 'github'] as const;

const generatedUser = fc.record({
  provider: fc.constantFrom(...PROVIDERS),
  identifier,
  name: text,
  avatar: fc.option(text, { nil: null }),
  email: text,
  locale: text,
  roles: fc.uniqueArray(names, { maxLength: 3 }),
  scopes: fc.uniqueArray(names, { maxLength: 3 }),
  active: fc.boolean(),
  createdAt: millis,
  updatedAt: millis,
});

const filters = fc.record({
  provider: fc.option(fc.constantFrom(...PROVIDERS), { nil: null }),
  role: fc.option(names, { nil: null }),
  scope: fc.option(names, { nil: null }),
  active: fc.option(fc.boolean(), { nil: null }),
});

describe('PostgreSQL: a page of users as JSON text', { skip }, () => {
  let store: Store;
  before(async () => {
    store = await openTestPostgresStore();
    await store.migrate();
  });
  after(() => store?.close());

  it('is byte for byte the page the API writes from rows, under any filter and position', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(generatedUser, {
          maxLength: 12,
          selector: (user) => `${user.provider}\u0000${user.identifier}`,
        }),
        filters,
        fc.integer({ min: 1, max: 5 }),
        fc.nat({ max: 12 }),
        async (generated, chosen, limit, skipped) => {
          const clientId = `list-text-${run++}`;
          await store.applications.insertApplication(applicationRecord(clientId), []);
          const users: UserRecord[] = generated.map((user, index) => ({
            ...userRecord(clientId, user.provider, user.identifier),
            ...user,
            id: `id-${index}`,
          }));
          await store.users.insertUsers(users, []);
          const filter = usersOf(clientId, chosen);
          // Start after one of the matching users (or at the beginning).
          const all = await store.users.listUsers(filter, { after: null, limit: 100 });
          const from = skipped < all.length ? all[skipped] : undefined;
          const position =
            from === undefined ? null : { provider: from.provider, identifier: from.identifier };

          const rows = await store.users.listUsers(filter, { after: position, limit: limit + 1 });
          const page = await store.users.listUsersText(filter, { after: position, limit });
          assert.ok(page !== null, 'PostgreSQL writes every page whose years have four digits');
          const items = rows.slice(0, limit);
          assert.equal(
            page.items,
            items.map((user) => JSON.stringify(toUserResource(user))).join(','),
          );
          assert.equal(page.count, items.length);
          assert.equal(page.more, rows.length > limit);
          const last = items.at(-1);
          assert.deepEqual(
            page.last,
            last === undefined ? null : { provider: last.provider, identifier: last.identifier },
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it('writes no text for a page holding a timestamp past the year 9999', async () => {
    const clientId = 'list-text-far-future';
    await store.applications.insertApplication(applicationRecord(clientId), []);
    await store.users.insertUsers(
      [
        userRecord(clientId, 'github', 'near'),
        userRecord(clientId, 'github', 'far', { updatedAt: Date.UTC(10_000, 0, 1) }),
      ],
      [],
    );
    assert.equal(
      await store.users.listUsersText(usersOf(clientId), { after: null, limit: 10 }),
      null,
    );
  });
});
