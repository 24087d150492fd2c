import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { sqliteMigrations } from '../sqlite/sqlite-migrations.js';
import { migrateToLatest } from './migrate.js';

describe('migrateToLatest', () => {
  it('applies a migration released after a later-numbered one, as it lands', async () => {
    const db = new Kysely<unknown>({
      dialect: new SqliteDialect({ database: new Database(':memory:') }),
    });
    try {
      const names = Object.keys(sqliteMigrations).sort();
      const security = names.find((name) => name.startsWith('0003'))!;
      // A database migrated by a build that had every migration but 0003 …
      const without = Object.fromEntries(
        names.filter((name) => name !== security).map((name) => [name, sqliteMigrations[name]!]),
      );
      await migrateToLatest(db, without);
      // … is migrated by the build that adds it.
      await migrateToLatest(db, sqliteMigrations);
      const applied = await sql<{
        name: string;
      }>`select name from kysely_migration order by name`.execute(db);
      assert.deepEqual(
        applied.rows.map((row) => row.name),
        names,
      );
      const columns = await sql<{
        name: string;
      }>`select name from pragma_table_info('api_keys')`.execute(db);
      assert.ok(columns.rows.some((column) => column.name === 'revoked_at'));
    } finally {
      await db.destroy();
    }
  });
});
