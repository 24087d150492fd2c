// `tessera cluster-settings …`: the settings every instance on the database acts on
// (docs/architecture.md, "What instances share"). Changing one is an operator's deliberate act:
// an instance's environment can only narrow what the cluster allows, never widen it.

import type { Command } from 'commander';
import {
  WIDENING_SETTINGS,
  changeClusterSetting,
  isWideningSettingName,
  readClusterSettings,
} from '../modules/cluster-settings/cluster-settings.service.js';
import { CLI_ORIGIN } from '../modules/changes.js';
import { type CliContext, UsageError } from './context.js';

const NAMES = Object.keys(WIDENING_SETTINGS).join(', ');

export function registerClusterSettingsCommands(program: Command, cli: CliContext): void {
  const settings = program
    .command('cluster-settings')
    .description('show or change the security settings every instance on the database follows');

  settings
    .command('show')
    .description("print the cluster's settings (null: no instance has started yet)")
    .option('--json', 'print them as JSON')
    .action((options: { json?: boolean }) => showClusterSettings(cli, options));

  settings
    .command('set')
    .description(
      'change a setting for every instance (PostgreSQL); each acts on it within 10 s, when its own environment allows it too',
    )
    .argument('<name>', NAMES)
    .argument('<value>', 'true or false')
    .action((name: string, value: string) => setClusterSetting(cli, name, value));
}

async function showClusterSettings(cli: CliContext, options: { json?: boolean }): Promise<void> {
  const settings = await cli.withStore((store) => readClusterSettings(store));
  if (options.json === true) {
    cli.printJson(settings);
    return;
  }
  for (const [name, value] of Object.entries(settings)) {
    const variable = WIDENING_SETTINGS[name as keyof typeof WIDENING_SETTINGS].variable;
    cli.print(`${name}  ${value ?? 'not decided yet'}  (instances: ${variable})`);
  }
}

async function setClusterSetting(cli: CliContext, name: string, value: string): Promise<void> {
  if (!isWideningSettingName(name)) {
    throw new UsageError(`unknown setting "${name}"; choose ${NAMES}`);
  }
  if (value !== 'true' && value !== 'false') {
    throw new UsageError(`the value of ${name} must be true or false, not "${value}"`);
  }
  const { variable } = WIDENING_SETTINGS[name];
  const before = await cli.withStore(async (store) => {
    if (store.kind === 'sqlite') {
      // One instance serves a SQLite database, and its environment decides (stored at start).
      throw new Error(
        `on SQLite the service's own ${variable} decides ${name}; set it there and restart`,
      );
    }
    const current = (await readClusterSettings(store))[name];
    const changed = await changeClusterSetting(
      store,
      name,
      value === 'true',
      CLI_ORIGIN,
      Date.now(),
    );
    return changed ? current : value === 'true';
  });
  if (String(before) === value) {
    cli.print(`${name} is ${value} already; nothing changed.`);
    return;
  }
  cli.print(
    `${name}: ${before ?? 'not decided'} -> ${value}, recorded as a cluster_setting.changed ` +
      `event. Running instances act on it within 10 s` +
      (value === 'true' ? `, those whose own ${variable} is true as well.` : '.'),
  );
}
