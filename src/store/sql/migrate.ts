import { type Kysely, type Migration, Migrator } from 'kysely';

/**
 * Applies every pending migration, in name order, forward only. Kysely's Migrator records
 * each applied migration in `kysely_migration` and holds its lock while it runs, so
 * instances starting together apply each migration exactly once.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed`, { cause: error });
  }
}
