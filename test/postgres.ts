// PostgreSQL for tests: whether one is reachable, and a fresh schema per store so tests never
// see each other's rows. `npm test` (scripts/run-tests.mjs) creates a database for the run and
// passes it in TESSERA_TEST_DATABASE_URL; run alone, a test file uses the machine's `test`
// database. Either way every schema made here is dropped when the test process ends.
//
// In CI (CI=true) a missing PostgreSQL is a failure; elsewhere the tests that need it are
// skipped with the reason printed.

import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import {
  type PostgresStoreOptions,
  openPostgresStore,
} from '../src/store/postgres/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { skipUnless } from './required-service.js';

export const POSTGRES_URL =
  process.env.TESSERA_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let availability: Promise<string | undefined> | undefined;

/** Undefined when PostgreSQL answers at POSTGRES_URL; otherwise why it does not. */
export function postgresUnavailable(): Promise<string | undefined> {
  availability ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return undefined;
    } catch (error) {
      return `PostgreSQL at ${redact(POSTGRES_URL)} is not reachable (${(error as Error).message})`;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return availability;
}

/**
 * The `skip` option for a describe() that needs PostgreSQL: false when it is there; the reason
 * (printed by the runner) when it is not. In CI its absence throws instead: never a silent skip.
 */
export async function skipWithoutPostgres(): Promise<string | false> {
  return skipUnless('PostgreSQL', await postgresUnavailable());
}

let admin: pg.Pool | undefined;
const schemas = new Set<string>();

// Registered at load, so it belongs to the file's root: it runs once, after every test of it.
after(async () => {
  // Schemas still present (a test that failed before its own clean-up) go now.
  for (const schema of schemas) await dropSchema(schema);
  await admin?.end();
  admin = undefined;
});

function adminPool(): pg.Pool {
  admin ??= new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  return admin;
}

/** Creates an empty schema and returns its name. */
export async function createTestSchema(): Promise<string> {
  const schema = `tessera_test_${process.pid}_${randomBytes(6).toString('hex')}`;
  await adminPool().query(`create schema ${schema}`);
  schemas.add(schema);
  return schema;
}

export async function dropSchema(schema: string): Promise<void> {
  schemas.delete(schema);
  await adminPool().query(`drop schema if exists ${schema} cascade`);
}

/** A DATABASE_URL for a Tessera process, with its tables in `schema`. */
export function databaseUrlFor(schema: string, base = POSTGRES_URL): string {
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/**
 * A PostgreSQL store in a schema of its own, unmigrated. The schema is dropped when the store
 * closes (or, failing that, when the test process ends).
 */
export async function openTestPostgresStore(
  options: Partial<PostgresStoreOptions> & { schema?: string } = {},
): Promise<Store & { schema: string }> {
  const schema = options.schema ?? (await createTestSchema());
  const store = openPostgresStore({ url: POSTGRES_URL, ...options, schema });
  const close = store.close.bind(store);
  return Object.assign(store, {
    schema,
    close: async () => {
      await close();
      if (options.schema === undefined) await dropSchema(schema);
    },
  });
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}
