// tessera-test: both-stores
// A database that cannot take writes, seen over HTTP: the disk is full or the database is
// read-only. Writes answer 503 with a problem that says why, reads keep working, and once the
// fault is gone writes work again without a restart; nothing acknowledged before, during or
// after is lost.
//
// SQLite (the SQLite pass): a full disk is max_page_count on the store's connection
// (SQLITE_FULL), read-only is query_only (SQLITE_READONLY). PostgreSQL (the PostgreSQL pass):
// triggers on every table of the store's schema raise disk_full (53100) or
// read_only_sql_transaction (25006), what a full volume or a standby answers.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import pg from 'pg';
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
import { openTestPostgresStore, POSTGRES_URL } from './postgres.js';

const WRITE_REFUSED = /cannot accept changes right now \(out of space or read-only\)/;
type Fault = 'disk full' | 'read-only';

/** How to stage the faults on one store. */
interface Faults {
  open(): Promise<TestContext>;
  begin(fault: Fault): Promise<void>;
  end(fault: Fault): Promise<void>;
  close(): Promise<void>;
}

function sqliteFaults(): Faults {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-faults-'));
  let connection: Database.Database;
  return {
    async open() {
      const store = openSqliteStore({
        path: join(directory, 'tessera.db'),
        onConnection: (database) => (connection = database),
      });
      return buildTestApp({ store });
    },
    async begin(fault) {
      if (fault === 'read-only') connection.pragma('query_only = 1');
      else
        connection.pragma(`max_page_count = ${connection.pragma('page_count', { simple: true })}`);
    },
    async end(fault) {
      if (fault === 'read-only') connection.pragma('query_only = 0');
      else connection.pragma('max_page_count = 1073741823');
    },
    async close() {
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function postgresFaults(): Faults {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  let schema = '';
  let tables: string[] = [];
  return {
    async open() {
      const store = await openTestPostgresStore();
      schema = store.schema;
      const ctx = await buildTestApp({ store });
      await admin.connect();
      tables = (
        await admin.query<{ table_name: string }>(
          `select table_name from information_schema.tables
            where table_schema = $1 and table_name not like 'kysely%'`,
          [schema],
        )
      ).rows.map((row) => row.table_name);
      await admin.query(
        `create function ${schema}.refuse_writes() returns trigger language plpgsql as $$
           begin raise exception 'writes refused (test)' using errcode = tg_argv[0]; end $$`,
      );
      return ctx;
    },
    async begin(fault) {
      const code = fault === 'read-only' ? '25006' : '53100';
      for (const table of tables) {
        await admin.query(
          `create trigger refuse_writes before insert or update or delete on ${schema}.${table}
             for each statement execute function ${schema}.refuse_writes('${code}')`,
        );
      }
    },
    async end() {
      for (const table of tables) {
        await admin.query(`drop trigger refuse_writes on ${schema}.${table}`);
      }
    },
    async close() {
      await admin.end();
    },
  };
}

const faults = TEST_STORE === 'postgres' ? postgresFaults() : sqliteFaults();

describe(`a ${TEST_STORE === 'postgres' ? 'PostgreSQL' : 'SQLite'} database that cannot take writes, over HTTP`, () => {
  let ctx: TestContext;
  /** Every user whose write was acknowledged, with the name it was acknowledged with. */
  const acknowledged = new Map<string, string>();
  const padding = (count: number) =>
    Array.from({ length: count }, (_, n) => `${'r'.repeat(60)}${n}`);

  const createUser = async (identifier: string, name: string, roles = 0) => {
    const response = await call(ctx, 'POST', '/applications/billing-web/users', {
      body: userBody({ identifier, name, roles: padding(roles) }),
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
    assert.doesNotMatch(problem.detail, /SQLITE|sqlite|\.db|refused \(test\)|53100|25006/);
  };

  before(async () => {
    ctx = await faults.open();
    await createApplication(ctx);
    for (let n = 0; n < 20; n += 1) {
      assert.equal((await createUser(`u${n}`, `before ${n}`)).statusCode, 201);
    }
  });
  after(async () => {
    await ctx.close();
    await faults.close();
  });

  for (const fault of ['disk full', 'read-only'] as const) {
    describe(fault, () => {
      const tag = fault === 'disk full' ? 'full' : 'ro';
      before(() => faults.begin(fault));

      it('answers writes with 503 and a problem that says why', async () => {
        // Fill what room is left (a full disk may still take small writes); sooner or later a
        // write is refused.
        let refused: Awaited<ReturnType<typeof call>> | undefined;
        for (let n = 0; n < 500 && refused === undefined; n += 1) {
          const response = await createUser(`${tag}-${n}`, `filling ${n}`, 50);
          if (response.statusCode !== 201) refused = response;
        }
        assert.ok(refused, 'a write was refused');
        assertWriteRefused(refused);
        assertWriteRefused(await createUser(`${tag}-big`, 'big', 100));
        const user = userPath('billing-web', 'google_oauth2', 'u2');
        const big = userBody({ identifier: 'u2', name: 'x', roles: padding(100) });
        assertWriteRefused(await call(ctx, 'PUT', user, { body: big }));
        assertWriteRefused(await call(ctx, 'PATCH', user, { body: { roles: padding(100) } }));
        if (fault === 'read-only') {
          // (On a full disk, small changes may still fit in place.)
          const application = { description: 'changed while read-only' };
          assertWriteRefused(
            await call(ctx, 'PATCH', '/applications/billing-web', { body: application }),
          );
          assertWriteRefused(await call(ctx, 'DELETE', user));
          const key = { name: 'k', roles: ['users:read'] };
          assertWriteRefused(await call(ctx, 'POST', '/api-keys', { body: key }));
        }
      });

      it('keeps serving reads, and authenticates keys', async () => {
        assert.equal((await call(ctx, 'GET', '/applications/billing-web')).statusCode, 200);
        const user = await call(ctx, 'GET', userPath('billing-web', 'google_oauth2', 'u2'));
        assert.equal(user.json().name, 'before 2');
        const missing = userPath('billing-web', 'google_oauth2', `${tag}-big`);
        problemOf(await call(ctx, 'GET', missing), 404);
        await assertNothingLost();
      });

      it('takes writes again once the fault is gone, without a restart', async () => {
        await faults.end(fault);
        assert.equal((await createUser(`${tag}-big`, 'big', 100)).statusCode, 201);
        assert.equal((await createUser(`after-${tag}`, `after ${fault}`)).statusCode, 201);
        const patched = await call(ctx, 'PATCH', userPath('billing-web', 'google_oauth2', 'u3'), {
          body: { name: `patched after ${fault}` },
        });
        assert.equal(patched.statusCode, 200);
        acknowledged.set('u3', `patched after ${fault}`);
        await assertNothingLost();
      });
    });
  }
});
