import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { T0, type ContractContext } from './fixtures.js';

export function describeLimitCountersContract(ctx: ContractContext): void {
  describe('limit counters', () => {
    it('count in fixed windows: added to within one, started over after it', async () => {
      const { limits } = ctx.store;
      assert.deepEqual(await limits.addToCounter('a', 1, T0, 60_000), {
        count: 1,
        resetsAt: T0 + 60_000,
      });
      assert.deepEqual(await limits.addToCounter('a', 5, T0 + 59_999, 60_000), {
        count: 6,
        resetsAt: T0 + 60_000,
      });
      // Another counter is apart.
      assert.deepEqual(await limits.addToCounter('b', 2, T0 + 10, 1_000), {
        count: 2,
        resetsAt: T0 + 1_010,
      });
      // The window ended: the next addition starts a new one where it is made.
      assert.deepEqual(await limits.addToCounter('a', 3, T0 + 60_000, 60_000), {
        count: 3,
        resetsAt: T0 + 120_000,
      });
    });

    it('count every one of concurrent additions, each seeing its own sum', async () => {
      const { limits } = ctx.store;
      const counts = await Promise.all(
        Array.from({ length: 20 }, () => limits.addToCounter('busy', 1, T0, 60_000)),
      );
      assert.deepEqual(
        counts.map(({ count }) => count).sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, index) => index + 1),
      );
    });

    it('prune the counters whose window ended, and only those', async () => {
      const { limits } = ctx.store;
      await limits.addToCounter('old-1', 1, T0, 1_000);
      await limits.addToCounter('old-2', 1, T0, 2_000);
      await limits.addToCounter('current', 1, T0, 60_000);
      assert.equal(await limits.pruneCounters(T0 + 10_000, 1), 1);
      assert.equal(await limits.pruneCounters(T0 + 10_000, 10), 1);
      assert.equal(await limits.pruneCounters(T0 + 10_000, 10), 0);
      assert.deepEqual(await limits.addToCounter('current', 1, T0 + 1, 60_000), {
        count: 2,
        resetsAt: T0 + 60_000,
      });
    });
  });
}
