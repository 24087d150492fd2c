import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toTimestamp } from './schemas.js';

describe('toTimestamp', () => {
  it('writes exactly what Date#toISOString writes', () => {
    const edges = [
      0,
      1,
      999,
      1000,
      59_999,
      86_399_999,
      86_400_000,
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      Date.UTC(2026, 11, 31, 23, 59, 59, 9),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10_000, 0, 1),
      -1,
      -86_400_001,
      Date.UTC(-1, 0, 1),
    ];
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const spread = Array.from({ length: 20_000 }, () =>
      Math.floor((random() * 2 - 0.5) * Date.UTC(9999, 0, 1)),
    );
    for (const millis of [...edges, ...spread]) {
      assert.equal(toTimestamp(millis), new Date(millis).toISOString(), String(millis));
    }
  });
});
