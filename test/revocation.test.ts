// tessera-test: both-stores
// "Revoking a key takes effect on every instance within one second" (docs/api.md). Two instances on one
// database (a running server and `tessera keys revoke`, say; one SQLite file, or one
// PostgreSQL schema in the PostgreSQL pass): the one that did not revoke trusts its cached
// lookup for at most 500 ms of its clock, then refuses the key.

import assert from 'node:assert/strict';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createServices } from '../src/services.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { buildTestApp, call, TEST_STORE, TestClock, type TestContext } from './helpers.js';
import { createTestSchema, dropSchema, openTestPostgresStore } from './postgres.js';

/** Opens one more instance's store on the database `directory` or a new schema names. */
async function sharedDatabase(directory: string) {
  if (TEST_STORE === 'sqlite') {
    const path = join(directory, 'tessera.db');
    return { open: () => Promise.resolve(openSqliteStore({ path })), drop: async () => {} };
  }
  const schema = await createTestSchema();
  return { open: () => openTestPostgresStore({ schema }), drop: () => dropSchema(schema) };
}

describe('revoking a key through another instance', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-revoke-'));
  let database: Awaited<ReturnType<typeof sharedDatabase>>;
  let server: TestContext;
  let other: Store;

  before(async () => {
    database = await sharedDatabase(directory);
    server = await buildTestApp({ store: await database.open(), clock: new TestClock() });
    other = await database.open();
    await other.migrate();
  });

  after(async () => {
    await server.close();
    await other.close();
    await database.drop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('is refused by this instance within one second', async () => {
    const key = await server.createKey({ roles: ['applications:read'] });
    assert.equal((await call(server, 'GET', '/applications', { key })).statusCode, 200);

    const operator = createServices({
      store: other,
      clock: server.clock,
      log: pino({ level: 'silent' }),
    });
    const [record] = (
      await operator.apiKeys.listApiKeys('operator', { includeRevoked: false }, null, 100)
    ).filter((candidate) => candidate.roles.length === 1);
    await operator.apiKeys.revokeApiKey('operator', record!.id, CLI_ORIGIN);

    server.clock.advance(400);
    assert.equal(
      (await call(server, 'GET', '/applications', { key })).statusCode,
      200,
      'still cached',
    );
    server.clock.advance(200);
    const refused = await call(server, 'GET', '/applications', { key });
    assert.equal(refused.statusCode, 401);
  });

  it('sees a key created through the other instance at once', async () => {
    const operator = createServices({
      store: other,
      clock: server.clock,
      log: pino({ level: 'silent' }),
    });
    const issued = await operator.apiKeys.createApiKey(
      'operator',
      {
        name: 'from the CLI',
        roles: ['applications:read'],
        applications: null,
        expiresAt: null,
      },
      CLI_ORIGIN,
    );
    assert.equal(
      (await call(server, 'GET', '/applications', { key: issued.secret })).statusCode,
      200,
    );
  });
});
