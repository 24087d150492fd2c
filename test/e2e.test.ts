// End to end, as a newcomer meets Tessera: `npm start` on a fresh data directory, the
// first-start key file, real HTTP, a graceful stop, and a restart that finds the data.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ServerProcess, callServer, startServerProcess } from './server-process.js';

function api(server: ServerProcess, key: string) {
  return (method: string, path: string, body?: unknown) =>
    callServer(server, key, method, path, body);
}

describe('npm start, end to end', { timeout: 240_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-e2e-'));
  const databaseUrl = `sqlite:${join(dataDir, 'tessera.db')}`;
  const identifier = 'CN=Ada Lovelace,OU=R&D/x%y';
  let first: ServerProcess | undefined;
  let adminKey = '';

  before(async () => {
    first = await startServerProcess('npm', ['start'], { DATABASE_URL: databaseUrl });
  });

  after(() => {
    first?.killAll('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs the version it runs, on which Node.js, and where it listens', () => {
    const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string;
    const serving = first!
      .output()
      .split('\n')
      .find((line) => line.includes('Tessera is serving'));
    assert.ok(serving !== undefined, first!.output());
    const entry = JSON.parse(serving) as Record<string, unknown>;
    assert.equal(entry.version, version);
    assert.equal(entry.node, process.versions.node);
    assert.equal(entry.address, first!.baseUrl);
  });

  it('writes the first-start key to <data dir>/admin-api-key, mode 0600, and logs only its path', () => {
    const keyFile = join(dataDir, 'admin-api-key');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    adminKey = readFileSync(keyFile, 'utf8').trim();
    assert.match(adminKey, /^tsr_[A-Za-z0-9_-]{43}$/);
    assert.ok(first!.output().includes(keyFile), 'the log names the key file');
    assert.ok(!first!.output().includes(adminKey), 'the log never contains the key');
  });

  it('serves the API over HTTP with that key', async () => {
    const call = api(first!, adminKey);
    const created = await call('POST', '/applications', {
      client_id: 'billing-web',
      display_name: 'Billing',
      description: 'Invoices',
    });
    assert.equal(created.status, 201);
    const user = await call('POST', '/applications/billing-web/users', {
      identifier,
      provider: 'azure_saml',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      locale: 'en-GB',
      roles: ['admin'],
      scopes: ['org:acme'],
    });
    assert.equal(user.status, 201);
    assert.equal(
      user.headers.get('location'),
      `/iam/api/v1/applications/billing-web/users/azure_saml/${encodeURIComponent(identifier)}`,
    );
    const unauthenticated = await fetch(`${first!.baseUrl}/iam/api/v1/applications`);
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.headers.get('www-authenticate'), 'apikey');
  });

  it('stops gracefully on SIGTERM with exit code 0', async () => {
    assert.equal(await first!.stop(), 0);
    assert.match(first!.output(), /"msg":"stopped"/);
  });

  it('finds everything again after a restart, and honours IAM_BOOTSTRAP_API_KEY', async () => {
    const bootstrapKey = 'e2e-bootstrap-key-0123456789abcdef0123456789';
    const second = await startServerProcess('npm', ['start'], {
      DATABASE_URL: databaseUrl,
      IAM_BOOTSTRAP_API_KEY: bootstrapKey,
    });
    try {
      const asBootstrap = api(second, bootstrapKey);
      const user = await asBootstrap(
        'GET',
        `/applications/billing-web/users/azure_saml/${encodeURIComponent(identifier)}`,
      );
      assert.equal(user.status, 200);
      assert.equal(user.body.identifier, identifier);
      assert.equal(user.body.name, 'Ada Lovelace');
      const withOldKey = await api(second, adminKey)('GET', '/applications/billing-web');
      assert.equal(withOldKey.status, 200);
      const keys = await asBootstrap('GET', '/api-keys');
      assert.equal(keys.status, 200);
      assert.equal(keys.body.items.length, 2, 'the first-start key and the bootstrap key, no more');
      assert.ok(
        !second.output().includes(bootstrapKey),
        'the log never contains the bootstrap key',
      );
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });
});
