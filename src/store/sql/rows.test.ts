import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseStringArray } from './rows.js';

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
