// `tessera signing-keys …`: the keys that sign access tokens.

import { CLI_ORIGIN } from '../modules/changes.js';
import type { Command } from 'commander';
import type { SigningKeyStatus } from '../modules/tokens/signing-keys.service.js';
import type { CliContext } from './context.js';

export function registerSigningKeysCommands(program: Command, cli: CliContext): void {
  const signingKeys = program
    .command('signing-keys')
    .description('rotate, revoke and list the keys that sign access tokens');

  signingKeys
    .command('rotate')
    .description(
      'add a signing key (IAM_TOKEN_ALG); it signs after 10 minutes, the old one stays published',
    )
    .option('--json', 'print the new key as JSON')
    .action((options: { json?: boolean }) => rotateSigningKey(cli, options));

  signingKeys
    .command('revoke')
    .description(
      'remove a leaked signing key from the JWKS at once (a new key signs first when it was signing)',
    )
    .argument('<kid>', 'the key id, as in the JWKS')
    .option('--json', 'print the revoked and the signing key as JSON')
    .action((kid: string, options: { json?: boolean }) => revokeSigningKey(cli, kid, options));

  signingKeys
    .command('list')
    .description('list signing keys and their state (never the private keys)')
    .option('--json', 'print the keys as JSON')
    .action((options: { json?: boolean }) => listSigningKeys(cli, options));
}

function describeSigningKey(key: SigningKeyStatus) {
  const at = (epochMillis: number | null) =>
    epochMillis === null ? null : new Date(epochMillis).toISOString();
  return {
    kid: key.kid,
    algorithm: key.algorithm,
    state: key.state,
    created_at: at(key.createdAt),
    activates_at: at(key.activatesAt),
    retired_at: at(key.retiredAt),
    published_until: at(key.publishedUntil),
    revoked_at: at(key.revokedAt),
  };
}

async function rotateSigningKey(cli: CliContext, values: { json?: boolean }): Promise<void> {
  const added = await cli.withStore((store) =>
    cli.servicesFor(store).signingKeys.rotate(CLI_ORIGIN),
  );
  const summary = {
    kid: added.kid,
    algorithm: added.algorithm,
    activates_at: new Date(added.activatesAt).toISOString(),
  };
  if (values.json === true) {
    cli.printJson(summary);
    return;
  }
  cli.print(
    `Added signing key ${summary.kid} (${summary.algorithm}). It is published now and signs ` +
      `from ${summary.activates_at}; the current key stays published until its tokens expire.`,
  );
}

async function revokeSigningKey(
  cli: CliContext,
  kid: string,
  values: { json?: boolean },
): Promise<void> {
  const revocation = await cli.withStore((store) =>
    cli.servicesFor(store).signingKeys.revokeSigningKey(kid, CLI_ORIGIN),
  );
  const summary = {
    revoked: describeSigningKey(revocation.revoked),
    active: describeSigningKey(revocation.active),
  };
  if (values.json === true) {
    cli.printJson(summary);
    return;
  }
  cli.print(
    `Revoked signing key ${summary.revoked.kid}: it is no longer published, and the tokens it ` +
      `signed no longer verify. Key ${summary.active.kid} signs now.`,
  );
}

async function listSigningKeys(cli: CliContext, values: { json?: boolean }): Promise<void> {
  const keys = (
    await cli.withStore((store) => cli.servicesFor(store).signingKeys.listSigningKeys())
  ).map(describeSigningKey);
  if (values.json === true) {
    cli.printJson(keys);
    return;
  }
  if (keys.length === 0) {
    cli.print(
      'No signing keys yet: the server makes one when it first starts, ' +
        'or `tessera signing-keys rotate` adds one now.',
    );
    return;
  }
  cli.printTable(
    ['KID', 'ALG', 'STATE', 'CREATED', 'SIGNS FROM', 'PUBLISHED UNTIL', 'REVOKED'],
    keys.map((key) => [
      key.kid,
      key.algorithm,
      key.state,
      key.created_at ?? '-',
      key.activates_at ?? '-',
      // null while it signs or waits to: published for as long as it does.
      key.published_until ?? '-',
      key.revoked_at ?? '-',
    ]),
  );
}
