// `tessera`: the operator's command line. Thin: parse arguments (commander), then call the same
// services the HTTP API uses, on the store named by DATABASE_URL. runCli runs one command line
// in-process, on the output and environment it is given; run as a program, this file (or
// bin/tessera.js) runs it on the process's own.

import '../supported-node.js';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Help } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { describeFailure } from '../failures.js';
import { registerTypeBoxFormats } from '../http/formats.js';
import { ProblemError } from '../problems.js';
import { serve } from '../cluster/serve.js';
import { packageVersion } from '../server.js';
import { type CliContext, type CliIo, UsageError, createCliContext } from './context.js';
import { registerClusterSettingsCommands } from './cluster-settings.command.js';
import { registerBackupCommands } from './backup.command.js';
import { registerEventsCommands } from './events.command.js';
import { registerKeysCommands } from './keys.command.js';
import { registerMigrateCommands } from './migrate.command.js';
import { registerSecretKeyCommands } from './secret-key.command.js';
import { registerSigningKeysCommands } from './signing-keys.command.js';
import { registerUsersCommands } from './users.command.js';

export type { CliIo } from './context.js';

/** The command groups, in the order --help lists them. A new command adds one line here. */
const COMMANDS: ((program: Command, cli: CliContext) => void)[] = [
  registerServerCommands,
  registerMigrateCommands,
  registerBackupCommands,
  registerKeysCommands,
  registerSigningKeysCommands,
  registerSecretKeyCommands,
  registerEventsCommands,
  registerUsersCommands,
  registerClusterSettingsCommands,
];

function registerServerCommands(program: Command, cli: CliContext): void {
  program
    .command('serve')
    .description('serve the API (what npm start runs)')
    .addHelpText(
      'after',
      '\nConfigured with environment variables (PORT, HOST, DATABASE_URL, …): see the README.',
    )
    .action(async () => {
      try {
        await serve(loadConfig(cli.io.env));
      } catch (error) {
        if (error instanceof ConfigError) throw error;
        throw new Error(`cannot start: ${describeFailure(error)}`, { cause: error });
      }
    });
}

/** Builds the program for one run: every command, writing to `io`, never exiting the process. */
function buildProgram(cli: CliContext): Command {
  const program = new Command('tessera')
    .description('Tessera: identity and access management. The operator’s commands.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpCommand('help [command]', 'show the help of a command')
    .exitOverride()
    .showSuggestionAfterError()
    .configureHelp({
      // A group lists as `keys <command>`, not as the catch-all argument it takes.
      subcommandTerm: (command) =>
        command.commands.length > 0
          ? `${command.name()} <command>`
          : new Help().subcommandTerm(command),
    })
    .configureOutput({
      writeOut: (text) => cli.io.stdout.write(text),
      writeErr: (text) => cli.io.stderr.write(text),
      // One line, as every other error: "tessera: unknown option '--nope' (Did you mean …?)".
      outputError: (text, write) =>
        write(
          `tessera: ${text
            .replace(/^error: /, '')
            .trim()
            .replaceAll('\n', ' ')}\n`,
        ),
    })
    .addHelpText(
      'after',
      '\nThe database is DATABASE_URL (default sqlite:./data/tessera.db). Only serve and migrate\n' +
        'create it; the other commands refuse a database that does not exist.\n' +
        'Run tessera <command> --help for the options of a command.',
    );
  for (const register of COMMANDS) register(program, cli);
  for (const group of [program, ...program.commands]) {
    if (group.commands.length === 0) continue;
    // Whatever follows an unknown command (`tessera key list --json`) is not the complaint:
    // the command is. Hence a variadic argument that takes the options after it too, so
    // commander says neither "too many arguments" nor "unknown option".
    group.usage('[options] <command>').enablePositionalOptions().passThroughOptions();
    group.argument('[command...]').action((given: string[]) => {
      const [first] = given;
      if (first === undefined) {
        // Nothing to run: the usage, with every command, where errors go (exit code 2).
        group.outputHelp({ error: true });
        throw new CommanderError(2, 'tessera.usage', '');
      }
      // A group run with an unknown subcommand names the ones that exist, in one line.
      const choices = group.commands.map((command) => command.name());
      const prefix = group === program ? '' : `${group.name()} `;
      const near = closestChoice(first, choices);
      throw new UsageError(
        `unknown command "${prefix}${first}"${near === undefined ? '' : ` (did you mean ${prefix}${near}?)`}; ` +
          `choose ${choices.join(', ')} (see tessera ${prefix}--help)`,
      );
    });
  }
  return program;
}

/** The choice within two edits of `given` (`key` → `keys`), or undefined. */
function closestChoice(given: string, choices: readonly string[]): string | undefined {
  let best: { choice: string; distance: number } | undefined;
  for (const choice of choices) {
    const distance = editDistance(given, choice);
    if (distance <= 2 && (best === undefined || distance < best.distance)) {
      best = { choice, distance };
    }
  }
  return best?.choice;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character. */
function editDistance(from: string, to: string): number {
  let previous = Array.from({ length: to.length + 1 }, (_, index) => index);
  for (let row = 1; row <= from.length; row++) {
    const current = [row];
    for (let column = 1; column <= to.length; column++) {
      const substitution = previous[column - 1]! + (from[row - 1] === to[column - 1] ? 0 : 1);
      current.push(Math.min(previous[column]! + 1, current[column - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[to.length]!;
}

/**
 * Runs one command line (`argv` without the program name) and resolves to its exit code:
 * 0 done, 1 failed, 2 the command line is wrong. Errors are one line on stderr.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  registerTypeBoxFormats();
  const cli = createCliContext(io);
  try {
    await buildProgram(cli).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    // Commander has written its own message (or the help, or the version) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    const message =
      error instanceof ProblemError
        ? error.detail
        : error instanceof Error
          ? error.message
          : String(error);
    io.stderr.write(`tessera: ${message}\n`);
    return error instanceof UsageError || error instanceof ConfigError ? 2 : 1;
  }
}

/** True when this file is the program node was started with (not when imported). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === import.meta.url;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  process.exitCode = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  });
}
