// `tessera keys …`: API keys, minted and managed by the operator.

import { CLI_ORIGIN } from '../modules/changes.js';
import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { createBodyChecker } from '../http/validation.js';
import { CreateApiKeyBody, toApiKeyResource } from '../modules/api-keys/api-keys.schemas.js';
import { invalid } from '../problems.js';
import { ROLES, isRole } from '../roles.js';
import { type CliContext, UNIT_MS, UsageError, parseDuration, splitList } from './context.js';

const MAX_OVERLAP_MS = UNIT_MS.w;

export function registerKeysCommands(program: Command, cli: CliContext): void {
  const keys = program
    .command('keys')
    .description('create, list, rotate and revoke API keys')
    .addHelpText('after', '\nSecrets are printed once, when made; the database keeps a digest.');

  keys
    .command('create')
    .description('create an API key and print its secret once')
    .requiredOption('--name <name>', 'a name to recognise the key by')
    .requiredOption('--roles <roles>', `comma-separated, from: ${ROLES.join(', ')}`)
    .option('--applications <ids>', 'comma-separated client_ids the key is restricted to')
    .option('--expires-in <duration>', 'e.g. 30d, 12h (units s, m, h, d, w); default: never')
    .option('--json', 'print the record and its secret as JSON')
    .action(
      (options: {
        name: string;
        roles: string;
        applications?: string;
        expiresIn?: string;
        json?: boolean;
      }) => createKey(cli, options),
    );

  keys
    .command('list')
    .description('list API keys (never their secrets)')
    .option('--include-revoked', 'show revoked keys too')
    .option('--json', 'print the records as JSON')
    .action((options: { includeRevoked?: boolean; json?: boolean }) => listKeys(cli, options));

  keys
    .command('rotate')
    .description('give a key a new secret, printed once; the old one keeps working for --overlap')
    .argument('<id>', 'the key id')
    .option('--overlap <duration>', 'how long the old secret still works: 0 to 7d', '1d')
    .option('--json', 'print the record and its new secret as JSON')
    .action((id: string, options: { overlap: string; json?: boolean }) =>
      rotateKey(cli, id, options),
    );

  keys
    .command('revoke')
    .description('revoke an API key')
    .argument('<id>', 'the key id')
    .action((id: string) => revokeKey(cli, id));
}

async function createKey(
  cli: CliContext,
  values: {
    name: string;
    roles: string;
    applications?: string;
    expiresIn?: string;
    json?: boolean;
  },
): Promise<void> {
  const roles = splitList(values.roles);
  if (!roles.every(isRole)) {
    const unknown = roles.filter((role) => !isRole(role));
    throw new UsageError(
      `unknown role(s): ${unknown.join(', ')}; the roles are ${ROLES.join(', ')}`,
    );
  }
  const applications = values.applications === undefined ? null : splitList(values.applications);
  const body = { name: values.name, roles, applications, expires_at: null };
  const errors = createBodyChecker()(CreateApiKeyBody, body);
  if (errors.length > 0) {
    // The API's own wording, with command-line names: "applications.0" → --applications.
    const described = invalid(errors).detail.replace(/"(\w+)(?:\.\d+)?"/g, '--$1');
    throw new UsageError(`invalid key: ${described}`);
  }
  const expiresIn =
    values.expiresIn === undefined ? null : parseDuration(values.expiresIn, '--expires-in', '30d');

  const issued = await cli.withStore((store) =>
    cli.servicesFor(store).apiKeys.createApiKey(
      'operator',
      {
        name: values.name.trim(),
        roles,
        applications,
        expiresAt: expiresIn === null ? null : systemClock.now() + expiresIn,
      },
      CLI_ORIGIN,
    ),
  );
  const resource = toApiKeyResource(issued.record);
  if (values.json === true) {
    cli.printJson({ ...resource, key: issued.secret });
    return;
  }
  cli.print(
    [
      `Created API key ${resource.id} (${resource.name})`,
      `  roles:        ${resource.roles.join(', ')}`,
      `  applications: ${resource.applications?.join(', ') ?? 'all'}`,
      `  expires:      ${resource.expires_at ?? 'never'}`,
      '',
      'Secret (shown only now; store it safely):',
      issued.secret,
    ].join('\n'),
  );
}

async function listKeys(
  cli: CliContext,
  values: { includeRevoked?: boolean; json?: boolean },
): Promise<void> {
  const filter = { includeRevoked: values.includeRevoked === true };
  const keys = await cli.withStore(async (store) => {
    const apiKeys = cli.servicesFor(store).apiKeys;
    const all = [];
    for (let page = await apiKeys.listApiKeys('operator', filter, null, 1000); ;) {
      all.push(...page);
      if (page.length < 1000) return all;
      page = await apiKeys.listApiKeys('operator', filter, page.at(-1)!.id, 1000);
    }
  });
  const resources = keys.map(toApiKeyResource);
  if (values.json === true) {
    cli.printJson(resources);
    return;
  }
  if (resources.length === 0) {
    cli.print('No API keys.');
    return;
  }
  const rows = resources.map((key) => [
    key.id,
    key.name,
    key.roles.join(','),
    key.applications?.join(',') ?? 'all',
    key.expires_at ?? 'never',
    key.last_used_at ?? 'never',
    ...(filter.includeRevoked ? [key.revoked_at ?? 'no'] : []),
  ]);
  const header = ['ID', 'NAME', 'ROLES', 'APPLICATIONS', 'EXPIRES', 'LAST USED'];
  if (filter.includeRevoked) header.push('REVOKED');
  cli.printTable(header, rows);
}

async function rotateKey(
  cli: CliContext,
  id: string,
  values: { overlap: string; json?: boolean },
): Promise<void> {
  const overlapMs = values.overlap === '0' ? 0 : parseDuration(values.overlap, '--overlap', '1d');
  if (overlapMs > MAX_OVERLAP_MS) throw new UsageError('--overlap must be at most 7d');
  const rotated = await cli.withStore((store) =>
    cli.servicesFor(store).apiKeys.rotateApiKey('operator', id, overlapMs, CLI_ORIGIN),
  );
  const resource = toApiKeyResource(rotated.record);
  if (values.json === true) {
    cli.printJson({ ...resource, key: rotated.secret });
    return;
  }
  cli.print(
    [
      `Rotated API key ${resource.id} (${resource.name}); the previous secret works until ${resource.previous_expires_at}.`,
      '',
      'New secret (shown only now; store it safely):',
      rotated.secret,
    ].join('\n'),
  );
}

async function revokeKey(cli: CliContext, id: string): Promise<void> {
  await cli.withStore((store) =>
    cli.servicesFor(store).apiKeys.revokeApiKey('operator', id, CLI_ORIGIN),
  );
  cli.print(`Revoked API key ${id}.`);
}
