import { sql } from 'kysely';
import { sqlMigrations } from '../sql/migrations.js';

// STRICT tables make SQLite enforce the declared column types, as PostgreSQL does; BINARY,
// SQLite's default collation, is byte order.
export const sqliteMigrations = sqlMigrations({
  key: 'text',
  time: 'integer',
  tableEnd: sql`strict`,
  // Version-4 UUID text from 122 random bits (randomblob is SQLite's CSPRNG).
  randomUuid: sql<string>`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`,
  eventIds: 'autoincrement',
  unlogged: null,
});
