import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NewEvent } from '../store.js';
import { parseStringArray, toEventRecord, toEventRow } from './rows.js';

describe('parseStringArray', () => {
  it('reads what JSON.stringify wrote, short and long', () => {
    for (const value of [
      [],
      ['member'],
      ['a"b', 'ü', '\\'],
      Array.from({ length: 100 }, (_, n) => `org:${'x'.repeat(20)}${n}`),
    ]) {
      assert.deepEqual(parseStringArray(JSON.stringify(value)), value);
      assert.deepEqual(parseStringArray(JSON.stringify(value)), value, 'read a second time');
    }
  });

  it('hands out a fresh array each time: changing one record leaves the next read alone', () => {
    const first = parseStringArray('["member","billing:read"]');
    first.push('admin');
    first[0] = 'changed';
    assert.deepEqual(parseStringArray('["member","billing:read"]'), ['member', 'billing:read']);
  });
});

describe('event changes', () => {
  const event: NewEvent = {
    type: 'user.updated',
    occurredAt: 1_790_000_000_000,
    actor: { type: 'api_key', id: 'key-1' },
    clientId: 'app-1',
    resource: { type: 'user', id: { id: 'u-1', provider: 'p', identifier: 'i' } },
    changes: [
      { member: 'name', before: 'Ann', after: 'Anna' },
      { member: 'roles', before: ['reader'], after: ['reader', 'admin'] },
      { member: 'avatar', before: null, after: { url: 'https://example.com/a.png' } },
      { member: 'active', before: true, after: false },
    ],
    requestId: 'req-1',
  };

  it('reads back what was written, member by member and in order', () => {
    const row = toEventRow(event);
    const record = toEventRecord({ ...row, seq: 7 });
    assert.deepEqual(record.changes, event.changes);
    assert.equal(record.id, '0000000000000007');
    assert.deepEqual(record.resource, event.resource);
  });

  it('stores each change as a [member, before, after] triple, without repeating key names', () => {
    const stored = toEventRow(event).changes!;
    assert.deepEqual(JSON.parse(stored), [
      ['name', 'Ann', 'Anna'],
      ['roles', ['reader'], ['reader', 'admin']],
      ['avatar', null, { url: 'https://example.com/a.png' }],
      ['active', true, false],
    ]);
    assert.ok(stored.length < JSON.stringify(event.changes).length * 0.7, stored);
  });

  it('reads rows written before the triples, when each change was a {member, before, after} object', () => {
    const row = { ...toEventRow(event), seq: 1, changes: JSON.stringify(event.changes) };
    assert.deepEqual(toEventRecord(row).changes, event.changes);
  });

  it('keeps an event without changes without them', () => {
    const row = toEventRow({ ...event, type: 'signing_key.revoked', changes: null });
    assert.equal(row.changes, null);
    assert.equal(toEventRecord({ ...row, seq: 2 }).changes, null);
  });
});
