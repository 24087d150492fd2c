// SPEC §5: "Revocation takes effect on every instance within 1 second." Two instances on one
// SQLite file (a running server and `tessera keys revoke`, say): the one that did not revoke
// trusts its cached lookup for at most 500 ms of its clock, then refuses the key.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createServices } from '../src/app.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { buildTestApp, call, TestClock, type TestContext } from './helpers.js';

describe('revoking a key through another instance', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-revoke-'));
  const path = join(directory, 'tessera.db');
  let server: TestContext;
  let other: Store;

  before(async () => {
    server = await buildTestApp({ store: openSqliteStore({ path }), clock: new TestClock() });
    other = openSqliteStore({ path });
    await other.migrate();
  });

  after(async () => {
    await server.close();
    await other.close();
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
    const [record] = (await operator.apiKeys.listApiKeys('operator', null, 100)).filter(
      (candidate) => candidate.roles.length === 1,
    );
    await operator.apiKeys.revokeApiKey('operator', record!.id);

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
    const issued = await operator.apiKeys.createApiKey('operator', {
      name: 'from the CLI',
      roles: ['applications:read'],
      applications: null,
      expiresAt: null,
    });
    assert.equal(
      (await call(server, 'GET', '/applications', { key: issued.secret })).statusCode,
      200,
    );
  });
});
