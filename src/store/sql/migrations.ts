import {
  sql,
  type ColumnDataType,
  type CreateTableBuilder,
  type Expression,
  type Kysely,
  type Migration,
} from 'kysely';

/**
 * What differs between the dialects' DDL; the tables themselves are written once, below, so a
 * migration cannot say one thing on SQLite and another on PostgreSQL.
 */
export interface DialectTypes {
  /** Text that is compared or ordered: byte order on both (SQLite BINARY, PostgreSQL "C"). */
  key: ColumnDataType | Expression<unknown>;
  /** Epoch milliseconds. */
  time: 'integer' | 'bigint';
  /** Appended to every CREATE TABLE (SQLite: STRICT, so declared types are enforced). */
  tableEnd: Expression<unknown> | null;
  /** A new random UUID (version 4) as text, per row: ids for rows that predate them. */
  randomUuid: Expression<string>;
  /**
   * How event ids are handed out in commit order: SQLite's AUTOINCREMENT (one writer at a
   * time, ids never reused), or PostgreSQL's one-row event_sequence, whose last id a sequencer
   * moves on as it numbers the events writers committed to events_pending (see
   * docs/architecture.md).
   */
  eventIds: 'autoincrement' | 'sequence-row';
  /**
   * Put before TABLE for rows that may be lost in a crash (PostgreSQL's UNLOGGED: no WAL, so
   * a write does not wait for the disk); null where every table is durable (SQLite).
   */
  unlogged: Expression<unknown> | null;
}

/**
 * Forward-only, versioned; the same names on both dialects. A released migration is never
 * edited: add a new one.
 *
 * Portability (CockroachDB, YugabyteDB): plain tables, B-tree indexes, no extensions, no
 * triggers; one identity column (events_pending's key, which only orders pending events, and
 * has no index). JSON values are `text`, never `jsonb`: a stored object comes back
 * byte for byte as written (jsonb reorders members and refuses \u0000).
 */
