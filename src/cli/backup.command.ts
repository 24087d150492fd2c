// `tessera backup` and `tessera restore`: the SQLite database copied while the service serves,
// and put back while it is stopped. On PostgreSQL both say to use pg_dump and pg_restore.

import type { Command } from 'commander';
import { packageVersion } from '../server.js';
import { backupInWorker } from '../store/sqlite/sqlite-backup.js';
import { sqliteMigrations } from '../store/sqlite/sqlite-migrations.js';
import { restoreSqliteDatabase } from '../store/sqlite/sqlite-restore.js';
import type { CliContext } from './context.js';

export function registerBackupCommands(program: Command, cli: CliContext): void {
  program
    .command('backup')
    .description('copy the SQLite database while the service serves (verified, atomic)')
    .requiredOption('-o, --output <file>', 'where the backup goes (replaced if it exists)')
    .option('--json', 'print what was written as JSON')
    .addHelpText(
      'after',
      '\nThe copy is consistent (SQLite online backup), checked with integrity_check, records the\n' +
        'Tessera version and schema inside, and appears at <file> only once complete.\n' +
        'Keep IAM_SECRET_KEY too: without it the signing keys in a backup do not open.\n' +
        'On PostgreSQL, use pg_dump (docs/operations.md).',
    )
    .action(async (options: { output: string; json?: boolean }) => {
      const source = sqlitePath(cli, 'backup');
      // In a worker thread at the lowest priority, as the service's own backups: the copy and
      // its check yield the processor to the server they share the machine with.
      const summary = await backupInWorker({
        source,
        output: options.output,
        tesseraVersion: packageVersion(),
      }).done;
      const { record } = summary;
      if (options.json === true) {
        cli.printJson({
          path: summary.path,
          bytes: summary.bytes,
          duration_ms: Math.round(summary.durationMs),
          tessera_version: record.tesseraVersion,
          created_at: record.createdAt,
          migrations: record.migrations,
        });
        return;
      }
      cli.print(
        `Backed up ${source} to ${summary.path}: ${formatBytes(summary.bytes)}, ` +
          `integrity ok, Tessera ${record.tesseraVersion}, ${describeMigrations(record.migrations)}, ` +
          `in ${(summary.durationMs / 1000).toFixed(1)} s.`,
      );
    });

  program
    .command('restore')
    .description('replace the SQLite database with a backup (stop the service first)')
    .argument('<file>', 'a backup written by tessera backup (or a scheduled backup)')
    .addHelpText(
      'after',
      '\nThe backup is checked (integrity, schema) first; one from a newer schema is refused. The\n' +
        'database it replaces is kept beside it as <database>.replaced-<time>. Refused while a\n' +
        'server or another tessera command has the database open.\n' +
        'On PostgreSQL, use pg_restore (docs/operations.md).',
    )
    .action((file: string) => {
      const target = sqlitePath(cli, 'restore');
      const result = restoreSqliteDatabase({
        backup: file,
        target,
        knownMigrations: Object.keys(sqliteMigrations).sort(),
      });
      const { record, migrations } = result.backup;
      cli.print(
        `Checked ${file}: integrity ok; ${record === null ? 'a Tessera database (no backup record)' : `taken ${record.createdAt} by Tessera ${record.tesseraVersion}`}; ${describeMigrations(migrations)}.`,
      );
      cli.print(`Restored it to ${result.target}.`);
      cli.print(
        result.replaced === null
          ? 'There was no database there before.'
          : `The database it replaced is at ${result.replaced}.`,
      );
      cli.print(
        result.pending.length === 0
          ? 'Its schema is this version’s: start Tessera.'
          : `Its schema is older: the next start (or tessera migrate) applies ${result.pending.length === 1 ? 'migration' : 'migrations'} ${result.pending.join(', ')}.`,
      );
    });
}

/** The SQLite file the command works on; a one-line refusal on PostgreSQL or in memory. */
function sqlitePath(cli: CliContext, command: 'backup' | 'restore'): string {
  const { database } = cli.config();
  if (database.kind === 'postgres') {
    throw new Error(
      command === 'backup'
        ? 'backup works on SQLite only; on PostgreSQL back up with pg_dump --format=custom, and keep IAM_SECRET_KEY with it (docs/operations.md)'
        : 'restore works on SQLite only; on PostgreSQL restore a pg_dump with pg_restore (docs/operations.md)',
    );
  }
  if (database.path === ':memory:') {
    throw new Error(
      `DATABASE_URL is sqlite::memory:, which has no file to ${command === 'backup' ? 'back up' : 'restore into'}`,
    );
  }
  return database.path;
}

/** "11 migrations, the latest 0011_event_queue_unindexed". */
function describeMigrations(migrations: readonly string[]): string {
  const latest = migrations.at(-1);
  return `schema: ${migrations.length} ${migrations.length === 1 ? 'migration' : 'migrations'}${latest === undefined ? '' : `, the latest ${latest}`}`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KiB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}
