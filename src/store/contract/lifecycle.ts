import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ContractContext, applicationRecord, apiKeyRecord, keyId } from './fixtures.js';

export function describeLifecycleContract(ctx: ContractContext): void {
  describe('lifecycle', () => {
    it('answers ping', async () => {
      await ctx.store.ping();
      assert.ok(ctx.store.kind === 'sqlite' || ctx.store.kind === 'postgres');
    });

    it('migrates again without harm, keeping the data', async () => {
      const stored = applicationRecord('billing');
      await ctx.store.applications.insertApplication(stored, []);
      await ctx.store.migrate();
      await ctx.store.migrate();
      assert.deepEqual(await ctx.store.applications.findApplication('billing'), stored);
    });

    it('reports every migration applied, none pending and none unknown once migrated', async () => {
      const status = await ctx.store.schemaStatus();
      assert.deepEqual(status.pending, []);
      assert.deepEqual(status.unknown, []);
      assert.ok(status.applied.length >= 10, 'the migrations so far');
      const names = status.applied.map((migration) => migration.name);
      assert.deepEqual(names, [...names].sort(), 'in name order');
      assert.equal(names[0], '0001_initial');
      for (const migration of status.applied) {
        assert.ok(!Number.isNaN(Date.parse(migration.appliedAt)), migration.appliedAt);
      }
    });

    it('settles writes started before close by the time close resolves', async () => {
      const settled: string[] = [];
      // Written first, so the refusal below does not depend on which of two concurrent
      // writes of one key lands first (PostgreSQL runs them on different connections).
      await ctx.store.applications.insertApplication(applicationRecord('existing'), []);
      const writes = [
        ctx.store.applications.insertApplication(applicationRecord('a'), []),
        ctx.store.applications.insertApplication(applicationRecord('b'), []),
        ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(1)), []),
      ].map((write, index) => write.then(() => settled.push(`write ${index}`)));
      const refused = ctx.store.applications
        .insertApplication(applicationRecord('existing'), [])
        .catch((error: unknown) => settled.push(`refused: ${(error as Error).name}`));
      // A read-after-write: it must complete, not fail on a released database.
      const setting = ctx.store.settings.getOrCreateSetting('name', 'value');
      await ctx.store.close();
      ctx.closed = true;
      assert.deepEqual(settled.sort(), [
        'refused: DuplicateError',
        'write 0',
        'write 1',
        'write 2',
      ]);
      await Promise.all([...writes, refused]);
      assert.equal(await setting, 'value');
    });
  });
}
