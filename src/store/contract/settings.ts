import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { T0, type ContractContext } from './fixtures.js';

export function describeSettingsContract(ctx: ContractContext): void {
  describe('settings', () => {
    it('returns the first value written, forever', async () => {
      assert.equal(await ctx.store.settings.getOrCreateSetting('cursor_key', 'first'), 'first');
      assert.equal(await ctx.store.settings.getOrCreateSetting('cursor_key', 'second'), 'first');
      assert.equal(await ctx.store.settings.getOrCreateSetting('other', 'ü 請 😀'), 'ü 請 😀');
      assert.equal(await ctx.store.settings.getOrCreateSetting('cursor_key', ''), 'first');
    });

    it('finds and replaces settings', async () => {
      assert.equal(await ctx.store.settings.findSetting('bootstrap'), undefined);
      await ctx.store.settings.putSetting('bootstrap', 'one');
      assert.equal(await ctx.store.settings.findSetting('bootstrap'), 'one');
      await ctx.store.settings.putSetting('bootstrap', 'two');
      assert.equal(await ctx.store.settings.findSetting('bootstrap'), 'two');
      assert.equal(await ctx.store.settings.getOrCreateSetting('bootstrap', 'three'), 'two');
      assert.equal(await ctx.store.settings.findSetting('other'), undefined);
    });

    it('changes a setting with its events, and records nothing when it has that value', async () => {
      const { settings, events } = ctx.store;
      const changed = (value: string) => ({
        type: 'cluster_setting.changed',
        occurredAt: T0,
        actor: { type: 'cli' as const, id: null },
        clientId: null,
        resource: { type: 'cluster_setting' as const, id: { name: 'fence' } },
        changes: [{ member: 'value', before: null, after: value }],
        requestId: null,
      });
      assert.equal(await settings.changeSetting('fence', 'on', [changed('on')]), true);
      assert.equal(await settings.changeSetting('fence', 'on', [changed('on')]), false);
      assert.equal(await settings.changeSetting('fence', 'off', [changed('off')]), true);
      assert.equal(await settings.findSetting('fence'), 'off');
      const recorded = await events.listEvents(
        {
          types: ['cluster_setting.changed'],
          clientId: null,
          actorId: null,
          resourceType: null,
          since: null,
          until: null,
          visibleClientIds: null,
        },
        { after: null, limit: 10 },
      );
      assert.deepEqual(
        recorded.map((event) => event.changes?.[0]?.after),
        ['on', 'off'],
      );
    });

    it('gives 10 concurrent callers the same value', async () => {
      const initials = Array.from({ length: 10 }, (_, n) => `value-${n}`);
      const values = await Promise.all(
        initials.map((initial) => ctx.store.settings.getOrCreateSetting('cursor_key', initial)),
      );
      assert.ok(initials.includes(values[0]!), `${values[0]} is one of the initial values`);
      assert.deepEqual(
        values,
        initials.map(() => values[0]),
      );
      assert.equal(await ctx.store.settings.getOrCreateSetting('cursor_key', 'late'), values[0]);
    });
  });
}
