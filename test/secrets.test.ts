// tessera-test: both-stores
// API key secrets: 256 random bits each, and the store keeps only their SHA-256 digests — read
// from the bytes of the SQLite database file (and its WAL), and from every column of every
// PostgreSQL row.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { buildTestApp, call, TEST_STORE, type TestContext } from './helpers.js';
import { databaseUrlFor, openTestPostgresStore, POSTGRES_URL } from './postgres.js';

const SECRET = /^tsr_([A-Za-z0-9_-]{43})$/;

async function issue(ctx: TestContext, count: number): Promise<string[]> {
  const secrets: string[] = [];
  for (let n = 0; n < count; n += 1) {
    const response = await call(ctx, 'POST', '/api-keys', {
      body: { name: `key ${n}`, roles: ['users:read'] },
    });
    assert.equal(response.statusCode, 201);
    secrets.push(response.json<{ key: string }>().key);
  }
  return secrets;
}

const sha256 = (secret: string) => createHash('sha256').update(secret).digest();

describe('API key secrets', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-secrets-'));
  const path = join(directory, 'tessera.db');
  let ctx: TestContext;
  let secrets: string[];
  let schema: string | undefined;

  before(async () => {
    if (TEST_STORE === 'postgres') {
      const store = await openTestPostgresStore();
      schema = store.schema;
      ctx = await buildTestApp({ store });
    } else {
      ctx = await buildTestApp({ store: openSqliteStore({ path }) });
    }
    secrets = [ctx.adminKey, ...(await issue(ctx, 100))];
  });
  after(async () => {
    await ctx.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('carry 256 random bits each', () => {
    assert.equal(new Set(secrets).size, secrets.length);
    const bits = secrets.map((secret) => {
      const random = Buffer.from(SECRET.exec(secret)![1]!, 'base64url');
      assert.equal(random.length, 32);
      return random;
    });
    // Each of the 256 bit positions takes both values across 101 keys: none is fixed. (A fair
    // bit stays the same in all of them with probability 2^-100.)
    for (let bit = 0; bit < 256; bit += 1) {
      const ones = bits.filter((bytes) => (bytes[bit >> 3]! >> (bit & 7)) & 1).length;
      assert.ok(ones > 0 && ones < bits.length, `bit ${bit} is always ${ones === 0 ? 0 : 1}`);
    }
  });

  it('are stored only as SHA-256 digests', async () => {
    let stored: Buffer;
    if (TEST_STORE === 'postgres') {
      // Every column of every row of every table in the store's schema, as text.
      const client = new pg.Client({ connectionString: databaseUrlFor(schema!, POSTGRES_URL) });
      await client.connect();
      try {
        const tables = await client.query<{ table_name: string }>(
          'select table_name from information_schema.tables where table_schema = $1',
          [schema],
        );
        assert.ok(tables.rows.some((row) => row.table_name === 'api_keys'));
        const dumps: string[] = [];
        for (const { table_name: table } of tables.rows) {
          const rows = await client.query(`select row_to_json(t)::text as row from "${table}" t`);
          dumps.push(...rows.rows.map((row: { row: string }) => row.row));
        }
        stored = Buffer.from(dumps.join('\n'));
      } finally {
        await client.end();
      }
    } else {
      // The bytes on disk: the database file and its write-ahead log.
      stored = Buffer.concat(
        [path, `${path}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file)),
      );
    }
    for (const secret of secrets) {
      const random = SECRET.exec(secret)![1]!;
      assert.equal(stored.includes(random), false, 'a secret is stored');
      assert.equal(stored.includes(Buffer.from(random, 'base64url')), false, 'its bytes are');
      const digest = sha256(secret);
      assert.ok(
        stored.includes(digest.toString('hex')) || stored.includes(digest),
        'its SHA-256 digest is stored',
      );
    }
  });
});
