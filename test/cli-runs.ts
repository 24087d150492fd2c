// The `tessera` command run in-process on a SQLite file, and a database as an earlier build
// left it: what the specs of the operators' commands (backups, upgrades, the secret key) share.

import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { runCli } from '../src/cli/main.js';
import { migrateToLatest } from '../src/store/sql/migrate.js';
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `tessera <args>` on the SQLite database at `path`, with `env` added to this process's. */
export async function tesseraOn(
  path: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { ...process.env, DATABASE_URL: `sqlite:${path}`, ...env },
  });
  return { code, stdout, stderr };
}

/** Every migration this build knows, in name order. */
export const MIGRATION_NAMES = Object.keys(sqliteMigrations).sort();

/** Creates at `path` a database migrated by a build that had every migration but the latest. */
export async function olderDatabase(path: string): Promise<void> {
  const database = new Database(path);
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  await migrateToLatest(
    db,
    Object.fromEntries(MIGRATION_NAMES.slice(0, -1).map((name) => [name, sqliteMigrations[name]!])),
  );
  await db.destroy();
}
