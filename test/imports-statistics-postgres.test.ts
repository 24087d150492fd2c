// An import into PostgreSQL keeps the planner's statistics of the users in step with the table:
// with the statistics autovacuum took when the table held a few hundred users, the planner read
// a user by its key through the smallest index on the application alone, filtering every user
// of it (300 ms a GET user at 200,000 users, and an import's lookups past the statement
// timeout, which failed a 1,000,000-user import at 200,000).

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { encodeUserKey } from '../src/store/sql/tables.js';
import type { ImportJobRecord, Store } from '../src/store/store.js';
import { POSTGRES_URL, openTestPostgresStore, skipWithoutPostgres } from './postgres.js';
import { seedUsers, seededIdentifier, seededUser } from './seed-users.js';

const skip = await skipWithoutPostgres();
const CLIENT = 'statistics-app';
const SEEDED = 300;
const IMPORTED = 40_000;
const BATCH = 250;

function job(): ImportJobRecord {
  const now = Date.now();
  return {
    id: 'job-statistics',
    clientId: CLIENT,
    format: 'tessera',
    dryRun: false,
    onConflict: 'update',
    status: 'running',
    counts: { read: 0, created: 0, updated: 0, unchanged: 0, skipped: 0, invalid: 0 },
    failure: null,
    startedBy: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
  };
}

/** The index the planner reads one user of CLIENT by its key through (its plan's first scan). */
async function indexForKeyLookup(client: pg.Client, n: number): Promise<string | undefined> {
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    'explain (format json) select * from users where application = $1 and user_key = $2',
    [CLIENT, encodeUserKey('google_oauth2', seededIdentifier(n))],
  );
  const indexOf = (node: PlanNode): string | undefined =>
    node['Index Name'] ?? node.Plans?.map(indexOf).find((name) => name !== undefined);
  return indexOf(rows[0]!['QUERY PLAN'][0].Plan);
}

interface PlanNode {
  'Index Name'?: string;
  Plans?: PlanNode[];
}

describe('an import on PostgreSQL and the planner', { skip }, () => {
  let store: Store & { schema: string };
  let client: pg.Client;

  before(async () => {
    store = await openTestPostgresStore();
    await store.migrate();
    client = new pg.Client({
      connectionString: POSTGRES_URL,
      options: `-c search_path=${store.schema}`,
    });
    await client.connect();
  });

  after(async () => {
    await client?.end();
    await store?.close();
  });

  it('reads a user by its primary key after importing 40,000 users into a table analyzed at 300', async () => {
    await seedUsers(store, CLIENT, SEEDED);
    // What autovacuum does early in a table's life: statistics of a few hundred users.
    await client.query('analyze users');
    await store.imports.insertImportJob(job());
    const now = Date.now();
    for (let start = SEEDED; start < SEEDED + IMPORTED; start += BATCH) {
      const inserts = [];
      for (let n = start; n < start + BATCH; n++) inserts.push(seededUser(CLIENT, n, now));
      const created = start + BATCH - SEEDED;
      const recorded = await store.imports.recordImportBatch(
        'job-statistics',
        {
          counts: { read: created, created, updated: 0, unchanged: 0, skipped: 0, invalid: 0 },
          errors: [],
          inserts,
          changes: [],
          recordedAt: now,
        },
        [],
      );
      assert.equal(recorded, true);
    }
    const { rows } = await client.query<{ reltuples: number }>(
      "select reltuples::float8 as reltuples from pg_class where oid = 'users'::regclass",
    );
    assert.ok(
      rows[0]!.reltuples >= 20_000,
      `the statistics count ${rows[0]!.reltuples} users of ${SEEDED + IMPORTED}`,
    );
    assert.equal(await indexForKeyLookup(client, SEEDED + IMPORTED - 1), 'users_pkey');
    // And the user is there, read as a GET user reads it.
    const user = await store.users.findUser({
      clientId: CLIENT,
      provider: 'google_oauth2',
      identifier: seededIdentifier(SEEDED),
    });
    assert.equal(user?.name, `Seeded User ${SEEDED}`);
  });
});
