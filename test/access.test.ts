import { strict as assert } from 'node:assert';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { ADMIN_KEY_FILE, prepareAccess } from '../src/access.js';
import { digestSecret } from '../src/modules/api-keys/api-key-authenticator.service.js';
import { ROLES } from '../src/roles.js';
import { createServices, type Services } from '../src/services.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { START_TIME, TestClock } from './helpers.js';

const BOOTSTRAP_SECRET = 'bootstrap-secret-0123456789-abcdefghijklmnop';

describe('start-up access (prepareAccess)', () => {
  let dataDir: string;
  let store: Store;
  let services: Services;
  let clock: TestClock;
  let logLines: string[];
  let log: pino.Logger;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tessera-access-'));
    store = openSqliteStore({ path: ':memory:' });
    await store.migrate();
    clock = new TestClock();
    logLines = [];
    log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          logLines.push(chunk.toString('utf8'));
          callback();
        },
      }),
    );
    services = createServices({ store, clock, log });
  });
  afterEach(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const prepare = (bootstrapApiKey: string | null) =>
    prepareAccess({ apiKeys: services.apiKeys, bootstrapApiKey, dataDir, log });

  describe('without keys and without a bootstrap key', () => {
    it('writes an all-roles key to <dataDir>/admin-api-key with mode 0600', async () => {
      await prepare(null);
      const path = join(dataDir, ADMIN_KEY_FILE);
      assert.equal(ADMIN_KEY_FILE, 'admin-api-key');
      assert.equal(statSync(path).mode & 0o777, 0o600);
      const secret = readFileSync(path, 'utf8').trim();
      assert.match(secret, /^tsr_[A-Za-z0-9_-]{43}$/);
      const key = await services.authenticator.authenticate(secret);
      assert.ok(key, 'the secret in the file authenticates');
      assert.deepEqual(key.roles, [...ROLES]);
      assert.equal(key.applications, null);
      assert.equal(key.expiresAt, null);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      assert.deepEqual(readdirSync(dataDir), [ADMIN_KEY_FILE]);
    });

    it('logs the path of the file but never the secret', async () => {
      await prepare(null);
      const path = join(dataDir, ADMIN_KEY_FILE);
      const secret = readFileSync(path, 'utf8').trim();
      const logged = logLines.join('');
      assert.ok(logged.includes(JSON.stringify(path).slice(1, -1)), logged);
      assert.ok(!logged.includes(secret));
      assert.ok(!logged.includes(secret.slice(4)));
    });

    it('creates the data directory when it does not exist yet', async () => {
      const nested = join(dataDir, 'nested', 'data');
      await prepareAccess({
        apiKeys: services.apiKeys,
        bootstrapApiKey: null,
        dataDir: nested,
        log,
      });
      assert.equal(statSync(join(nested, ADMIN_KEY_FILE)).mode & 0o777, 0o600);
    });

    it('creates nothing on a second call and leaves the file alone', async () => {
      await prepare(null);
      const path = join(dataDir, ADMIN_KEY_FILE);
      const content = readFileSync(path, 'utf8');
      const modified = statSync(path).mtimeMs;
      clock.advance(60_000);
      await prepare(null);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      assert.equal(readFileSync(path, 'utf8'), content);
      assert.equal(statSync(path).mtimeMs, modified);
      assert.deepEqual(readdirSync(dataDir), [ADMIN_KEY_FILE]);
    });
  });

  it('issues no key when its file cannot be written, so the next start can', async () => {
    const notADirectory = join(dataDir, 'occupied');
    writeFileSync(notADirectory, 'a file where the data directory should be');
    await assert.rejects(
      prepareAccess({
        apiKeys: services.apiKeys,
        bootstrapApiKey: null,
        dataDir: notADirectory,
        log,
      }),
    );
    assert.equal(
      await store.apiKeys.countApiKeys({ includeRevoked: true }),
      0,
      'no key nobody can read',
    );
    await prepare(null);
    const secret = readFileSync(join(dataDir, ADMIN_KEY_FILE), 'utf8').trim();
    assert.ok(await services.authenticator.authenticate(secret));
    assert.deepEqual(
      readdirSync(dataDir).filter((name) => name.endsWith('.tmp')),
      [],
      'no staged file is left behind',
    );
  });

  it('writes no file when the store already holds a key', async () => {
    await services.apiKeys.createApiKey(
      'operator',
      {
        name: 'existing',
        roles: ['users:read'],
        applications: null,
        expiresAt: null,
      },
      CLI_ORIGIN,
    );
    await prepare(null);
    assert.equal(existsSync(join(dataDir, ADMIN_KEY_FILE)), false);
    assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
  });

  describe('with a bootstrap key', () => {
    it('creates a key with exactly that secret and all roles, and writes no file', async () => {
      await prepare(BOOTSTRAP_SECRET);
      const key = await services.authenticator.authenticate(BOOTSTRAP_SECRET);
      assert.ok(key, 'the bootstrap secret authenticates');
      assert.deepEqual(key.roles, [...ROLES]);
      assert.equal(key.applications, null);
      assert.equal(key.expiresAt, null);
      assert.equal(key.secretDigest, digestSecret(BOOTSTRAP_SECRET));
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      assert.deepEqual(readdirSync(dataDir), []);
      assert.ok(!logLines.join('').includes(BOOTSTRAP_SECRET));
    });

    it('is idempotent over repeated calls', async () => {
      for (let call = 0; call < 3; call += 1) {
        await prepare(BOOTSTRAP_SECRET);
        clock.advance(1_000);
      }
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      const key = await store.apiKeys.findApiKeyByDigest(digestSecret(BOOTSTRAP_SECRET));
      assert.equal(key?.createdAt, START_TIME);
      assert.equal(key?.updatedAt, START_TIME);
    });

    it('also exists beside keys created before it, and issues no first key', async () => {
      await services.apiKeys.createApiKey(
        'operator',
        {
          name: 'existing',
          roles: ['users:read'],
          applications: null,
          expiresAt: null,
        },
        CLI_ORIGIN,
      );
      await prepare(BOOTSTRAP_SECRET);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 2);
      assert.ok(await store.apiKeys.findApiKeyByDigest(digestSecret(BOOTSTRAP_SECRET)));
      assert.deepEqual(readdirSync(dataDir), []);
    });

    it('restores all roles and no restriction when the stored key was narrowed', async () => {
      await prepare(BOOTSTRAP_SECRET);
      const stored = await store.apiKeys.findApiKeyByDigest(digestSecret(BOOTSTRAP_SECRET));
      assert.ok(stored);
      await store.apiKeys.updateApiKeyGrants(
        stored.id,
        {
          roles: ['users:read'],
          applications: ['a'],
          updatedAt: START_TIME,
        },
        [],
      );
      clock.advance(5_000);
      await prepare(BOOTSTRAP_SECRET);
      const restored = await store.apiKeys.findApiKey(stored.id);
      assert.deepEqual(restored?.roles, [...ROLES]);
      assert.equal(restored?.applications, null);
      assert.equal(restored?.expiresAt, null);
      assert.equal(restored?.updatedAt, START_TIME + 5_000);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
    });

    it('restores no expiry when the stored key was given one', async () => {
      const id = '01900000-0000-7000-8000-0000000000b0';
      await store.apiKeys.insertApiKey(
        {
          id,
          name: 'bootstrap, narrowed by hand',
          secretDigest: digestSecret(BOOTSTRAP_SECRET),
          roles: ['keys:read'],
          applications: ['a', 'b'],
          createdAt: START_TIME,
          updatedAt: START_TIME,
          expiresAt: START_TIME + 60_000,
          lastUsedAt: null,
          previousSecretDigest: null,
          previousExpiresAt: null,
          revokedAt: null,
        },
        [],
      );
      await prepare(BOOTSTRAP_SECRET);
      const restored = await store.apiKeys.findApiKey(id);
      assert.deepEqual(restored?.roles, [...ROLES]);
      assert.equal(restored?.applications, null);
      assert.equal(restored?.expiresAt, null);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      clock.advance(120_000);
      const key = await services.authenticator.authenticate(BOOTSTRAP_SECRET);
      assert.equal(key?.id, id);
    });

    it('revokes the key of the previous value when the variable changes', async () => {
      const rotated = 'rotated-bootstrap-secret-0123456789-abcdefgh';
      const other = await services.apiKeys.createApiKey(
        'operator',
        {
          name: 'unrelated',
          roles: ['users:read'],
          applications: null,
          expiresAt: null,
        },
        CLI_ORIGIN,
      );
      await prepare(BOOTSTRAP_SECRET);
      await prepare(rotated);
      assert.equal(await services.authenticator.authenticate(BOOTSTRAP_SECRET), undefined);
      assert.deepEqual((await services.authenticator.authenticate(rotated))?.roles, [...ROLES]);
      assert.ok(await services.authenticator.authenticate(other.secret), 'other keys stay');
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: false }), 2);
      assert.equal(await store.apiKeys.countApiKeys({ includeRevoked: true }), 3, 'it is kept');
      assert.ok(logLines.some((line) => line.includes('revoked the key of its previous value')));
      assert.ok(
        !logLines.some((line) => line.includes(rotated) || line.includes(BOOTSTRAP_SECRET)),
      );

      await prepare(rotated);
      assert.equal(
        await store.apiKeys.countApiKeys({ includeRevoked: false }),
        2,
        'a restart with the same value changes nothing',
      );
    });
  });
});
