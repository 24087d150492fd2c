import assert from 'node:assert/strict';
import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../config.js';
import { openStore } from '../open-store.js';
import {
  POSTGRES_URL,
  createTestSchema,
  databaseUrlFor,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from '../../../test/postgres.js';
import {
  DuplicateError,
  MissingParentError,
  NewerSchemaError,
  StoreUnavailableError,
} from '../errors.js';
import { applicationRecord, userRecord } from '../contract/fixtures.js';
import { describeStoreContract } from '../store.contract.js';
import { translatePostgresError } from './postgres-errors.js';
import { postgresMigrations } from './postgres-migrations.js';
import { openPostgresStore } from './postgres-store.js';

const skip = await skipWithoutPostgres();

describe('PostgreSQL store', { skip }, () => {
  describeStoreContract('PostgreSQL', () => openTestPostgresStore());

  describe('migrations', () => {
    let client: pg.Client;
    before(async () => {
      client = new pg.Client(POSTGRES_URL);
      await client.connect();
    });
    after(() => client.end());

    async function tablesIn(schema: string): Promise<string[]> {
      const { rows } = await client.query<{ name: string }>(
        `select table_name as name from information_schema.tables
          where table_schema = $1 order by table_name`,
        [schema],
      );
      return rows.map((row) => row.name);
    }

    it('serialises six processes migrating one empty schema at once; each sees it done', async () => {
      const schema = await createTestSchema();
      const stores = await Promise.all(
        Array.from({ length: 6 }, () => openTestPostgresStore({ schema })),
      );
      try {
        await Promise.all(stores.map((store) => store.migrate()));
        assert.deepEqual(await tablesIn(schema), [
          'api_keys',
          'applications',
          'console_sessions',
          'console_sign_ins',
          'event_sequence',
          'events',
          'events_pending',
          'import_errors',
          'import_jobs',
          'kysely_migration',
          'kysely_migration_lock',
          'limit_counters',
          'scim_groups',
          'settings',
          'signing_keys',
          'tessera_migration_lock',
          'users',
          'webhook_deliveries',
          'webhooks',
        ]);
        // Limit counters are written without WAL (lost in a crash, which only restarts windows).
        const persistence = await client.query<{ relpersistence: string }>(
          `select c.relpersistence from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = $1 and c.relname = 'limit_counters'`,
          [schema],
        );
        assert.equal(persistence.rows[0]?.relpersistence, 'u');
        const { rows } = await client.query(`select name from ${schema}.kysely_migration`);
        assert.deepEqual(
          rows.map((row: { name: string }) => row.name),
          Object.keys(postgresMigrations),
        );
        // Every one of them can use the schema at once.
        await stores[0]!.applications.insertApplication(applicationRecord('after-race'), []);
        for (const store of stores) {
          assert.equal(
            (await store.applications.findApplication('after-race'))?.clientId,
            'after-race',
          );
        }
      } finally {
        await Promise.all(stores.map((store) => store.close()));
        await dropSchema(schema);
      }
    });

    it('lists the migrations an older build left pending, and applies them', async () => {
      const schema = await createTestSchema();
      const names = Object.keys(postgresMigrations).sort();
      const latest = names.at(-1)!;
      const older = await openTestPostgresStore({
        schema,
        migrations: Object.fromEntries(
          names.slice(0, -1).map((name) => [name, postgresMigrations[name]!]),
        ),
      });
      const current = await openTestPostgresStore({ schema });
      try {
        await older.migrate();
        const before = await current.schemaStatus();
        assert.deepEqual(before.pending, [latest]);
        assert.deepEqual(
          before.applied.map((migration) => migration.name),
          names.slice(0, -1),
        );
        await current.migrate();
        const after = await current.schemaStatus();
        assert.deepEqual(after.pending, []);
        assert.deepEqual(
          after.applied.map((migration) => migration.name),
          names,
        );
      } finally {
        await older.close();
        await current.close();
        await dropSchema(schema);
      }
    });

    it('refuses a schema written by a newer build, naming its migration, and changes nothing', async () => {
      const schema = await createTestSchema();
      const store = await openTestPostgresStore({ schema });
      try {
        await store.migrate();
        await client.query(
          `insert into ${schema}.kysely_migration (name, timestamp) values ('9999_from_a_newer_tessera', '2027-01-01T00:00:00.000Z')`,
        );
        const tables = await tablesIn(schema);
        await assert.rejects(store.migrate(), (error: unknown) => {
          assert.ok(error instanceof NewerSchemaError);
          assert.match(error.message, /newer Tessera: it has migration 9999_from_a_newer_tessera,/);
          return true;
        });
        const status = await store.schemaStatus();
        assert.deepEqual(status.unknown, [
          { name: '9999_from_a_newer_tessera', appliedAt: '2027-01-01T00:00:00.000Z' },
        ]);
        assert.deepEqual(status.pending, []);
        assert.deepEqual(await tablesIn(schema), tables);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });

    it('leaves nothing behind when a migration fails half way', async () => {
      const schema = await createTestSchema();
      const store = await openTestPostgresStore({
        schema,
        migrations: {
          ...postgresMigrations,
          '0002_broken': {
            async up(db) {
              await db.schema.createTable('half_done').addColumn('id', 'integer').execute();
              await sql`select * from a_table_that_does_not_exist`.execute(db);
            },
          },
        },
      });
      try {
        await assert.rejects(store.migrate());
        // Neither 0001 nor the first half of 0002: the run was one transaction.
        assert.deepEqual(await tablesIn(schema), ['tessera_migration_lock']);
        // The intact migrations then apply cleanly.
        const fixed = await openTestPostgresStore({ schema });
        await fixed.migrate();
        await fixed.applications.insertApplication(applicationRecord('works'), []);
        await fixed.close();
        assert.ok((await tablesIn(schema)).includes('applications'));
        assert.ok(!(await tablesIn(schema)).includes('half_done'));
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });
  });

  describe('migrating while other sessions drop schemas', () => {
    // Kysely's own introspection named every schema of the database in its catalog query, so a
    // schema dropped meanwhile by anyone (another service, another test process) failed the
    // migration with "schema … does not exist": 15 of 40 runs under this churn.
    it('migrates every time', async (t) => {
      const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
      let churning = true;
      let churned = 0;
      const churn = async () => {
        while (churning) {
          const schema = `tessera_churn_${process.pid}_${churned++}`;
          await admin.query(
            `create schema ${schema}; create table ${schema}.t (id serial primary key, a text)`,
          );
          await admin.query(`drop schema ${schema} cascade`);
        }
      };
      const churners = [churn(), churn()];
      const failures: string[] = [];
      try {
        for (let run = 0; run < 20; run++) {
          const store = await openTestPostgresStore();
          try {
            await store.migrate();
          } catch (error) {
            failures.push((error as Error).message);
          } finally {
            await store.close();
          }
        }
      } finally {
        churning = false;
        await Promise.all(churners);
        await admin.end();
      }
      t.diagnostic(`20 migrations while ${churned} schemas were created and dropped`);
      assert.ok(churned > 20, 'the schemas churned during the migrations');
      assert.deepEqual(failures, []);
    });
  });

  describe('keyset pages', () => {
    const queries: string[] = [];
    const originalQuery = pg.Pool.prototype.query;
    let store: Awaited<ReturnType<typeof openTestPostgresStore>>;
    let client: pg.Client;

    before(async () => {
      store = await openTestPostgresStore();
      await store.migrate();
      client = new pg.Client(POSTGRES_URL);
      await client.connect();
      await client.query(`set search_path = ${store.schema}`);
      await store.applications.insertApplication(applicationRecord('big'), []);
      await store.applications.insertApplication(applicationRecord('other'), []);
      // 20,000 users in two applications, written in bulk, then analysed as in production.
      for (const application of ['big', 'other']) {
        await client.query(
          `insert into users (application, user_key, provider, identifier, name, email,
             email_normalized, locale, roles, scopes, created_at, updated_at, etag, id,
             identifier_folded)
           select $1, 'google_oauth2' || chr(31) || lpad(n::text, 8, '0'), 'google_oauth2',
                  lpad(n::text, 8, '0'), 'User', 'u@example.com', 'u@example.com', 'en',
                  '[]', '[]', 0, 0, 'e', 'id-' || n, lpad(n::text, 8, '0')
             from generate_series(1, 10000) as n`,
          [application],
        );
      }
      await client.query('analyze users');
      // Record the SQL the store actually sends.
      pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
        const [config] = args;
        if (typeof config === 'object' && config !== null && 'text' in config) {
          queries.push((config as { text: string }).text);
        }
        return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof originalQuery;
    });

    after(async () => {
      pg.Pool.prototype.query = originalQuery;
      await client.end();
      await store.close();
    });

    it('walks the primary key from the position: `application = ? AND user_key > ?`', async () => {
      queries.length = 0;
      const page = await store.users.listUsers(
        { clientId: 'big', provider: null, email: null, role: null, scope: null, active: null },
        { after: { provider: 'google_oauth2', identifier: '00009000' }, limit: 100 },
      );
      assert.equal(page.length, 100);
      assert.equal(page[0]?.identifier, '00009001');
      const [text] = queries;
      assert.ok(text !== undefined);
      const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
        `explain (format json) ${text}`,
        ['big', `google_oauth2\u001f00009000`, 100],
      );
      const plan = JSON.stringify(rows[0]?.['QUERY PLAN']);
      // An index range on both key columns, not a filter over the application's rows.
      assert.match(plan, /"Index Name":"users_pkey"/);
      assert.match(plan, /"Index Cond":"\(\(application = 'big'::text\) AND \(user_key > /);
      assert.doesNotMatch(plan, /"Node Type":"Sort"/);
    });
  });

  describe('a table changed by another instance', () => {
    it('prepares the queries of this instance again instead of failing', async () => {
      const store = await openTestPostgresStore();
      await store.migrate();
      const client = new pg.Client(POSTGRES_URL);
      await client.connect();
      try {
        await store.applications.insertApplication(applicationRecord('before'), []);
        // Prepare `select *` on every pooled connection the store has.
        await Promise.all(
          Array.from({ length: 12 }, () => store.applications.findApplication('before')),
        );
        // A newer version of Tessera, migrating: the result type of `select *` changes.
        await client.query(`alter table ${store.schema}.applications add column later text`);
        const found = await Promise.all(
          Array.from({ length: 12 }, () => store.applications.findApplication('before')),
        );
        assert.ok(found.every((record) => record?.clientId === 'before'));
      } finally {
        await client.end();
        await store.close();
      }
    });
  });

  describe('event ids handed out after commit (the sequencer)', () => {
    const EVERYTHING = {
      types: null,
      clientId: null,
      actorId: null,
      resourceType: null,
      since: null,
      until: null,
      visibleClientIds: null,
    };
    const eventOf = (type: string, clientId: string) => ({
      type,
      occurredAt: 1_700_000_000_000,
      actor: { type: 'api_key' as const, id: 'key-1' },
      clientId,
      resource: { type: 'application' as const, id: { client_id: clientId } },
      changes: null,
      requestId: null,
    });
    /** A writer's pending event, inserted by hand on `client` (in its transaction, if open). */
    const insertPending = (client: pg.Client, schema: string, type: string, clientId: string) =>
      client.query(
        `insert into ${schema}.events_pending
           (type, occurred_at, actor_type, actor_id, client_id, resource_type, resource_id)
         values ($1, 1700000000000, 'api_key', 'key-1', $2, 'application', $3)`,
        [type, clientId, JSON.stringify({ client_id: clientId })],
      );
    /**
     * A schema migrated (by `migrations`, or all of them) by an instance that is gone, with
     * `application.created` events pending for `names`, in that order.
     */
    const leavePending = async (
      schema: string,
      names: string[],
      migrations = postgresMigrations,
    ) => {
      const gone = await openTestPostgresStore({ schema, migrations });
      await gone.migrate();
      await gone.close();
      for (const name of names) await insertPending(client, schema, 'application.created', name);
    };
    const count = async (client: pg.Client, table: string) =>
      Number((await client.query(`select count(*) as n from ${table}`)).rows[0].n);

    let client: pg.Client;
    before(async () => {
      client = new pg.Client(POSTGRES_URL);
      await client.connect();
    });
    after(() => client.end());

    it('gives an event that commits late a larger id than every event already read', async () => {
      const store = await openTestPostgresStore();
      await store.migrate();
      const late = new pg.Client(POSTGRES_URL);
      await late.connect();
      try {
        // A writer that has inserted its event but not committed yet…
        await late.query('begin');
        await insertPending(late, store.schema, 'application.created', 'late');
        // …while another write commits, is acknowledged and is read.
        await store.applications.insertApplication(applicationRecord('early'), [
          eventOf('application.created', 'early'),
        ]);
        const read = await store.events.listEvents(EVERYTHING, { after: null, limit: 100 });
        assert.deepEqual(
          read.map((event) => event.clientId),
          ['early'],
        );
        const position = read[0]!.id;
        await late.query('commit');
        // A reader going on from where it was finds the late event after it.
        const next = await store.events.listEvents(EVERYTHING, { after: position, limit: 100 });
        assert.deepEqual(
          next.map((event) => event.clientId),
          ['late'],
        );
        assert.ok(next[0]!.id > position, `${next[0]!.id} sorts after ${position}`);
      } finally {
        await late.end();
        await store.close();
      }
    });

    it('keeps the events pending at an upgrade past 0011 and numbers them in their order', async () => {
      const schema = await createTestSchema();
      // A database of the build before 0011, whose instance was stopped with events pending.
      const before0011 = Object.fromEntries(
        Object.entries(postgresMigrations).filter(([name]) => name < '0011'),
      );
      await leavePending(schema, ['upgrade-1', 'upgrade-2', 'upgrade-3'], before0011);
      const upgraded = await openTestPostgresStore({ schema });
      try {
        await upgraded.migrate();
        // New writes queue behind the ones from before the upgrade.
        await upgraded.applications.insertApplication(applicationRecord('after-upgrade'), [
          eventOf('application.created', 'after-upgrade'),
        ]);
        const read = await upgraded.events.listEvents(EVERYTHING, { after: null, limit: 100 });
        assert.deepEqual(
          read.map((event) => event.clientId),
          ['upgrade-1', 'upgrade-2', 'upgrade-3', 'after-upgrade'],
        );
        assert.equal(await count(client, `${schema}.events_pending`), 0);
      } finally {
        await upgraded.close();
        await dropSchema(schema);
      }
    });

    it('sequences events when events_pending is in a publication that publishes deletes', async () => {
      // Logical replication (a CDC tool's publication FOR ALL TABLES, say) refuses DELETEs on
      // a table without a replica identity; events_pending has no key since 0011, so it
      // carries whole rows (replica identity full) and the sequencer's DELETE goes through.
      const store = await openTestPostgresStore();
      await store.migrate();
      const publication = `tessera_test_${store.schema}`;
      await client.query(
        `create publication ${publication} for table ${store.schema}.events_pending`,
      );
      try {
        await store.applications.insertApplication(applicationRecord('published'), [
          eventOf('application.created', 'published'),
        ]);
        const read = await store.events.listEvents(EVERYTHING, { after: null, limit: 100 });
        assert.deepEqual(
          read.map((event) => event.clientId),
          ['published'],
        );
        assert.equal(await count(client, `${store.schema}.events_pending`), 0);
      } finally {
        await client.query(`drop publication if exists ${publication}`);
        await store.close();
      }
    });

    it('sequences the pending events of an instance that was killed, without a reader', async () => {
      const schema = await createTestSchema();
      // What a killed instance leaves: events committed with their writes, never numbered.
      await leavePending(schema, ['killed-1', 'killed-2', 'killed-3']);
      const other = await openTestPostgresStore({ schema });
      try {
        await other.migrate();
        // Nobody reads: the other instance's periodic round numbers them (in their order).
        const deadline = Date.now() + 10_000;
        while ((await count(client, `${schema}.events`)) < 3 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const { rows } = await client.query<{ client_id: string; seq: number }>(
          `select client_id, seq from ${schema}.events order by seq`,
        );
        assert.deepEqual(
          rows.map((row) => row.client_id),
          ['killed-1', 'killed-2', 'killed-3'],
        );
        assert.equal(await count(client, `${schema}.events_pending`), 0);
      } finally {
        await other.close();
        await dropSchema(schema);
      }
    });

    it('vacuums events_pending once it has moved 5,000 rows out of it, autovacuum or not', async () => {
      const schema = await createTestSchema();
      const store = await openTestPostgresStore({ schema });
      await store.migrate();
      const vacuums = async () => {
        await client.query('select pg_stat_clear_snapshot()');
        const { rows } = await client.query<{ n: string }>(
          `select vacuum_count as n from pg_stat_user_tables
            where schemaname = $1 and relname = 'events_pending'`,
          [schema],
        );
        return Number(rows[0]?.n ?? 0);
      };
      try {
        // 5,000 committed events, as writers leave them (this machine's PostgreSQL may run
        // without autovacuum, and autovacuum would wait a minute anyway).
        await client.query(
          `insert into ${schema}.events_pending
             (type, occurred_at, actor_type, actor_id, client_id, resource_type, resource_id)
           select 'application.created', 1700000000000, 'api_key', 'key-1', 'app-' || n,
                  'application', '{}'
             from generate_series(1, 5000) as n`,
        );
        assert.equal(await vacuums(), 0);
        const read = await store.events.listEvents(EVERYTHING, { after: null, limit: 1 });
        assert.equal(read[0]?.clientId, 'app-1');
        const deadline = Date.now() + 10_000;
        while ((await vacuums()) === 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.equal(await vacuums(), 1);
        assert.equal(await count(client, `${schema}.events`), 5000);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    });

    it('leaves nothing pending for a write that failed or changed nothing', async () => {
      const store = await openTestPostgresStore();
      await store.migrate();
      try {
        const app = applicationRecord('billing');
        await store.applications.insertApplication(app, [
          eventOf('application.created', 'billing'),
        ]);
        const before = await store.events.lastEventId();
        assert.equal(await count(client, `${store.schema}.events_pending`), 0);
        // A duplicate insert and a stale conditional update (each one statement with its
        // events), and a transaction of two statements whose second fails.
        await assert.rejects(
          store.applications.insertApplication(app, [eventOf('application.created', 'billing')]),
          DuplicateError,
        );
        assert.equal(
          await store.applications.replaceApplication({ ...app, displayName: 'x' }, 'stale', [
            eventOf('application.updated', 'billing'),
          ]),
          false,
        );
        await store.users.insertUser(userRecord('billing', 'google', 'ada'), []);
        const user = (await store.users.findUser({
          clientId: 'billing',
          provider: 'google',
          identifier: 'ada',
        }))!;
        const thousand = Array.from({ length: 1000 }, (_, n) =>
          userRecord('billing', 'google', `new-${n}`),
        );
        await assert.rejects(
          store.users.insertUsers(
            [...thousand, user],
            [...thousand, user].map(() => eventOf('user.created', 'billing')),
          ),
          DuplicateError,
        );
        assert.equal(
          await store.users.findUser({
            clientId: 'billing',
            provider: 'google',
            identifier: 'new-0',
          }),
          undefined,
        );
        assert.equal(await count(client, `${store.schema}.events_pending`), 0);
        assert.equal(await store.events.lastEventId(), before);
      } finally {
        await store.close();
      }
    });
  });

  describe('configuration', () => {
    it('opens at most IAM_DB_POOL_SIZE connections per instance', async () => {
      const schema = await createTestSchema();
      const name = `pool_test_${process.pid}`;
      const url = new URL(databaseUrlFor(schema));
      // A name of its own, to count this store's connections in pg_stat_activity.
      url.searchParams.set('application_name', name);
      const config = loadConfig({ DATABASE_URL: url.toString(), IAM_DB_POOL_SIZE: '3' });
      const store = await openStore(config.database);
      const client = new pg.Client(POSTGRES_URL);
      await client.connect();
      try {
        await store.migrate();
        await Promise.all(
          Array.from({ length: 30 }, () => store.applications.findApplication('none')),
        );
        const { rows } = await client.query<{ count: string }>(
          'select count(*) from pg_stat_activity where application_name = $1',
          [name],
        );
        assert.equal(Number(rows[0]?.count), 3);
      } finally {
        await client.end();
        await store.close();
        await dropSchema(schema);
      }
    });
  });

  describe('a busy pool', () => {
    it('lets queries wait for a free connection longer than the connect timeout', async () => {
      // One connection, a connect timeout of 100 ms: the first query holds the connection on a
      // lock for 600 ms and the second must queue. A busy pool is not an outage: the second
      // query waits and succeeds instead of failing as "unavailable" (a 503 to its caller).
      const store = await openTestPostgresStore({ poolSize: 1, connectTimeoutMs: 100 });
      await store.migrate();
      const locker = new pg.Client(POSTGRES_URL);
      await locker.connect();
      try {
        await store.applications.insertApplication(applicationRecord('queued'), []);
        await locker.query('begin');
        await locker.query(`lock table "${store.schema}".applications in access exclusive mode`);
        const first = store.applications.findApplication('queued');
        const second = store.applications.findApplication('queued');
        await new Promise((resolve) => setTimeout(resolve, 600));
        await locker.query('commit');
        assert.equal((await first)?.clientId, 'queued');
        assert.equal((await second)?.clientId, 'queued');
      } finally {
        await locker.end();
        await store.close();
      }
    });

    it('still gives up connecting to a server that never answers after the connect timeout', async () => {
      // Accepts connections and never says a word.
      const sockets: Socket[] = [];
      const silent = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as AddressInfo;
      const store = openPostgresStore({
        url: `postgres://nobody@127.0.0.1:${port}/none`,
        connectTimeoutMs: 200,
        poolWaitMs: 20_000,
      });
      const started = Date.now();
      try {
        await assert.rejects(store.ping(), StoreUnavailableError);
        // Bounded by the connect timeout, not by the 20 s a busy pool may queue for.
        assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`);
      } finally {
        await store.close();
        for (const socket of sockets) socket.destroy();
        silent.close();
      }
    });
  });

  describe('unreachable database', () => {
    it('fails ping and queries with StoreUnavailableError, not a hang', async () => {
      const unreachable = new URL(POSTGRES_URL);
      unreachable.port = '1';
      const store = openPostgresStore({ url: unreachable.toString(), connectTimeoutMs: 500 });
      try {
        await assert.rejects(store.ping(), StoreUnavailableError);
        await assert.rejects(store.applications.findApplication('x'), StoreUnavailableError);
        await assert.rejects(
          store.applications.insertApplication(applicationRecord('x'), []),
          StoreUnavailableError,
        );
        await assert.rejects(store.migrate(), StoreUnavailableError);
      } finally {
        await store.close();
      }
    });

    it('refuses further work once closed', async () => {
      const store = await openTestPostgresStore();
      await store.migrate();
      await store.close();
      await assert.rejects(store.applications.findApplication('x'), StoreUnavailableError);
    });
  });

  describe('error translation', () => {
    const cases: [string, Record<string, unknown>, string, string?][] = [
      ['unique violation', { code: '23505' }, 'DuplicateError'],
      ['foreign key violation', { code: '23503' }, 'MissingParentError'],
      ['read-only transaction', { code: '25006' }, 'StoreUnavailableError', 'writes'],
      ['disk full', { code: '53100' }, 'StoreUnavailableError', 'writes'],
      ['too many connections', { code: '53300' }, 'StoreUnavailableError', 'all'],
      ['statement timeout', { code: '57014' }, 'StoreUnavailableError', 'all'],
      ['administrator shutdown', { code: '57P01' }, 'StoreUnavailableError', 'all'],
      ['connection failure', { code: '08006' }, 'StoreUnavailableError', 'all'],
      ['serialization failure', { code: '40001' }, 'StoreUnavailableError', 'all'],
      ['refused connection', { code: 'ECONNREFUSED' }, 'StoreUnavailableError', 'all'],
      ['syntax error', { code: '42601' }, 'Error'],
    ];
    for (const [name, fields, expected, scope] of cases) {
      it(`translates a ${name} into ${expected}${scope ? ` (${scope})` : ''}`, () => {
        const translated = translatePostgresError(Object.assign(new Error(name), fields)) as Error;
        assert.equal(translated.name, expected);
        if (scope !== undefined) assert.equal((translated as StoreUnavailableError).scope, scope);
      });
    }

    it('keeps DuplicateError and MissingParentError distinct on real statements', async () => {
      const store = await openTestPostgresStore();
      await store.migrate();
      try {
        await store.applications.insertApplication(applicationRecord('a'), []);
        await assert.rejects(
          store.applications.insertApplication(applicationRecord('a'), []),
          DuplicateError,
        );
        await assert.rejects(
          store.users.insertUser(userRecord('missing', 'google_oauth2', 'x'), []),
          MissingParentError,
        );
      } finally {
        await store.close();
      }
    });
  });
});
