import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { DuplicateError, StoreUnavailableError } from '../errors.js';
import { describeStoreContract } from '../store.contract.js';
import type { ApplicationRecord, Store } from '../store.js';
import { SQLITE_BUSY_SPIN_MS, openSqliteStore } from './sqlite-store.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-sqlite-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

describeStoreContract('SQLite (in memory)', () =>
  Promise.resolve(openSqliteStore({ path: ':memory:' })),
);

const contractDirectory = temporaryDirectory();
let contractFiles = 0;
describeStoreContract('SQLite (file)', () =>
  Promise.resolve(
    openSqliteStore({ path: join(contractDirectory, `store-${++contractFiles}.sqlite`) }),
  ),
);

function application(clientId: string, overrides: Partial<ApplicationRecord> = {}) {
  return {
    clientId,
    displayName: clientId,
    description: '',
    mode: 'internal',
    jwtExpirationInMinutes: 60,
    externalTokenValidation: null,
    scimProvider: null,
    authorization: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `${clientId}-1`,
    ...overrides,
  } satisfies ApplicationRecord;
}

/** Each store's own connection, as handed out by openSqliteStore's onConnection hook. */
const connections = new WeakMap<Store, Database.Database>();

/** Runs a PRAGMA on the store's own connection (synchronous, query_only, max_page_count are per connection). */
function pragmaOnStoreConnection(store: Store, pragma: string): unknown {
  const connection = connections.get(store);
  assert.ok(connection, 'the store was opened through open()');
  return connection.pragma(pragma, { simple: true });
}