export function sqlMigrations(types: DialectTypes): Record<string, Migration> {
  const { key, time } = types;
  const finish = <T extends string, C extends string>(table: CreateTableBuilder<T, C>) =>
    types.tableEnd === null ? table : table.modifyEnd(types.tableEnd);
  return {
    '0001_initial': {
      async up(db: Kysely<unknown>) {
        await finish(
          db.schema
            .createTable('applications')
            .addColumn('client_id', key, (c) => c.primaryKey().notNull())
            .addColumn('display_name', 'text', (c) => c.notNull())
            .addColumn('description', 'text', (c) => c.notNull())
            .addColumn('mode', 'text', (c) => c.notNull())
            .addColumn('jwt_expiration_in_minutes', 'integer', (c) => c.notNull())
            .addColumn('external_token_validation', 'text')
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('etag', 'text', (c) => c.notNull()),
        ).execute();

        await finish(
          db.schema
            .createTable('users')
            .addColumn('application', key, (c) =>
              c.notNull().references('applications.client_id').onDelete('cascade'),
            )
            .addColumn('user_key', key, (c) => c.notNull())
            .addColumn('provider', key, (c) => c.notNull())
            .addColumn('identifier', key, (c) => c.notNull())
            .addColumn('name', 'text', (c) => c.notNull())
            .addColumn('avatar', 'text')
            .addColumn('email', 'text', (c) => c.notNull())
            .addColumn('email_normalized', key, (c) => c.notNull())
            .addColumn('locale', 'text', (c) => c.notNull())
            .addColumn('roles', 'text', (c) => c.notNull())
            .addColumn('scopes', 'text', (c) => c.notNull())
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('etag', 'text', (c) => c.notNull())
            .addPrimaryKeyConstraint('users_pkey', ['application', 'user_key']),
        ).execute();
        await db.schema
          .createIndex('users_email')
          .on('users')
          .columns(['application', 'email_normalized', 'user_key'])
          .execute();

        await finish(
          db.schema
            .createTable('api_keys')
            .addColumn('id', key, (c) => c.primaryKey().notNull())
            .addColumn('name', 'text', (c) => c.notNull())
            .addColumn('secret_digest', key, (c) => c.notNull().unique())
            .addColumn('roles', 'text', (c) => c.notNull())
            .addColumn('applications', 'text')
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('expires_at', time)
            .addColumn('last_used_at', time),
        ).execute();

        await finish(
          db.schema
            .createTable('settings')
            .addColumn('name', key, (c) => c.primaryKey().notNull())
            .addColumn('value', 'text', (c) => c.notNull()),
        ).execute();
      },
    },
    '0002_signing_keys': {
      async up(db: Kysely<unknown>) {
        await finish(
          db.schema
            .createTable('signing_keys')
            .addColumn('kid', key, (c) => c.primaryKey().notNull())
            .addColumn('generation', 'integer', (c) => c.notNull().unique())
            .addColumn('algorithm', 'text', (c) => c.notNull())
            .addColumn('public_jwk', 'text', (c) => c.notNull())
            .addColumn('private_jwk', 'text', (c) => c.notNull())
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('activates_at', time, (c) => c.notNull()),
        ).execute();
      },
    },
    '0003_security': {
      async up(db: Kysely<unknown>) {
        // Rotation keeps the replaced secret's digest for an overlap window; revocation
        // keeps the record. SQLite cannot add a UNIQUE column, so the index comes apart.
        for (const [column, type] of [
          ['previous_secret_digest', key],
          ['previous_expires_at', time],
          ['revoked_at', time],
        ] as const) {
          await db.schema.alterTable('api_keys').addColumn(column, type).execute();
        }
        await db.schema
          .createIndex('api_keys_previous_secret_digest')
          .unique()
          .on('api_keys')
          .column('previous_secret_digest')
          .execute();
        await db.schema.alterTable('signing_keys').addColumn('revoked_at', time).execute();
      },
    },
    '0005_scim': {
      async up(db: Kysely<unknown>) {
        // Users gain an immutable id (existing users get one here), an active flag (existing
        // users are active), the externalId a provisioning client keeps, and the identifier
        // folded to ASCII lower case, so userName lookups ignore ASCII case through an index.
        // The indexes end with user_key: a lookup's rows come out in list order, no sort.
        // lower() folds ASCII letters only on both engines: SQLite's is ASCII-only, and the
        // identifier column is COLLATE "C" on PostgreSQL.
        await db.schema
          .alterTable('users')
          .addColumn('id', key, (c) => c.notNull().defaultTo(''))
          .execute();
        await db.schema
          .alterTable('users')
          .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
          .execute();
        await db.schema.alterTable('users').addColumn('external_id', key).execute();
        await db.schema
          .alterTable('users')
          .addColumn('identifier_folded', key, (c) => c.notNull().defaultTo(''))
          .execute();
        await db
          .updateTable('users' as never)
          .set({ id: types.randomUuid, identifier_folded: sql`lower(identifier)` } as never)
          .execute();
        await db.schema
          .createIndex('users_id')
          .on('users')
          .columns(['application', 'id'])
          .unique()
          .execute();
        await db.schema
          .createIndex('users_identifier_folded')
          .on('users')
          .columns(['application', 'provider', 'identifier_folded', 'user_key'])
          .execute();
        await db.schema
          .createIndex('users_external_id')
          .on('users')
          .columns(['application', 'provider', 'external_id', 'user_key'])
          .execute();

        // SCIM is off (null) until an application names the provider label of its SCIM users.
        await db.schema.alterTable('applications').addColumn('scim_provider', 'text').execute();

        // A SCIM Group is one of the application's roles; its members are the users holding it.
        await finish(
          db.schema
            .createTable('scim_groups')
            .addColumn('application', key, (c) =>
              c.notNull().references('applications.client_id').onDelete('cascade'),
            )
            .addColumn('id', key, (c) => c.notNull())
            .addColumn('display_name', key, (c) => c.notNull())
            .addColumn('external_id', 'text')
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('etag', 'text', (c) => c.notNull())
            .addPrimaryKeyConstraint('scim_groups_pkey', ['application', 'id'])
            .addUniqueConstraint('scim_groups_display_name', ['application', 'display_name']),
        ).execute();
      },
    },
    '0006_events': {
      async up(db: Kysely<unknown>) {
        // The audit trail. No foreign keys: an event outlives what it describes.
        await finish(
          db.schema
            .createTable('events')
            .addColumn('seq', types.eventIds === 'autoincrement' ? 'integer' : 'bigint', (c) =>
              types.eventIds === 'autoincrement'
                ? c.primaryKey().autoIncrement().notNull()
                : c.primaryKey().notNull(),
            )
            .addColumn('type', 'text', (c) => c.notNull())
            .addColumn('occurred_at', time, (c) => c.notNull())
            .addColumn('actor_type', 'text', (c) => c.notNull())
            .addColumn('actor_id', key)
            .addColumn('client_id', key)
            .addColumn('resource_type', 'text', (c) => c.notNull())
            .addColumn('resource_id', 'text', (c) => c.notNull())
            .addColumn('changes', 'text')
            .addColumn('request_id', 'text'),
        ).execute();
        await db.schema
          .createIndex('events_client_id')
          .on('events')
          .columns(['client_id', 'seq'])
          .execute();
        await db.schema
          .createIndex('events_occurred_at')
          .on('events')
          .column('occurred_at')
          .execute();
        if (types.eventIds === 'sequence-row') {
          await finish(
            db.schema
              .createTable('event_sequence')
              .addColumn('id', 'integer', (c) => c.primaryKey().notNull())
              .addColumn('last', time, (c) => c.notNull()),
          ).execute();
          await db
            .insertInto('event_sequence' as never)
            .values({ id: 1, last: 0 } as never)
            .execute();
        }
      },
    },
    '0007_webhooks': {
      async up(db: Kysely<unknown>) {
        // A webhook's configuration, its signing secrets (sealed when IAM_SECRET_KEY is set),
        // and its delivery state over the event feed: the last event dealt with (cursor), a
        // generation a replay moves on, and the lease of the instance working it.
        await finish(
          db.schema
            .createTable('webhooks')
            .addColumn('id', key, (c) => c.primaryKey().notNull())
            .addColumn('url', 'text', (c) => c.notNull())
            .addColumn('event_types', 'text', (c) => c.notNull())
            .addColumn('client_ids', 'text')
            .addColumn('description', 'text', (c) => c.notNull())
            .addColumn('enabled', 'integer', (c) => c.notNull())
            .addColumn('disabled_reason', 'text')
            .addColumn('secret', 'text', (c) => c.notNull())
            .addColumn('previous_secret', 'text')
            .addColumn('previous_secret_expires_at', time)
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('etag', 'text', (c) => c.notNull())
            .addColumn('cursor', key)
            .addColumn('generation', 'integer', (c) => c.notNull())
            .addColumn('lease_owner', 'text')
            .addColumn('lease_until', time),
        ).execute();
        // One row per event and webhook, over all its attempts; the attempt log is JSON text.
        await finish(
          db.schema
            .createTable('webhook_deliveries')
            .addColumn('webhook_id', key, (c) =>
              c.notNull().references('webhooks.id').onDelete('cascade'),
            )
            .addColumn('event_id', key, (c) => c.notNull())
            .addColumn('event_type', 'text', (c) => c.notNull())
            .addColumn('status', key, (c) => c.notNull())
            .addColumn('attempts', 'integer', (c) => c.notNull())
            .addColumn('first_attempt_at', time, (c) => c.notNull())
            .addColumn('last_attempt_at', time, (c) => c.notNull())
            .addColumn('next_attempt_at', time)
            .addColumn('attempt_log', 'text', (c) => c.notNull())
            .addPrimaryKeyConstraint('webhook_deliveries_pkey', ['webhook_id', 'event_id']),
        ).execute();
        await db.schema
          .createIndex('webhook_deliveries_status')
          .on('webhook_deliveries')
          .columns(['webhook_id', 'status', 'event_id'])
          .execute();
      },
    },
    '0008_console_sessions': {
      async up(db: Kysely<unknown>) {
        // Admin console sessions, shared by every instance: a browser signed in on one is
        // signed in on all. Only digests of the session id and of the key's secret are kept.
        await finish(
          db.schema
            .createTable('console_sessions')
            .addColumn('id_digest', key, (c) => c.primaryKey().notNull())
            .addColumn('api_key_id', key, (c) => c.notNull())
            .addColumn('key_digest', key, (c) => c.notNull())
            .addColumn('csrf_token', 'text', (c) => c.notNull())
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('last_seen_at', time, (c) => c.notNull()),
        ).execute();
      },
    },
    '0009_event_sequencer': {
      async up(db: Kysely<unknown>) {
        // PostgreSQL: writers insert their events here, in their own transaction, without
        // numbering them; a sequencer moves committed ones into events with ids in commit
        // order (docs/architecture.md). The key keeps the order of a write's events and of
        // writes to one row. SQLite numbers events as it commits them: nothing to add.
        if (types.eventIds !== 'sequence-row') return;
        await finish(
          db.schema
            .createTable('events_pending')
            .addColumn('id', 'bigint', (c) => c.primaryKey().notNull().generatedAlwaysAsIdentity())
            .addColumn('type', 'text', (c) => c.notNull())
            .addColumn('occurred_at', time, (c) => c.notNull())
            .addColumn('actor_type', 'text', (c) => c.notNull())
            .addColumn('actor_id', key)
            .addColumn('client_id', key)
            .addColumn('resource_type', 'text', (c) => c.notNull())
            .addColumn('resource_id', 'text', (c) => c.notNull())
            .addColumn('changes', 'text')
            .addColumn('request_id', 'text'),
        ).execute();
      },
    },
    '0010_webhook_delivery_pruning': {
      async up(db: Kysely<unknown>) {
        // The delivery log is pruned with the events it records (IAM_EVENT_RETENTION_DAYS),
        // oldest attempt first: each batch reads this index, not the whole log.
        await db.schema
          .createIndex('webhook_deliveries_last_attempt')
          .on('webhook_deliveries')
          .column('last_attempt_at')
          .execute();
      },
    },
    '0011_event_queue_unindexed': {
      async up(db: Kysely<unknown>) {
        // PostgreSQL: events_pending loses its primary-key index. Its keys come from a
        // sequence, so every writer inserted into the index's last page, and concurrent writers
        // queued on that page's lock: 16 writers at the store layer made 2,030 writes/s with the
        // index and 2,440 without, ten alternated pairs (bench/README.md). The sequencer reads
        // the whole (short) table anyway. Rows stay whole for logical replication (replica
        // identity).
        if (types.eventIds !== 'sequence-row') return;
        await sql`alter table events_pending drop constraint if exists events_pending_pkey`.execute(
          db,
        );
        await sql`alter table events_pending replica identity full`.execute(db);
      },
    },
    '0012_scim_user_names': {
      async up(db: Kysely<unknown>) {
        // SCIM userNames are unique under the application's SCIM provider regardless of ASCII
        // case, for every door and every instance: the database decides, through a unique index
        // on the folded identifier of the users of that provider (NULL, which never clashes, for
        // everyone else). Stores keep the column right on every write (sql-users.ts,
        // sql-applications.ts). A database that already holds two such users cannot take the
        // index: the upgrade stops here, before changing anything, and says which users.
        await refuseUserNameClashes(db);
        await db.schema.alterTable('users').addColumn('scim_user_name', key).execute();
        await sql`update users set scim_user_name = identifier_folded where provider = (select scim_provider from applications where client_id = users.application)`.execute(
          db,
        );
        await db.schema
          .createIndex('users_scim_user_name')
          .on('users')
          .columns(['application', 'scim_user_name'])
          .unique()
          .execute();
      },
    },
    '0013_limit_counters': {
      async up(db: Kysely<unknown>) {
        // The failed-authentication limit and the rate limit, counted across the instances of
        // one database when they share no Redis: one row per counter and fixed window. Losing
        // them in a crash only restarts the windows, so on PostgreSQL the table is UNLOGGED
        // (CockroachDB and YugabyteDB accept the word and keep the table durable).
        let table = db.schema
          .createTable('limit_counters')
          .addColumn('key', key, (c) => c.primaryKey().notNull())
          .addColumn('count', 'integer', (c) => c.notNull())
          .addColumn('resets_at', time, (c) => c.notNull());
        if (types.unlogged !== null) table = table.modifyFront(types.unlogged);
        await finish(table).execute();
        await db.schema
          .createIndex('limit_counters_resets_at')
          .on('limit_counters')
          .column('resets_at')
          .execute();
      },
    },
    '0016_application_authorization': {
      async up(db: Kysely<unknown>) {
        // An application's authorization model (JSON text, null: none). Not named
        // "authorization", a reserved word of SQL.
        await db.schema
          .alterTable('applications')
          .addColumn('authorization_model', 'text')
          .execute();
      },
    },
    '0017_console_operators': {
      async up(db: Kysely<unknown>) {
        // Console sessions of operators signed in through the OpenID provider hold no API
        // key: api_key_id and key_digest become nullable, which SQLite cannot alter, so the
        // table is made anew. Sessions last hours at most; an upgrade signs everyone out once.
        await db.schema.dropTable('console_sessions').execute();
        await finish(
          db.schema
            .createTable('console_sessions')
            .addColumn('id_digest', key, (c) => c.primaryKey().notNull())
            .addColumn('api_key_id', key)
            .addColumn('key_digest', key)
            .addColumn('operator', 'text')
            .addColumn('csrf_token', 'text', (c) => c.notNull())
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('last_seen_at', time, (c) => c.notNull()),
        ).execute();
        // Sign-ins begun and not yet finished, shared by every instance: the provider may send
        // the browser back to another instance than the one it left. Each is taken once.
        await finish(
          db.schema
            .createTable('console_sign_ins')
            .addColumn('state_digest', key, (c) => c.primaryKey().notNull())
            .addColumn('browser_digest', key, (c) => c.notNull())
            .addColumn('nonce', 'text', (c) => c.notNull())
            .addColumn('code_verifier', 'text', (c) => c.notNull())
            .addColumn('created_at', time, (c) => c.notNull()),
        ).execute();
      },
    },
    '0018_user_labels': {
      async up(db: Kysely<unknown>) {
        // The type and primary a SCIM client gave a user's e-mail address and avatar (JSON
        // text, null: none), so they are returned as sent.
        await db.schema.alterTable('users').addColumn('labels', 'text').execute();
      },
    },
    '0019_import_jobs': {
      async up(db: Kysely<unknown>) {
        // Bulk imports: one row per job, its counts moved on in each batch's own transaction
        // (so they always agree with the users written), and its error lines. A job goes with
        // its application.
        await finish(
          db.schema
            .createTable('import_jobs')
            .addColumn('id', key, (c) => c.primaryKey().notNull())
            .addColumn('application', key, (c) =>
              c.notNull().references('applications.client_id').onDelete('cascade'),
            )
            .addColumn('format', 'text', (c) => c.notNull())
            .addColumn('dry_run', 'integer', (c) => c.notNull())
            .addColumn('on_conflict', 'text', (c) => c.notNull())
            .addColumn('status', 'text', (c) => c.notNull())
            .addColumn('lines_read', 'integer', (c) => c.notNull())
            .addColumn('created_count', 'integer', (c) => c.notNull())
            .addColumn('updated_count', 'integer', (c) => c.notNull())
            .addColumn('unchanged_count', 'integer', (c) => c.notNull())
            .addColumn('skipped_count', 'integer', (c) => c.notNull())
            .addColumn('invalid_count', 'integer', (c) => c.notNull())
            .addColumn('failure', 'text')
            .addColumn('started_by', 'text')
            .addColumn('created_at', time, (c) => c.notNull())
            .addColumn('updated_at', time, (c) => c.notNull())
            .addColumn('finished_at', time),
        ).execute();
        await db.schema
          .createIndex('import_jobs_application')
          .on('import_jobs')
          .column('application')
          .execute();
        await finish(
          db.schema
            .createTable('import_errors')
            .addColumn('job_id', key, (c) =>
              c.notNull().references('import_jobs.id').onDelete('cascade'),
            )
            .addColumn('line', 'integer', (c) => c.notNull())
            .addColumn('position', 'integer', (c) => c.notNull())
            .addColumn('pointer', 'text', (c) => c.notNull())
            .addColumn('detail', 'text', (c) => c.notNull())
            .addPrimaryKeyConstraint('import_errors_pkey', ['job_id', 'line', 'position']),
        ).execute();
      },
    },
  };
}

