// Two Tessera processes on one PostgreSQL database deliver to one webhook: one instance at a
// time works it (a lease), every event arrives, and when the instance delivering is killed
// the other takes over once its lease has expired. Duplicates are counted and reported.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { type ServerProcess, callServer, startServerProcess } from './server-process.js';
import { WebhookReceiver } from './webhook-receiver.js';

const skip = await skipWithoutPostgres();
const KEY = `tsr_instances_${'i'.repeat(36)}`;

function startInstance(databaseUrl: string, dataDir: string): Promise<ServerProcess> {
  return startServerProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    DATABASE_URL: databaseUrl,
    IAM_DATA_DIR: dataDir,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
    LOG_LEVEL: 'warn',
  });
}

async function createUsers(instances: ServerProcess[], prefix: string, count: number) {
  await Promise.all(
    Array.from({ length: 8 }, async (_, writer) => {
      for (let index = writer; index < count; index += 8) {
        const instance = instances[index % instances.length]!;
        const response = await callServer(instance, KEY, 'POST', '/applications/shared/users', {
          provider: 'test_idp',
          identifier: `${prefix}-${index}`,
          name: 'Someone',
          email: `${prefix}-${index}@example.com`,
          locale: 'en',
          roles: [],
          scopes: [],
        });
        assert.equal(response.status, 201);
      }
    }),
  );
}

async function feedIds(instance: ServerProcess): Promise<string[]> {
  const ids: string[] = [];
  let after = '';
  for (;;) {
    const page = await callServer(instance, KEY, 'GET', `/events?type=user.*&limit=1000${after}`);
    assert.equal(page.status, 200);
    const items = page.body.items as { id: string }[];
    if (items.length === 0) return ids;
    ids.push(...items.map((item) => item.id));
    after = `&after=${items.at(-1)!.id}`;
  }
}

async function waitForEvery(receiver: WebhookReceiver, ids: string[], timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const arrived = new Set(receiver.ids());
    const missing = ids.filter((id) => !arrived.has(id));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${missing.length} events never arrived`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function duplicates(receiver: WebhookReceiver): number {
  return receiver.ids().length - new Set(receiver.ids()).size;
}

describe('webhooks with two instances on one PostgreSQL', { skip, timeout: 240_000 }, () => {
  const directories = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'tessera-hooks-')));
  let schema = '';
  let instances: ServerProcess[] = [];
  let receiver: WebhookReceiver;

  before(async () => {
    schema = await createTestSchema();
    receiver = await WebhookReceiver.start();
    instances = await Promise.all(
      directories.slice(0, 2).map((directory) => startInstance(databaseUrlFor(schema), directory)),
    );
    const hook = await callServer(instances[0]!, KEY, 'POST', '/webhooks', {
      url: receiver.url,
      event_types: ['user.*'],
    });
    assert.equal(hook.status, 201);
    receiver.secrets.push(hook.body.secret);
    const app = await callServer(instances[0]!, KEY, 'POST', '/applications', {
      client_id: 'shared',
      display_name: 'Shared',
      description: '',
    });
    assert.equal(app.status, 201);
  });

  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await receiver.close();
    await dropSchema(schema);
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('delivers every event written through either instance, first arrivals in order', async () => {
    await createUsers(instances, 'both', 400);
    const ids = await feedIds(instances[1]!);
    assert.equal(ids.length, 400);
    await waitForEvery(receiver, ids, 60_000);
    const first = [...new Set(receiver.ids())];
    assert.deepEqual(first, [...first].sort());
    process.stdout.write(
      `two instances: ${ids.length} events, ${receiver.ids().length} deliveries, ` +
        `${duplicates(receiver)} duplicates\n`,
    );
    assert.ok(duplicates(receiver) <= 20, 'duplicates stay bounded');
    assert.deepEqual(receiver.refused, []);
  });

  it('goes on from another instance when the one delivering is killed', async () => {
    // A slow receiver keeps the first instance busy delivering when it dies.
    const slow = receiver.behaviour;
    let requests = 0;
    receiver.behaviour = () => {
      requests += 1;
      return { status: 204, delayMs: 15 };
    };
    const before = receiver.received.length;
    await createUsers([instances[0]!], 'killed', 200);
    while (receiver.received.length < before + 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    instances[0]!.process.kill('SIGKILL');
    await instances[0]!.exited;
    // Writes go on through the survivor and a third instance that joins.
    instances[0] = await startInstance(databaseUrlFor(schema), directories[2]!);
    await createUsers([instances[1]!], 'after', 50);
    const ids = await feedIds(instances[1]!);
    await waitForEvery(receiver, ids, 90_000);
    receiver.behaviour = slow;
    process.stdout.write(
      `after a kill: ${ids.length} events, ${receiver.ids().length} deliveries, ` +
        `${duplicates(receiver)} duplicates (${requests} requests while slow)\n`,
    );
    const first = [...new Set(receiver.ids())];
    assert.deepEqual(first, [...first].sort());
    assert.ok(duplicates(receiver) <= 250, 'duplicates stay bounded');
    assert.deepEqual(receiver.refused, []);
  });
});
