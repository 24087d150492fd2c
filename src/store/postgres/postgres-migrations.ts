import { type Kysely, type Migration, sql } from 'kysely';

// The same versions as sqlite-migrations.ts, with PostgreSQL's DDL. Forward-only: a released
// migration is never edited.
//
// Portability (CockroachDB, YugabyteDB): plain tables, B-tree indexes, no extensions, no
// triggers, no sequences. Keys that are ordered are `text COLLATE "C"`, so ORDER BY and the
// keyset `>` compare bytes, exactly as SQLite's BINARY collation does, and the same data
// pages identically on both stores. JSON values are `text`, not `jsonb`: a stored object
// comes back byte for byte as written (jsonb reorders members and refuses \u0000).
const bytewise = sql`text collate "C"`;

export const postgresMigrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('applications')
        .addColumn('client_id', bytewise, (c) => c.primaryKey().notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('jwt_expiration_in_minutes', 'integer', (c) => c.notNull())
        .addColumn('external_token_validation', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('etag', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('users')
        .addColumn('application', bytewise, (c) =>
          c.notNull().references('applications.client_id').onDelete('cascade'),
        )
        .addColumn('user_key', bytewise, (c) => c.notNull())
        .addColumn('provider', bytewise, (c) => c.notNull())
        .addColumn('identifier', bytewise, (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('avatar', 'text')
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('email_normalized', bytewise, (c) => c.notNull())
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('etag', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('users_pkey', ['application', 'user_key'])
        .execute();
      await db.schema
        .createIndex('users_email')
        .on('users')
        .columns(['application', 'email_normalized', 'user_key'])
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', bytewise, (c) => c.primaryKey().notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_digest', bytewise, (c) => c.notNull().unique())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('applications', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('last_used_at', 'bigint')
        .execute();

      await db.schema
        .createTable('settings')
        .addColumn('name', bytewise, (c) => c.primaryKey().notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0002_signing_keys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', bytewise, (c) => c.primaryKey().notNull())
        .addColumn('generation', 'integer', (c) => c.notNull().unique())
        .addColumn('algorithm', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('activates_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};