/** Users shown in an upgrade's refusal; the count says how many sets there are in all. */
const CLASHES_SHOWN = 12;

/**
 * Stops migration 0012 when two users of an application's SCIM provider have identifiers that
 * differ only in ASCII case (possible before it, when two requests raced past SCIM's lookup, or
 * one came through the API): the message names them and says what to do.
 */
async function refuseUserNameClashes(db: Kysely<unknown>): Promise<void> {
  const clashing = sql`from users u join applications a on a.client_id = u.application and a.scim_provider = u.provider`;
  const { rows: sets } = await sql<{ sets: number | string }>`
    select count(*) as sets from (select u.application ${clashing}
    group by u.application, u.provider, u.identifier_folded having count(*) > 1) clashes`.execute(
    db,
  );
  const count = Number(sets[0]?.sets ?? 0);
  if (count === 0) return;
  const { rows: users } = await sql<{
    application: string;
    provider: string;
    identifier: string;
    id: string;
  }>`select u.application, u.provider, u.identifier, u.id ${clashing}
    where exists (select 1 from users v where v.application = u.application
      and v.provider = u.provider and v.identifier_folded = u.identifier_folded
      and v.user_key <> u.user_key)
    order by u.application, u.identifier_folded, u.user_key limit ${CLASHES_SHOWN}`.execute(db);
  const shown = users
    .map(
      (user) =>
        `${JSON.stringify(user.application)}/${user.provider}/${JSON.stringify(user.identifier.slice(0, 80))} (id ${user.id})`,
    )
    .join(', ');
  throw new Error(
    `${count} set(s) of users of an application's SCIM provider have identifiers that differ only ` +
      `in ASCII case, which SCIM userNames may not (they ignore case): ${shown}` +
      `${users.length < CLASHES_SHOWN ? '' : ', …'}. Nothing was changed. With the version ` +
      `that wrote this database, rename (SCIM PATCH of userName) or delete all but one user of ` +
      `each set, then start this version again (CHANGELOG.md, 0012_scim_user_names).`,
  );
}
