// Issue 3: several stateless Tessera processes on one PostgreSQL database, started
// as operators start them, called over real HTTP.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../src/cli/main.js';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import {
  type ServerProcess,
  callServer as request,
  serverEntry,
  startServerProcess,
} from './server-process.js';

const skip = await skipWithoutPostgres();

/** Runs Tessera as npm start does (dist/ as the test runner built it, else the sources). */
function startInstance(databaseUrl: string, dataDir: string): Promise<ServerProcess> {
  return startServerProcess(process.execPath, serverEntry(), {
    DATABASE_URL: databaseUrl,
    IAM_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  });
}

describe('two instances on one PostgreSQL database', { skip, timeout: 180_000 }, () => {
  const directories = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'tessera-instance-')));
  let schema = '';
  let instances: ServerProcess[] = [];
  let adminKey = '';

  before(async () => {
    schema = await createTestSchema();
    // Both start at once on an empty schema: both migrate, both try to create the first key.
    instances = await Promise.all(
      directories.map((directory) => startInstance(databaseUrlFor(schema), directory)),
    );
  });

  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await dropSchema(schema);
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('both come up on an empty database, and exactly one first-start key is made', async () => {
    const keyFiles = directories
      .map((directory) => join(directory, 'admin-api-key'))
      .filter((file) => existsSync(file));
    assert.equal(keyFiles.length, 1, 'one instance made the key, the other found it there');
    adminKey = readFileSync(keyFiles[0]!, 'utf8').trim();
    for (const instance of instances) {
      assert.equal((await fetch(`${instance.baseUrl}/readyz`)).status, 200);
      const keys = await request(instance, adminKey, 'GET', '/api-keys');
      assert.equal(keys.status, 200);
      assert.equal(keys.body.items.length, 1);
    }
  });

  it('shows a change made through one instance at the other at once', async () => {
    const [one, other] = instances as [ServerProcess, ServerProcess];
    assert.equal(
      (
        await request(one, adminKey, 'POST', '/applications', {
          client_id: 'shared-app',
          display_name: 'Shared',
          description: 'used by both instances',
        })
      ).status,
      201,
    );
    const seen = await request(other, adminKey, 'GET', '/applications/shared-app');
    assert.equal(seen.status, 200);
    assert.equal((seen.body as { display_name: string }).display_name, 'Shared');

    const patched = await request(other, adminKey, 'PUT', '/applications/shared-app', {
      client_id: 'shared-app',
      display_name: 'Shared, renamed',
      description: 'used by both instances',
    });
    assert.equal(patched.status, 200);
    const reread = await request(one, adminKey, 'GET', '/applications/shared-app');
    assert.equal((reread.body as { display_name: string }).display_name, 'Shared, renamed');
  });

  it('answers a long poll on one instance with a change made through the other', async () => {
    const [one, other] = instances as [ServerProcess, ServerProcess];
    const feed = await request(other, adminKey, 'GET', '/events?limit=1000');
    const after = feed.body.next_after as string;
    const polled = request(other, adminKey, 'GET', `/events?after=${after}&wait=20`);
    // The long poll is waiting (its first read came back empty) before the change is made.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const created = await request(one, adminKey, 'POST', '/applications', {
      client_id: 'polled-app',
      display_name: 'Polled',
      description: '',
    });
    assert.equal(created.status, 201);
    const answer = await polled;
    assert.equal(answer.status, 200);
    assert.equal(answer.body.items[0].client_id, 'polled-app');
    // Woken by the notification, not at the end of its 20 s.
    assert.ok(Date.now() - started < 10_000);
  });

  it('lets exactly one of 40 identical creates spread over both instances succeed', async () => {
    const user = {
      identifier: 'same-person',
      provider: 'google_oauth2',
      name: 'Same Person',
      email: 'same@example.com',
      locale: 'en',
      roles: [],
      scopes: [],
    };
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        request(instances[index % 2]!, adminKey, 'POST', '/applications/shared-app/users', user),
      ),
    );
    const counts = new Map<number, number>();
    for (const { status } of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(counts), { 201: 1, 409: 39 });
  });

  it('lets one of 16 creates of a SCIM userName in every case, over both instances, SCIM and the API, succeed', async () => {
    const created = await request(instances[0]!, adminKey, 'POST', '/applications', {
      client_id: 'scim-race',
      display_name: 'SCIM race',
      description: '',
      scim_provider: 'okta_scim',
    });
    assert.equal(created.status, 201);
    const spellings = Array.from({ length: 16 }, (_, bits) =>
      Array.from('race', (letter, index) =>
        (bits >> index) & 1 ? letter.toUpperCase() : letter,
      ).join(''),
    );
    const statuses = await Promise.all(
      spellings.map((userName, index) => {
        const instance = instances[index % 2]!;
        return index % 4 < 2
          ? request(instance, adminKey, 'POST', '//scim/v2/scim-race/Users', {
              userName,
              emails: [{ value: 'race@example.com' }],
            })
          : request(instance, adminKey, 'POST', '/applications/scim-race/users', {
              identifier: userName,
              provider: 'okta_scim',
              name: 'Racer',
              email: 'race@example.com',
              locale: 'en',
              roles: [],
              scopes: [],
            });
      }),
    );
    const counts = new Map<number, number>();
    for (const { status } of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(counts), { 201: 1, 409: 15 });
  });

  it('refuses a key revoked through one instance at the other within one second', async () => {
    const [one, other] = instances as [ServerProcess, ServerProcess];
    const created = await request(one, adminKey, 'POST', '/api-keys', {
      name: 'short-lived',
      roles: ['applications:read'],
    });
    assert.equal(created.status, 201);
    const { id, key } = created.body as { id: string; key: string };
    // The other instance has the key in its lookup cache when the revocation happens.
    assert.equal((await request(other, key, 'GET', '/applications')).status, 200);

    assert.equal((await request(one, adminKey, 'DELETE', `/api-keys/${id}`)).status, 204);
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 2000) {
      status = (await request(other, key, 'GET', '/applications')).status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const elapsed = Date.now() - revokedAt;
    assert.equal(status, 401);
    assert.ok(elapsed <= 1000, `refused after ${elapsed} ms`);
  });

  it('takes keys made and revoked by `tessera keys` on the same database', async () => {
    // The CLI in-process (runCli), on the database the two instances serve.
    const tessera = async (...args: string[]) => {
      let stdout = '';
      let stderr = '';
      const status = await runCli(args, {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        env: { ...process.env, DATABASE_URL: databaseUrlFor(schema) },
      });
      return { status, stdout, stderr };
    };
    const created = await tessera(
      'keys',
      'create',
      '--name',
      'from-cli',
      '--roles',
      'users:read',
      '--json',
    );
    assert.equal(created.status, 0, created.stderr);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    for (const instance of instances) {
      assert.equal(
        (await request(instance, key, 'GET', '/applications/shared-app/users')).status,
        200,
      );
    }
    assert.equal((await tessera('keys', 'revoke', id)).status, 0);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const instance of instances) {
      assert.equal(
        (await request(instance, key, 'GET', '/applications/shared-app/users')).status,
        401,
      );
    }
  });
});
