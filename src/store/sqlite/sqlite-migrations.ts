import { type Kysely, type Migration, sql } from 'kysely';

// Forward-only, versioned. A released migration is never edited: add a new one.
// STRICT tables make SQLite enforce the declared column types, as PostgreSQL does.
export const sqliteMigrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('applications')
        .addColumn('client_id', 'text', (c) => c.primaryKey().notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('jwt_expiration_in_minutes', 'integer', (c) => c.notNull())
        .addColumn('external_token_validation', 'text')
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addColumn('etag', 'text', (c) => c.notNull())
        .modifyEnd(sql`strict`)
        .execute();

      await db.schema
        .createTable('users')
        .addColumn('application', 'text', (c) =>
          c.notNull().references('applications.client_id').onDelete('cascade'),
        )
        .addColumn('user_key', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('identifier', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('avatar', 'text')
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('email_normalized', 'text', (c) => c.notNull())
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addColumn('etag', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('users_pkey', ['application', 'user_key'])
        .modifyEnd(sql`strict`)
        .execute();
      await db.schema
        .createIndex('users_email')
        .on('users')
        .columns(['application', 'email_normalized', 'user_key'])
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey().notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_digest', 'text', (c) => c.notNull().unique())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('applications', 'text')
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addColumn('expires_at', 'integer')
        .addColumn('last_used_at', 'integer')
        .modifyEnd(sql`strict`)
        .execute();

      await db.schema
        .createTable('settings')
        .addColumn('name', 'text', (c) => c.primaryKey().notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .modifyEnd(sql`strict`)
        .execute();
    },
  },
  '0002_signing_keys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey().notNull())
        .addColumn('generation', 'integer', (c) => c.notNull().unique())
        .addColumn('algorithm', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('activates_at', 'integer', (c) => c.notNull())
        .modifyEnd(sql`strict`)
        .execute();
    },
  },
};
