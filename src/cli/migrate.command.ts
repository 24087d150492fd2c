// `tessera migrate`: apply pending migrations, or (--status) show which the database has and
// which it lacks, without changing anything.

import type { Command } from 'commander';
import { packageVersion } from '../server.js';
import { NewerSchemaError } from '../store/errors.js';
import type { SchemaStatus } from '../store/store.js';
import { type CliContext, describeDatabase } from './context.js';

export function registerMigrateCommands(program: Command, cli: CliContext): void {
  program
    .command('migrate')
    .description('create the database if needed and apply pending migrations')
    .option('--status', 'list applied and pending migrations; change nothing')
    .option('--json', 'with --status: print the status as JSON')
    .addHelpText(
      'after',
      '\nMigrations are forward-only. A database written by a newer Tessera is refused: run that\n' +
        'version, or restore a backup taken before the upgrade (docs/operations.md).',
    )
    .action(async (options: { status?: boolean; json?: boolean }) => {
      if (options.status === true) {
        await printStatus(cli, options.json === true);
        return;
      }
      const { before, after } = await cli.withStore(
        async (store) => {
          const before = await store.schemaStatus();
          await store.migrate();
          return { before, after: await store.schemaStatus() };
        },
        { create: true, migrate: false },
      );
      const applied = before.pending.filter((name) => !after.pending.includes(name));
      if (applied.length > 0) {
        cli.print(`Applied ${count(applied.length, 'migration')}: ${applied.join(', ')}.`);
      }
      cli.print(`The database schema is up to date (${describeSchema(after)}).`);
    });
}

async function printStatus(cli: CliContext, json: boolean): Promise<void> {
  const status = await cli.withStore((store) => store.schemaStatus(), { migrate: false });
  const version = packageVersion();
  if (json) {
    cli.printJson({
      tessera_version: version,
      applied: status.applied.map(toJson),
      pending: status.pending,
      unknown: status.unknown.map(toJson),
    });
  } else {
    cli.print(`Tessera ${version}; database ${describeDatabase(cli.config().database)}`);
    const rows = [
      ...status.applied.map((migration) => ['applied', migration.name, migration.appliedAt]),
      ...status.pending.map((name) => ['pending', name, '']),
      ...status.unknown.map((migration) => ['unknown', migration.name, migration.appliedAt]),
    ];
    const width = Math.max(0, ...rows.map(([, name]) => name!.length));
    for (const [state, name, at] of rows) {
      cli.print(`${state!.padEnd(8)} ${name!.padEnd(width)}  ${at}`.trimEnd());
    }
    cli.print(
      status.pending.length === 0
        ? `Up to date: ${describeSchema(status)}.`
        : `${count(status.pending.length, 'migration')} pending: tessera migrate, or the next start, applies ${status.pending.length === 1 ? 'it' : 'them'}.`,
    );
  }
  // A database this build cannot run on: said last, on stderr, and the exit code says it too.
  if (status.unknown.length > 0) {
    throw new NewerSchemaError(status.unknown.map((migration) => migration.name));
  }
}

/** "11 migrations applied, the latest 0011_event_queue_unindexed". */
export function describeSchema(status: SchemaStatus): string {
  const latest = status.applied.at(-1);
  return latest === undefined
    ? 'no migration applied'
    : `${count(status.applied.length, 'migration')} applied, the latest ${latest.name}`;
}

function toJson(migration: { name: string; appliedAt: string }) {
  return { name: migration.name, applied_at: migration.appliedAt };
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
