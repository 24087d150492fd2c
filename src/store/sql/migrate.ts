import { type Kysely, type Migration, Migrator } from 'kysely';

/**
 * Applies every pending migration, in name order, forward only. Kysely's Migrator records
 * each applied migration in `kysely_migration`. Serialising concurrent callers is the
 * dialect's job: the SQLite executor holds the database's write lock around this call (and
 * then asks for `disableTransactions`, its own transaction covering the whole run).
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
  options: { disableTransactions?: boolean } = {},
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
    disableTransactions: options.disableTransactions ?? false,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed`, { cause: error });
  }
}