describe('openSqliteStore on a file', () => {
  const directory = temporaryDirectory();
  let files = 0;
  let path: string;
  const opened: Store[] = [];

  function open(busyTimeoutMs?: number): Store {
    let connection: Database.Database | undefined;
    const store = openSqliteStore({
      path,
      ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }),
      onConnection: (database) => (connection = database),
    });
    connections.set(store, connection!);
    opened.push(store);
    return store;
  }

  beforeEach(() => {
    path = join(directory, `file-${++files}.sqlite`);
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('keeps committed data across close and reopen', async () => {
    const first = open();
    await first.migrate();
    const stored = application('billing', { externalTokenValidation: { b: [1], a: 'ü 😀' } });
    await first.applications.insertApplication(stored, []);
    assert.equal(await first.settings.getOrCreateSetting('cursor_key', 'k1'), 'k1');
    await first.close();

    const second = open();
    await second.migrate();
    assert.deepEqual(await second.applications.findApplication('billing'), stored);
    assert.equal(await second.settings.getOrCreateSetting('cursor_key', 'k2'), 'k1');
  });

  it('creates missing parent directories, private to the owner', async () => {
    path = join(directory, 'nested', 'deeper', 'tessera.sqlite');
    const store = open();
    await store.migrate();
    for (const created of [join(directory, 'nested'), join(directory, 'nested', 'deeper')]) {
      assert.equal(statSync(created).mode & 0o777, 0o700, created);
    }
  });

  it('creates the database, -wal and -shm files 0600 in a directory that already exists', async () => {
    // `mkdir data` or a container volume: a 0755 directory and the usual umask of 022.
    const shared = join(directory, 'existing');
    mkdirSync(shared, { mode: 0o755 });
    path = join(shared, 'tessera.db');
    const umask = process.umask(0o022);
    try {
      const store = open();
      await store.migrate();
      await store.settings.putSetting('written', 'yes');
    } finally {
      process.umask(umask);
    }
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      assert.equal(statSync(file).mode & 0o777, 0o600, file);
    }
  });

  it('narrows database files an older version left readable by others', async () => {
    const store = open();
    await store.migrate();
    await store.close();
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      if (existsSync(file)) chmodSync(file, 0o644);
    }
    await open().migrate();
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      assert.equal(statSync(file).mode & 0o777, 0o600, file);
    }
  });

  it('with mustExist, opens an existing file and creates neither file nor directory', async () => {
    await open().migrate();
    const existing = openSqliteStore({ path, mustExist: true });
    await existing.close();
    const missing = join(directory, 'absent', 'x.db');
    assert.throws(() => openSqliteStore({ path: missing, mustExist: true }));
    assert.equal(existsSync(join(directory, 'absent')), false);
  });

  it('puts the database file in WAL mode', async () => {
    await open().migrate();
    const direct = new Database(path, { readonly: true });
    try {
      assert.equal(direct.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      direct.close();
    }
  });

  it('runs its connection with synchronous=FULL, foreign keys on and a busy handler that never blocks long', async () => {
    const store = open(50);
    assert.equal(pragmaOnStoreConnection(store, 'synchronous'), 2);
    assert.equal(pragmaOnStoreConnection(store, 'foreign_keys'), 1);
    assert.equal(pragmaOnStoreConnection(store, 'busy_timeout'), SQLITE_BUSY_SPIN_MS);
    assert.equal(pragmaOnStoreConnection(open(), 'busy_timeout'), SQLITE_BUSY_SPIN_MS);
  });

  it('waits for the write lock of another process without blocking reads, then writes', async () => {
    const store = open(60_000);
    await store.migrate();
    await store.applications.insertApplication(application('before'), []);
    const other = new Database(path);
    try {
      other.exec('BEGIN IMMEDIATE');
      let settled = false;
      const waiting = store.applications
        .insertApplication(application('waited'), [])
        .finally(() => {
          settled = true;
        });
      // Several event-loop turns and timer ticks pass, reads are answered meanwhile.
      for (let turn = 0; turn < 5; turn++) {
        await new Promise((resolve) => setTimeout(resolve, 15));
        assert.deepEqual(await store.applications.findApplication('before'), application('before'));
      }
      assert.equal(settled, false, 'the write is still waiting for the lock');
      other.exec('ROLLBACK');
      await waiting;
    } finally {
      other.close();
    }
    assert.deepEqual(await store.applications.findApplication('waited'), application('waited'));
  });

  it('refuses a path it cannot open with StoreUnavailableError', () => {
    mkdirSync(path);
    assert.throws(
      () => openSqliteStore({ path }),
      (error) => error instanceof StoreUnavailableError && error.scope === 'all',
    );
  });

  it('refuses writes while another connection holds the write lock, then recovers', async () => {
    const store = open(50);
    await store.migrate();
    await store.applications.insertApplication(application('before'), []);
    const other = new Database(path);
    try {
      other.exec('BEGIN IMMEDIATE');
      await assert.rejects(
        store.applications.insertApplication(application('blocked'), []),
        (error) => error instanceof StoreUnavailableError && error.scope === 'all',
      );
      // WAL: readers are not blocked by the writer.
      assert.deepEqual(await store.applications.findApplication('before'), application('before'));
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    assert.equal(await store.applications.findApplication('blocked'), undefined);
    await store.applications.insertApplication(application('blocked'), []);
    assert.deepEqual(await store.applications.findApplication('blocked'), application('blocked'));
  });

  it('refuses writes that do not fit on a full disk, keeps reading, and recovers', async () => {
    const store = open();
    await store.migrate();
    for (const id of ['a', 'b', 'c'])
      await store.applications.insertApplication(application(id), []);
    const pages = pragmaOnStoreConnection(store, 'page_count');
    pragmaOnStoreConnection(store, `max_page_count = ${String(pages)}`);

    const big = application('big', { description: 'x'.repeat(2000).repeat(100) });
    const batch = [application('small-1'), big, application('small-2')];
    const outcomes = await Promise.allSettled(
      batch.map((record) => store.applications.insertApplication(record, [])),
    );
    const bigOutcome = outcomes[1]!;
    assert.equal(bigOutcome.status, 'rejected');
    assert.ok(
      bigOutcome.reason instanceof StoreUnavailableError && bigOutcome.reason.scope === 'writes',
      String(bigOutcome.reason),
    );
    // Whatever SQLite rolled back: a resolved write is stored, a refused one is not.
    for (const [index, record] of batch.entries()) {
      const found = await store.applications.findApplication(record.clientId);
      assert.equal(found !== undefined, outcomes[index]!.status === 'fulfilled', record.clientId);
    }
    assert.deepEqual(await store.applications.findApplication('a'), application('a'));
    await store.ping();

    pragmaOnStoreConnection(store, 'max_page_count = 1073741823');
    await store.applications.insertApplication(big, []);
    assert.deepEqual(await store.applications.findApplication('big'), big);
  });

  it('refuses writes on a read-only connection, keeps reading, and recovers', async () => {
    const store = open();
    await store.migrate();
    await store.applications.insertApplication(application('a'), []);
    pragmaOnStoreConnection(store, 'query_only = 1');
    await assert.rejects(
      store.applications.insertApplication(application('b'), []),
      (error) => error instanceof StoreUnavailableError && error.scope === 'writes',
    );
    await assert.rejects(
      store.settings.getOrCreateSetting('cursor_key', 'k'),
      (error) => error instanceof StoreUnavailableError && error.scope === 'writes',
    );
    assert.deepEqual(await store.applications.findApplication('a'), application('a'));
    await store.ping();
    pragmaOnStoreConnection(store, 'query_only = 0');
    await store.applications.insertApplication(application('b'), []);
    assert.equal(await store.applications.countApplications({ clientIds: null }), 2);
  });

  describe('two instances on one file', () => {
    it('both migrate when started together', async () => {
      const [a, b] = [open(), open()];
      await Promise.all([a.migrate(), b.migrate()]);
      await a.applications.insertApplication(application('shared'), []);
      assert.deepEqual(await b.applications.findApplication('shared'), application('shared'));
    });

    it('let exactly one of their racing insertFirstApiKey calls insert', async () => {
      const [a, b] = [open(), open()];
      await a.migrate();
      await b.migrate();
      const key = (id: string) => ({
        id,
        name: id,
        secretDigest: `digest-${id}`,
        roles: ['keys:write'],
        applications: null,
        createdAt: T0,
        updatedAt: T0,
        expiresAt: null,
        lastUsedAt: null,
        previousSecretDigest: null,
        previousExpiresAt: null,
        revokedAt: null,
      });
      const outcomes = await Promise.all([
        a.apiKeys.insertFirstApiKey(key('from-a'), []),
        b.apiKeys.insertFirstApiKey(key('from-b'), []),
        a.apiKeys.insertFirstApiKey(key('from-a-2'), []),
        b.apiKeys.insertFirstApiKey(key('from-b-2'), []),
      ]);
      assert.equal(outcomes.filter(Boolean).length, 1);
      assert.equal(await a.apiKeys.countApiKeys({ includeRevoked: true }), 1);
      assert.equal(await b.apiKeys.countApiKeys({ includeRevoked: true }), 1);
    });

    it('agree on a setting both create at once', async () => {
      const [a, b] = [open(), open()];
      await a.migrate();
      await b.migrate();
      const values = await Promise.all([
        a.settings.getOrCreateSetting('cursor_key', 'from-a'),
        b.settings.getOrCreateSetting('cursor_key', 'from-b'),
      ]);
      assert.equal(values[0], values[1]);
    });

    it('see each other’s unique keys', async () => {
      const [a, b] = [open(), open()];
      await a.migrate();
      await b.migrate();
      await a.applications.insertApplication(application('billing'), []);
      await assert.rejects(
        b.applications.insertApplication(application('billing'), []),
        DuplicateError,
      );
    });
  });
});
