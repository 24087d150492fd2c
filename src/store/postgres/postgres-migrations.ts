import { sql } from 'kysely';
import { sqlMigrations } from '../sql/migrations.js';

// Keys that are ordered or compared are `text COLLATE "C"`, so ORDER BY and the keyset `>`
// compare bytes exactly as SQLite's BINARY collation does, whatever the server's locale, and
// the same data pages identically on both stores.
export const postgresMigrations = sqlMigrations({
  key: sql`text collate "C"`,
  time: 'bigint',
  tableEnd: null,
  // Built into PostgreSQL 13 and later (and CockroachDB, YugabyteDB): no extension needed.
  randomUuid: sql<string>`gen_random_uuid()::text`,
  eventIds: 'sequence-row',
  unlogged: sql`unlogged`,
});
