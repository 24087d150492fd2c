// The widening settings (IAM_ALLOW_INSECURE_WEBHOOKS, IAM_ALLOW_INSECURE_JWKS) are the
// cluster's: stored by the first instance on a PostgreSQL database, compared there by every
// later one, changed on purpose with `tessera cluster-settings set`. On SQLite the one
// instance's environment decides.

import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../src/cli/main.js';
import {
  ClusterSettings,
  type WideningSettingName,
} from '../src/modules/cluster-settings/cluster-settings.service.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { databaseUrlFor, openTestPostgresStore, skipWithoutPostgres } from './postgres.js';

const skip = await skipWithoutPostgres();

function instance(
  store: Store,
  own: Partial<Record<WideningSettingName, boolean>>,
  decidesAlone = false,
) {
  const lines: { level: 'info' | 'warn'; message: string }[] = [];
  const settings = new ClusterSettings({
    store,
    instance: { 'allow-insecure-webhooks': false, 'allow-insecure-jwks': false, ...own },
    decidesAlone,
    log: {
      info: (message) => lines.push({ level: 'info', message }),
      warn: (message) => lines.push({ level: 'warn', message }),
    },
  });
  return { settings, lines };
}

async function cli(env: Record<string, string>, args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { ...process.env, ...env },
  });
  return { code, stdout, stderr };
}

describe('cluster settings on PostgreSQL', { skip }, () => {
  let store: Store & { schema: string };
  before(async () => {
    store = await openTestPostgresStore();
    await store.migrate();
  });
  after(() => store.close());

  it('are stored by the first instance; a wider one acts fenced and says so in one line', async () => {
    const first = instance(store, {});
    await first.settings.prepare();
    assert.equal(first.settings.webhooks.allowInsecure, false);
    assert.deepEqual(first.lines, []);

    const wider = instance(store, { 'allow-insecure-webhooks': true, 'allow-insecure-jwks': true });
    const states = await wider.settings.prepare();
    assert.deepEqual(
      states.map(({ name, effective }) => [name, effective]),
      [
        ['allow-insecure-webhooks', false],
        ['allow-insecure-jwks', false],
      ],
    );
    assert.equal(wider.settings.webhooks.allowInsecure, false);
    assert.equal(wider.settings.jwks.allowInsecure, false);
    assert.equal(wider.lines.length, 2);
    assert.equal(wider.lines[0]!.level, 'warn');
    assert.match(
      wider.lines[0]!.message,
      /^IAM_ALLOW_INSECURE_WEBHOOKS=true is not acted on: the cluster's setting, stored in its database, is false.*tessera cluster-settings set allow-insecure-webhooks true$/,
    );
    assert.match(wider.lines[1]!.message, /^IAM_ALLOW_INSECURE_JWKS=true is not acted on/);
  });

  it('follow `tessera cluster-settings set` on running instances, never wider than their own', async () => {
    const env = { DATABASE_URL: databaseUrlFor(store.schema) };
    const wider = instance(store, { 'allow-insecure-webhooks': true });
    const narrower = instance(store, {});
    await wider.settings.prepare();
    await narrower.settings.prepare();

    const set = await cli(env, ['cluster-settings', 'set', 'allow-insecure-webhooks', 'true']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(
      set.stdout,
      /allow-insecure-webhooks: false -> true, recorded as a cluster_setting.changed event/,
    );
    const [recorded] = await store.events.listEvents(
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
    assert.deepEqual(recorded?.resource, {
      type: 'cluster_setting',
      id: { name: 'allow-insecure-webhooks' },
    });
    assert.deepEqual(recorded?.changes, [{ member: 'value', before: false, after: true }]);
    assert.equal(recorded?.actor.type, 'cli');
    const again = await cli(env, ['cluster-settings', 'set', 'allow-insecure-webhooks', 'true']);
    assert.match(again.stdout, /is true already; nothing changed/);
    await wider.settings.refresh();
    await narrower.settings.refresh();
    assert.equal(wider.settings.webhooks.allowInsecure, true);
    assert.equal(narrower.settings.webhooks.allowInsecure, false, 'its own setting is narrower');
    assert.match(wider.lines.at(-1)!.message, /now acts on true/);

    const shown = await cli(env, ['cluster-settings', 'show', '--json']);
    assert.deepEqual(JSON.parse(shown.stdout), {
      'allow-insecure-webhooks': true,
      'allow-insecure-jwks': false,
    });
    // A later instance compares with the stored value; it does not replace it.
    const later = instance(store, {});
    await later.settings.prepare();
    assert.match(later.lines[0]!.message, /this instance keeps the fence/);

    assert.equal(
      (await cli(env, ['cluster-settings', 'set', 'allow-insecure-webhooks', 'false'])).code,
      0,
    );
    await wider.settings.refresh();
    assert.equal(wider.settings.webhooks.allowInsecure, false, 'a narrowing reaches it too');
  });

  it('refuses an unknown setting or value with a one-line usage error', async () => {
    const env = { DATABASE_URL: databaseUrlFor(store.schema) };
    const unknown = await cli(env, ['cluster-settings', 'set', 'allow-everything', 'true']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^tessera: unknown setting "allow-everything"; choose /);
    const value = await cli(env, ['cluster-settings', 'set', 'allow-insecure-jwks', 'yes']);
    assert.equal(value.code, 2);
    assert.match(value.stderr, /must be true or false/);
  });
});

describe('cluster settings on SQLite', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-settings-'));
  const path = join(directory, 'tessera.db');
  after(() => rmSync(directory, { recursive: true, force: true }));

  it("follow the one instance's environment, stored at each start", async () => {
    const store = openSqliteStore({ path });
    await store.migrate();
    try {
      const fenced = instance(store, {}, true);
      await fenced.settings.prepare();
      const insecure = instance(store, { 'allow-insecure-webhooks': true }, true);
      await insecure.settings.prepare();
      assert.equal(insecure.settings.webhooks.allowInsecure, true);
      assert.match(
        insecure.lines[0]!.message,
        /^IAM_ALLOW_INSECURE_WEBHOOKS=true: .*never in production/,
      );
    } finally {
      await store.close();
    }
    const shown = await cli({ DATABASE_URL: `sqlite:${path}` }, ['cluster-settings', 'show']);
    assert.match(shown.stdout, /^allow-insecure-webhooks {2}true/m);
    const set = await cli({ DATABASE_URL: `sqlite:${path}` }, [
      'cluster-settings',
      'set',
      'allow-insecure-webhooks',
      'false',
    ]);
    assert.equal(set.code, 1);
    assert.match(set.stderr, /on SQLite the service's own IAM_ALLOW_INSECURE_WEBHOOKS decides/);
  });
});
