// `tessera secret-key …`: where the secrets sealed with IAM_SECRET_KEY stand, and re-sealing
// them under a new key after a rotation (IAM_SECRET_KEY_PREVIOUS holding the old one).

import type { Command } from 'commander';
import { CLI_ORIGIN } from '../modules/changes.js';
import type { SecretInventory } from '../modules/secret-key/secret-key.service.js';
import type { CliContext } from './context.js';

export function registerSecretKeyCommands(program: Command, cli: CliContext): void {
  const secretKey = program
    .command('secret-key')
    .description('the key that seals signing keys and webhook secrets (IAM_SECRET_KEY)');

  secretKey
    .command('status')
    .description('which key seals the stored secrets (key ids, never the keys)')
    .option('--json', 'print the status as JSON')
    .action(async (options: { json?: boolean }) => {
      const inventory = await cli.withStore((store) => cli.servicesFor(store).secrets.inventory());
      if (options.json === true) cli.printJson(toJson(inventory));
      else printInventory(cli, inventory);
    });

  secretKey
    .command('reseal')
    .description(
      'seal every stored secret with IAM_SECRET_KEY (opening old ones with IAM_SECRET_KEY_PREVIOUS)',
    )
    .option('--json', 'print what was re-sealed as JSON')
    .addHelpText(
      'after',
      '\nRotating the key: give every instance the new IAM_SECRET_KEY and the old one as\n' +
        'IAM_SECRET_KEY_PREVIOUS, restarting them one by one; then run this once; then remove\n' +
        'IAM_SECRET_KEY_PREVIOUS, restarting them one by one again (docs/operations.md).',
    )
    .action(async (options: { json?: boolean }) => {
      const result = await cli.withStore((store) =>
        cli.servicesFor(store).secrets.reseal(CLI_ORIGIN),
      );
      if (options.json === true) {
        cli.printJson({
          key_id: result.keyId,
          previous_key_id: result.previousKeyId,
          signing_keys: result.signingKeys,
          webhook_secrets: result.webhookSecrets,
          in_clear: result.inClear,
        });
        return;
      }
      const total = result.signingKeys + result.webhookSecrets;
      if (total === 0) {
        cli.print(
          `Nothing to re-seal: every stored secret is sealed with IAM_SECRET_KEY (key id ${result.keyId}).`,
        );
        return;
      }
      const from = [
        ...(result.previousKeyId === null ? [] : [`key id ${result.previousKeyId}`]),
        ...(result.inClear > 0 ? [`clear text (${result.inClear})`] : []),
      ].join(' and ');
      cli.print(
        `Re-sealed ${count(result.signingKeys, 'signing key')} and ${count(result.webhookSecrets, 'webhook secret')} ` +
          `with IAM_SECRET_KEY (key id ${result.keyId}), from ${from}; recorded as a secret_key.resealed event.`,
      );
      cli.print(
        'IAM_SECRET_KEY_PREVIOUS is no longer needed: remove it, restarting the instances one by one.',
      );
    });
}

function printInventory(cli: CliContext, inventory: SecretInventory): void {
  cli.print(`IAM_SECRET_KEY: ${describeKey(inventory.currentKeyId)}`);
  cli.print(`IAM_SECRET_KEY_PREVIOUS: ${describeKey(inventory.previousKeyId)}`);
  cli.print(
    `Stored: ${count(inventory.signingKeys, 'signing key')} and ${count(inventory.webhookSecrets, 'webhook secret')}, of which`,
  );
  cli.print(`  sealed with IAM_SECRET_KEY: ${inventory.sealedWithCurrent}`);
  if (inventory.previousKeyId !== null) {
    cli.print(`  sealed with IAM_SECRET_KEY_PREVIOUS: ${inventory.sealedWithPrevious}`);
  }
  cli.print(`  in clear: ${inventory.inClear}`);
  for (const [keyId, n] of Object.entries(inventory.sealedWithOther)) {
    cli.print(`  sealed with key id ${keyId}, which neither key is: ${n}`);
  }
  const stale = inventory.sealedWithPrevious + inventory.inClear;
  if (inventory.currentKeyId !== null && stale > 0) {
    cli.print('Run tessera secret-key reseal to seal them all with IAM_SECRET_KEY.');
  } else if (inventory.previousKeyId !== null && inventory.sealedWithPrevious === 0) {
    cli.print('Nothing is sealed with IAM_SECRET_KEY_PREVIOUS: it can be removed.');
  }
}

function describeKey(keyId: string | null): string {
  return keyId === null ? 'not set' : `key id ${keyId}`;
}

function toJson(inventory: SecretInventory) {
  return {
    key_id: inventory.currentKeyId,
    previous_key_id: inventory.previousKeyId,
    signing_keys: inventory.signingKeys,
    webhook_secrets: inventory.webhookSecrets,
    sealed_with_key: inventory.sealedWithCurrent,
    sealed_with_previous_key: inventory.sealedWithPrevious,
    in_clear: inventory.inClear,
    sealed_with_other_keys: inventory.sealedWithOther,
  };
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
