import { type Kysely, type Migration, Migrator } from 'kysely';
import { NewerSchemaError } from '../errors.js';
import type { AppliedMigration, SchemaStatus } from '../store.js';

/** Kysely's record of applied migrations (name, and when as an ISO text). */
const MIGRATION_TABLE = 'kysely_migration';

/**
 * Applies every pending migration, in name order, forward only. Kysely's Migrator records
 * each applied migration in `kysely_migration`. Serialising concurrent callers is the
 * dialect's job: each executor holds its own lock around this call (SQLite's write lock, a
 * PostgreSQL row lock) and asks for `disableTransactions`, its own transaction covering the
 * whole run. `migrationTableSchema` pins Kysely's bookkeeping tables to the schema migrated
 * (Kysely otherwise takes a table of that name in any schema as its own).
 *
 * A database that has a migration this build does not know was written by a newer Tessera:
 * NewerSchemaError, before anything is applied (no silent downgrade).
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
  options: { disableTransactions?: boolean; migrationTableSchema?: string } = {},
): Promise<void> {
  const status = schemaStatusOf(
    migrations,
    await readAppliedMigrations(db, options.migrationTableSchema),
  );
  if (status.unknown.length > 0) {
    throw new NewerSchemaError(status.unknown.map((migration) => migration.name));
  }
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
    disableTransactions: options.disableTransactions ?? false,
    // Migrations are numbered per piece of work and land in whatever order the work does
    // (0005 may be released before 0003); each touches its own tables and columns, so one
    // that arrives after a later-numbered one is applied then, not refused as out of order.
    allowUnorderedMigrations: true,
    ...(options.migrationTableSchema === undefined
      ? {}
      : { migrationTableSchema: options.migrationTableSchema }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error');
    // Name the cause: an error before any migration ran (Kysely's own bookkeeping) has no name.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      failed === undefined
        ? `preparing migrations failed: ${reason}`
        : `migration ${failed.migrationName} failed: ${reason}`,
      { cause: error },
    );
  }
}

/** The migrations recorded in the database, in name order; none when it was never migrated. */
export async function readAppliedMigrations(
  db: Kysely<unknown>,
  migrationTableSchema?: string,
): Promise<AppliedMigration[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  const recorded = tables.some(
    (table) =>
      table.name === MIGRATION_TABLE &&
      (migrationTableSchema === undefined || table.schema === migrationTableSchema),
  );
  if (!recorded) return [];
  const scoped = (
    migrationTableSchema === undefined ? db : db.withSchema(migrationTableSchema)
  ) as Kysely<{ kysely_migration: { name: string; timestamp: string } }>;
  const rows = await scoped
    .selectFrom(MIGRATION_TABLE)
    .select(['name', 'timestamp'])
    .orderBy('name')
    .execute();
  return rows.map((row) => ({ name: row.name, appliedAt: row.timestamp }));
}

/** The database's applied migrations against the ones this build knows. */
export function schemaStatusOf(
  known: Record<string, Migration>,
  applied: readonly AppliedMigration[],
): SchemaStatus {
  const names = new Set(applied.map((migration) => migration.name));
  return {
    applied: applied.filter((migration) => Object.hasOwn(known, migration.name)),
    pending: Object.keys(known)
      .sort()
      .filter((name) => !names.has(name)),
    unknown: applied.filter((migration) => !Object.hasOwn(known, migration.name)),
  };
}
