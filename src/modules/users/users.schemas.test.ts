import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import fastJsonStringify from 'fast-json-stringify';
import type { UserRecord } from '../../store/store.js';
import { UserPage, toUserResource, userPageJson } from './users.schemas.js';

// The schema's own serializer, as Fastify would compile it for the list route: the contract.
const schemaSerializer = fastJsonStringify(UserPage);

// Any string the store can hold: every UTF-16 unit, so quotes, backslashes, control
// characters, non-ASCII and lone surrogates all get escaped (or not) by both serializers.
const text = fc.string({ unit: 'binary', maxLength: 40 });
const anyText = fc.oneof(
  text,
  fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
    maxLength: 20,
  }),
);
const millis = fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) });

const userRecord: fc.Arbitrary<UserRecord> = fc.record({
  clientId: anyText,
  provider: anyText,
  identifier: anyText,
  id: anyText,
  name: anyText,
  avatar: fc.option(anyText, { nil: null }),
  email: anyText,
  locale: anyText,
  roles: fc.array(anyText, { maxLength: 4 }),
  scopes: fc.array(anyText, { maxLength: 4 }),
  active: fc.boolean(),
  externalId: fc.option(anyText, { nil: null }),
  createdAt: millis,
  updatedAt: millis,
  etag: anyText,
});

const page = fc
  .record(
    {
      items: fc.array(userRecord.map(toUserResource), { maxLength: 5 }),
      next_cursor: fc.option(anyText, { nil: null }),
      total: fc.nat(),
    },
    { requiredKeys: ['items', 'next_cursor'] },
  )
  // As servePage builds it: a plain object, items first.
  .map((value) => ({ ...value }));

describe('userPageJson', () => {
  it('writes byte for byte what the UserPage schema serializer writes', () => {
    fc.assert(
      fc.property(page, (value) => {
        assert.equal(userPageJson(value), schemaSerializer(value));
      }),
      { numRuns: 500 },
    );
  });

  it('reads back as the page it was given', () => {
    fc.assert(
      fc.property(page, (value) => {
        assert.deepEqual(JSON.parse(userPageJson(value)), value);
      }),
      { numRuns: 200 },
    );
  });
});
