// A mixed cluster on one PostgreSQL: the first instance starts with the outbound fence on, a
// second with IAM_ALLOW_INSECURE_WEBHOOKS=true. The second says at start that it will not act
// on it, refuses to create a webhook to a loopback address, and does not deliver to one (a
// webhook that got into the database some other way).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  createTestSchema,
  databaseUrlFor,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from './postgres.js';
import {
  type ServerProcess,
  callServer,
  serverEntry,
  startServerProcess,
} from './server-process.js';
import { WebhookReceiver } from './webhook-receiver.js';

const skip = await skipWithoutPostgres();
const KEY = `tsr_fence_${'f'.repeat(42)}`;

describe('a cluster whose first instance fenced webhooks', { skip, timeout: 180_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-fence-'));
  let schema = '';
  let fenced: ServerProcess;
  let insecure: ServerProcess;
  let receiver: WebhookReceiver;
  const start = (name: string, env: Record<string, string>) =>
    startServerProcess(process.execPath, serverEntry(), {
      DATABASE_URL: databaseUrlFor(schema),
      IAM_DATA_DIR: join(directory, name),
      IAM_BOOTSTRAP_API_KEY: KEY,
      ...env,
    });

  before(async () => {
    schema = await createTestSchema();
    receiver = await WebhookReceiver.start();
    fenced = await start('fenced', {});
    insecure = await start('insecure', { IAM_ALLOW_INSECURE_WEBHOOKS: 'true' });
  });
  after(async () => {
    await Promise.all([fenced.stop(), insecure.stop()]);
    await receiver.close();
    await dropSchema(schema);
    rmSync(directory, { recursive: true, force: true });
  });

  it('names the setting it will not act on, once, at start', () => {
    const lines = insecure
      .output()
      .split('\n')
      .filter((line) => line.includes('IAM_ALLOW_INSECURE_WEBHOOKS'));
    assert.equal(lines.length, 1, insecure.output());
    const line = JSON.parse(lines[0]!) as { level: number; msg: string };
    assert.equal(line.level, 40);
    assert.match(
      line.msg,
      /is not acted on: the cluster's setting, stored in its database, is false/,
    );
    assert.doesNotMatch(fenced.output(), /IAM_ALLOW_INSECURE_WEBHOOKS/);
  });

  it('refuses to create a webhook to a loopback address through the wider instance', async () => {
    const created = await callServer(insecure, KEY, 'POST', '/webhooks', {
      url: receiver.url,
      event_types: ['*'],
    });
    assert.equal(created.status, 400);
    assert.match(JSON.stringify(created.body), /https: URL/);
  });

  it('does not deliver to a loopback address from the wider instance', async () => {
    // Only the wider instance works: whatever is attempted, it attempts.
    await fenced.stop();
    const store = await openTestPostgresStore({ schema });
    try {
      const now = Date.now();
      await store.webhooks.insertWebhook(
        {
          id: '0198f000-0000-7000-8000-000000000001',
          url: receiver.url,
          eventTypes: ['*'],
          clientIds: null,
          description: 'made while the cluster allowed it',
          enabled: true,
          disabledReason: null,
          secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
          previousSecret: null,
          previousSecretExpiresAt: null,
          createdAt: now,
          updatedAt: now,
          etag: 'loopback-1',
        },
        await store.events.lastEventId(),
        [],
      );
    } finally {
      await store.close();
    }
    const app = await callServer(insecure, KEY, 'POST', '/applications', {
      client_id: 'fenced-app',
      display_name: 'Fenced',
      description: '',
    });
    assert.equal(app.status, 201);
    const deadline = Date.now() + 20_000;
    let log: { error: string | null }[] = [];
    while (log.length === 0) {
      assert.ok(Date.now() < deadline, 'no attempt was recorded');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const deliveries = await callServer(
        insecure,
        KEY,
        'GET',
        '/webhooks/0198f000-0000-7000-8000-000000000001/deliveries',
      );
      log = (deliveries.body.items as { log: { error: string | null }[] }[])[0]?.log ?? [];
    }
    assert.match(log[0]!.error ?? '', /must be an https: URL/);
    assert.equal(receiver.requests, 0);
  });
});
