import { type Kysely, type Migration, Migrator } from 'kysely';

/**
 * Applies every pending migration, in name order, forward only. Kysely's Migrator records
 * each applied migration in `kysely_migration`. Serialising concurrent callers is the
 * dialect's job: each executor holds its own lock around this call (SQLite's write lock, a
 * PostgreSQL row lock) and asks for `disableTransactions`, its own transaction covering the
 * whole run. `migrationTableSchema` pins Kysely's bookkeeping tables to the schema migrated
 * (Kysely otherwise takes a table of that name in any schema as its own).
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
  options: { disableTransactions?: boolean; migrationTableSchema?: string } = {},
): Promise<void> {
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
