// The upgrade to migration 0012 (SCIM userNames unique regardless of ASCII case, by a unique
// index) on a database that already holds two such users: it stops with a message that names
// them and says what to do, changes nothing, and goes through once one of them is gone.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import pg from 'pg';
import {
  POSTGRES_URL,
  createTestSchema,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from '../../../test/postgres.js';
import { applicationRecord, userRecord } from '../contract/fixtures.js';
import { DuplicateError, USER_NAME_INDEX } from '../errors.js';
import { postgresMigrations } from '../postgres/postgres-migrations.js';
import { openPostgresStore } from '../postgres/postgres-store.js';
import { sqliteMigrations } from '../sqlite/sqlite-migrations.js';
import { openSqliteStore } from '../sqlite/sqlite-store.js';
import type { Store, UserRecord } from '../store.js';
import { migrateToLatest } from './migrate.js';
import { toApplicationRow, toUserRow } from './rows.js';

const UPGRADE = '0012_scim_user_names';

function before<T>(migrations: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(migrations).filter(([name]) => name < UPGRADE));
}

/** The rows an earlier version wrote: SCIM users Bob and bob in "hr", and others apart. */
const legacyUsers: UserRecord[] = [
  userRecord('hr', 'okta_scim', 'Bob'),
  userRecord('hr', 'okta_scim', 'bob'),
  userRecord('hr', 'okta_scim', 'carol'),
  userRecord('hr', 'google_oauth2', 'dee'),
  userRecord('hr', 'google_oauth2', 'DEE'),
  userRecord('crm', 'okta_scim', 'ERIN'),
  userRecord('crm', 'okta_scim', 'erin'),
];

/**
 * An insert of the columns of `row` that the table has: the rows an earlier version wrote have
 * none of the columns later migrations added.
 */
function insertStatement(
  table: string,
  row: Record<string, unknown>,
  numbered: boolean,
  existing: ReadonlySet<string>,
) {
  const columns = Object.keys(row).filter((column) => existing.has(column));
  const slots = columns.map((_, index) => (numbered ? `$${index + 1}` : '?'));
  return {
    text: `insert into ${table} (${columns.join(', ')}) values (${slots.join(', ')})`,
    values: columns.map((column) => {
      const value = row[column];
      return typeof value === 'boolean' ? Number(value) : value;
    }),
  };
}

/** The refusal, its store unchanged, the fix, the upgrade, then the rule at work. */
async function checkUpgrade(options: {
  open: () => Store;
  run: (text: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;
}): Promise<void> {
  const refused = options.open();
  try {
    await assert.rejects(refused.migrate(), (error: Error) => {
      assert.match(error.message, /^migration 0012_scim_user_names failed: 2 set\(s\) of users/);
      assert.match(error.message, /"hr"\/okta_scim\/"Bob" \(id id:okta_scim:Bob\)/);
      assert.match(error.message, /"hr"\/okta_scim\/"bob"/);
      assert.match(error.message, /"crm"\/okta_scim\/"ERIN"/);
      assert.doesNotMatch(error.message, /google_oauth2|carol/);
      assert.match(error.message, /Nothing was changed/);
      assert.match(error.message, /rename \(SCIM PATCH of userName\) or delete all but one/);
      return true;
    });
  } finally {
    await refused.close();
  }
  const applied = await options.run(`select name from kysely_migration where name = '${UPGRADE}'`);
  assert.deepEqual(applied, [], 'the refused migration is not recorded');
  // The operator deletes one of each set (with the version that wrote the database) …
  await options.run(`delete from users where id in ('id:okta_scim:bob', 'id:okta_scim:erin')`);
  // … and the upgrade goes through.
  const store = options.open();
  try {
    await store.migrate();
    const isClash = (error: unknown) =>
      error instanceof DuplicateError && error.index === USER_NAME_INDEX;
    await assert.rejects(
      store.users.insertUser(userRecord('hr', 'okta_scim', 'BOB', { id: 'new-1' }), []),
      isClash,
    );
    await assert.rejects(
      store.users.insertUser(userRecord('crm', 'okta_scim', 'Erin', { id: 'new-2' }), []),
      isClash,
    );
    await store.users.insertUser(userRecord('hr', 'google_oauth2', 'Dee', { id: 'new-3' }), []);
  } finally {
    await store.close();
  }
}

describe(`upgrading to ${UPGRADE} with users apart only by case`, () => {
  it('SQLite: refuses, names them, changes nothing; goes through once they are apart', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-upgrade-'));
    const path = join(directory, 'tessera.db');
    try {
      const database = new Database(path);
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
      await migrateToLatest(db, before(sqliteMigrations));
      const sqliteColumns = (table: string) =>
        new Set(
          (database.pragma(`table_info(${table})`) as { name: string }[]).map(
            (column) => column.name,
          ),
        );
      for (const row of [
        toApplicationRow(applicationRecord('hr', { scimProvider: 'okta_scim' })),
        toApplicationRow(applicationRecord('crm', { scimProvider: 'okta_scim' })),
      ]) {
        const { text, values } = insertStatement(
          'applications',
          row,
          false,
          sqliteColumns('applications'),
        );
        database.prepare(text).run(...values);
      }
      for (const user of legacyUsers) {
        const { text, values } = insertStatement(
          'users',
          toUserRow(user),
          false,
          sqliteColumns('users'),
        );
        database.prepare(text).run(...values);
      }
      await db.destroy();
      await checkUpgrade({
        open: () => openSqliteStore({ path }),
        run: (text) => {
          const connection = new Database(path);
          try {
            const statement = connection.prepare(text);
            return Promise.resolve(
              statement.reader
                ? (statement.all() as Record<string, unknown>[])
                : (statement.run(), []),
            );
          } finally {
            connection.close();
          }
        },
      });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  describe('PostgreSQL', async () => {
    const skip = await skipWithoutPostgres();
    const client = new pg.Client(POSTGRES_URL);
    if (skip === false) await client.connect();
    after(() => (skip === false ? client.end() : undefined));

    it(
      'refuses, names them, changes nothing; goes through once they are apart',
      { skip },
      async () => {
        const schema = await createTestSchema();
        try {
          const earlier = await openTestPostgresStore({
            schema,
            migrations: before(postgresMigrations),
          });
          await earlier.migrate();
          await earlier.close();
          const run = async (text: string, values: unknown[] = []) => {
            await client.query(`set search_path to ${schema}`);
            return (await client.query(text, values)).rows as Record<string, unknown>[];
          };
          const pgColumns = async (table: string) =>
            new Set(
              (
                await run(
                  'select column_name from information_schema.columns where table_schema = $1 and table_name = $2',
                  [schema, table],
                )
              ).map((column) => String(column.column_name)),
            );
          for (const row of [
            toApplicationRow(applicationRecord('hr', { scimProvider: 'okta_scim' })),
            toApplicationRow(applicationRecord('crm', { scimProvider: 'okta_scim' })),
          ]) {
            const { text, values } = insertStatement(
              'applications',
              row,
              true,
              await pgColumns('applications'),
            );
            await run(text, values);
          }
          for (const user of legacyUsers) {
            const { text, values } = insertStatement(
              'users',
              toUserRow(user),
              true,
              await pgColumns('users'),
            );
            await run(text, values);
          }
          await checkUpgrade({ open: () => openPostgresStore({ url: POSTGRES_URL, schema }), run });
        } finally {
          await dropSchema(schema);
        }
      },
    );
  });
});
