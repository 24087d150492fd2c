import { sql } from 'kysely';
import { sqlMigrations } from '../sql/migrations.js';

// STRICT tables make SQLite enforce the declared column types, as PostgreSQL does; BINARY,
// SQLite's default collation, is byte order.
export const sqliteMigrations = sqlMigrations({
  key: 'text',
  time: 'integer',
  tableEnd: sql`strict`,
});
