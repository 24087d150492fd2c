// A SQLite database that cannot take writes, seen over HTTP: the disk is full (max_page_count,
// SQLITE_FULL) or the database is read-only (query_only, SQLITE_READONLY). Writes answer 503
// with a problem that says why, reads keep working, and once the fault is gone writes work
// again without a restart; nothing acknowledged before, during or after is lost.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import {
  buildTestApp,
  call,
  createApplication,
  problemOf,
  TEST_STORE,
  type TestContext,
  userBody,
  userPath,
} from './helpers.js';

const skip = TEST_STORE === 'postgres' ? 'SQLite faults: run in the SQLite pass only' : false;
const WRITE_REFUSED = /cannot accept changes right now \(out of space or read-only\)/;

describe('a SQLite database that cannot take writes, over HTTP', { skip }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-faults-'));
  let ctx: TestContext;
  let connection: Database.Database;
  /** Every user whose write was acknowledged, with the name it was acknowledged with. */
  const acknowledged = new Map<string, string>();

  const createUser = async (identifier: string, name: string, padding = 0) => {
    const response = await call(ctx, 'POST', '/applications/billing-web/users', {
      body: userBody({
        identifier,
        name,
        roles: Array.from({ length: padding }, (_, n) => `${'r'.repeat(60)}${n}`),
      }),
    });
    if (response.statusCode === 201) acknowledged.set(identifier, name);
    return response;
  };

  async function assertNothingLost(): Promise<void> {
    const response = await call(ctx, 'GET', '/applications/billing-web/users?limit=1000');
    assert.equal(response.statusCode, 200);
    const stored = new Map(
      response
        .json<{ items: { identifier: string; name: string }[] }>()
        .items.map((user) => [user.identifier, user.name]),
    );
    for (const [identifier, name] of acknowledged) {
      assert.equal(stored.get(identifier), name, `acknowledged user ${identifier}`);
    }
  }

  const assertWriteRefused = (response: Awaited<ReturnType<typeof call>>) => {
    const problem = problemOf(response, 503);
    assert.match(problem.detail, WRITE_REFUSED);
    assert.equal(problem.type, 'https://tessera.dev/problems/store-unavailable');
    assert.match(String(response.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.doesNotMatch(problem.detail, /SQLITE|sqlite|\.db/);
  };

  before(async () => {
    const store = openSqliteStore({
      path: join(directory, 'tessera.db'),
      onConnection: (database) => (connection = database),
    });
    ctx = await buildTestApp({ store });
    await createApplication(ctx);
    for (let n = 0; n < 20; n += 1)
      assert.equal((await createUser(`u${n}`, `before ${n}`)).statusCode, 201);
  });
  after(async () => {
    await ctx.close();
    rmSync(directory, { recursive: true, force: true });
  });

  describe('disk full', () => {
    let refused: Awaited<ReturnType<typeof call>> | undefined;

    before(() => {
      connection.pragma(
        `max_page_count = ${String(connection.pragma('page_count', { simple: true }))}`,
      );
    });

    it('answers writes that do not fit with 503 and a problem that says why', async () => {
      // Fill what room is left; sooner or later a write does not fit.
      for (let n = 0; n < 500 && refused === undefined; n += 1) {
        const response = await createUser(`full-${n}`, `filling ${n}`, 50);
        if (response.statusCode !== 201) refused = response;
      }
      assert.ok(refused, 'a write was refused once the disk was full');
      assertWriteRefused(refused);
      assertWriteRefused(await createUser('big', 'big', 100));
      assert.equal(acknowledged.has('big'), false);
      const replaced = await call(ctx, 'PUT', userPath('billing-web', 'google_oauth2', 'u1'), {
        body: userBody({
          identifier: 'u1',
          name: 'x',
          roles: Array.from({ length: 100 }, (_, n) => `${'r'.repeat(60)}${n}`),
        }),
      });
      assertWriteRefused(replaced);
    });

    it('keeps serving reads, and authenticates keys', async () => {
      assert.equal((await call(ctx, 'GET', '/applications/billing-web')).statusCode, 200);
      assert.equal(
        (await call(ctx, 'GET', userPath('billing-web', 'google_oauth2', 'u1'))).json().name,
        'before 1',
      );
      problemOf(await call(ctx, 'GET', userPath('billing-web', 'google_oauth2', 'big')), 404);
      await assertNothingLost();
    });

    it('takes writes again once there is room, without a restart', async () => {
      connection.pragma('max_page_count = 1073741823');
      assert.equal((await createUser('big', 'big', 100)).statusCode, 201);
      assert.equal((await createUser('after-full', 'after full')).statusCode, 201);
      await assertNothingLost();
    });
  });

  describe('read-only database', () => {
    before(() => {
      connection.pragma('query_only = 1');
    });

    it('answers every kind of write with 503 and a problem that says why', async () => {
      const user = userPath('billing-web', 'google_oauth2', 'u2');
      assertWriteRefused(await createUser('ro', 'read-only'));
      assertWriteRefused(
        await call(ctx, 'PUT', user, { body: userBody({ identifier: 'u2', name: 'x' }) }),
      );
      assertWriteRefused(await call(ctx, 'PATCH', user, { body: { name: 'x' } }));
      assertWriteRefused(await call(ctx, 'DELETE', user));
      assertWriteRefused(
        await call(ctx, 'PATCH', '/applications/billing-web', { body: { description: 'x' } }),
      );
      assertWriteRefused(
        await call(ctx, 'POST', '/api-keys', { body: { name: 'k', roles: ['users:read'] } }),
      );
    });

    it('keeps serving reads, with keys used for the first time too', async () => {
      // A key's first use would record last_used_at; that write fails and the read is served.
      const key = await (async () => {
        connection.pragma('query_only = 0');
        try {
          return await ctx.createKey({ roles: ['users:read'] });
        } finally {
          connection.pragma('query_only = 1');
        }
      })();
      const response = await call(ctx, 'GET', userPath('billing-web', 'google_oauth2', 'u2'), {
        key,
      });
      assert.equal(response.statusCode, 200);
      assert.equal(response.json().name, 'before 2');
      await assertNothingLost();
    });

    it('takes writes again once the database is writable, without a restart', async () => {
      connection.pragma('query_only = 0');
      assert.equal((await createUser('ro', 'writable again')).statusCode, 201);
      const patched = await call(ctx, 'PATCH', userPath('billing-web', 'google_oauth2', 'u2'), {
        body: { name: 'patched' },
      });
      assert.equal(patched.statusCode, 200);
      acknowledged.set('u2', 'patched');
      await assertNothingLost();
    });
  });
});
