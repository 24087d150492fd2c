// `tessera`: the operator's command line. Thin: parse arguments, then call the same services
// the HTTP API uses, on the store named by DATABASE_URL.

import { CLI_ORIGIN } from '../modules/changes.js';
import '../supported-node.js';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createServices } from '../app.js';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { registerTypeBoxFormats } from '../http/formats.js';
import { createBodyChecker } from '../http/validation.js';
import { CreateApiKeyBody, toApiKeyResource } from '../modules/api-keys/api-keys.schemas.js';
import { ProblemError, invalid } from '../problems.js';
import { isRole } from '../roles.js';
import type { SigningKeyStatus } from '../modules/tokens/signing-keys.service.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';

const USAGE = `Usage: tessera <command>

Commands:
  serve                                   serve the API (what npm start runs)
  migrate                                 apply pending database migrations
  keys create --name N --roles r1,r2 [--applications a,b] [--expires-in 30d] [--json]
                                          create an API key and print its secret once
  keys list [--include-revoked] [--json]  list API keys (never their secrets)
  keys rotate ID [--overlap 1d] [--json]  give a key a new secret, printed once; the old one
                                          keeps working for --overlap (0 to 7d, default 1d)
  keys revoke ID                          revoke an API key
  signing-keys rotate [--json]            add a token signing key (IAM_TOKEN_ALG); it signs
                                          after 10 minutes, the old one stays published
  signing-keys revoke KID [--json]        remove a leaked signing key from the JWKS at once
                                          (a new key signs first when it was signing)
  signing-keys list [--json]              list signing keys and their state (never the private keys)

The database is DATABASE_URL (default sqlite:./data/tessera.db). Only serve and migrate
create it; the other commands refuse a database that does not exist.`;

/** A mistake in the command line: reported in one line, exit code 2. */
class UsageError extends Error {}

const DURATION = /^([1-9][0-9]{0,8})([smhdw])$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

function parseDuration(text: string, option: string, example: string): number {
  const match = DURATION.exec(text);
  if (match === null) {
    throw new UsageError(
      `${option} must be a number and a unit (s, m, h, d, w), e.g. ${example}; got "${text}"`,
    );
  }
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/**
 * Runs `work` on the configured database. Only serve and migrate may create one: a key
 * minted in a database the server never reads (another directory, a typo) would be a key
 * that silently does not work, so the other commands refuse a SQLite file that is not there.
 */
async function withStore<T>(
  work: (store: Store) => Promise<T>,
  options: { create?: boolean } = {},
): Promise<T> {
  const { database } = loadConfig();
  if (database.kind === 'sqlite' && options.create !== true) {
    if (database.path === ':memory:') {
      throw new Error('DATABASE_URL is sqlite::memory:, a database that ends with this command');
    }
    if (!existsSync(database.path)) {
      throw new Error(
        `no database at ${database.path}; set DATABASE_URL to the server's, or create it with tessera migrate`,
      );
    }
  }
  const store = openStore(database, { mustExist: options.create !== true });
  try {
    await store.migrate();
    return await work(store);
  } finally {
    await store.close();
  }
}

function servicesFor(store: Store) {
  return createServices({
    store,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    tokens: loadConfig().tokens,
  });
}

/** The options of a command whose only option is --json. */
function parseJsonFlag(args: string[]): { json: boolean } {
  const { values } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: false,
  });
  return values;
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

async function rotateSigningKey(args: string[]): Promise<void> {
  const values = parseJsonFlag(args);
  const added = await withStore((store) => servicesFor(store).signingKeys.rotate(CLI_ORIGIN));
  const summary = {
    kid: added.kid,
    algorithm: added.algorithm,
    activates_at: new Date(added.activatesAt).toISOString(),
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    `Added signing key ${summary.kid} (${summary.algorithm}). It is published now and signs ` +
      `from ${summary.activates_at}; the current key stays published until its tokens expire.\n`,
  );
}

async function revokeSigningKey(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError('signing-keys revoke takes exactly one kid');
  const revocation = await withStore((store) =>
    servicesFor(store).signingKeys.revokeSigningKey(positionals[0]!, CLI_ORIGIN),
  );
  const summary = {
    revoked: describeSigningKey(revocation.revoked),
    active: describeSigningKey(revocation.active),
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    `Revoked signing key ${summary.revoked.kid}: it is no longer published, and the tokens it ` +
      `signed no longer verify. Key ${summary.active.kid} signs now.\n`,
  );
}

async function listSigningKeys(args: string[]): Promise<void> {
  const values = parseJsonFlag(args);
  const keys = (await withStore((store) => servicesFor(store).signingKeys.listSigningKeys())).map(
    describeSigningKey,
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(keys, null, 2)}\n`);
    return;
  }
  for (const key of keys) {
    const until = key.published_until === null ? '' : ` published until ${key.published_until}`;
    process.stdout.write(
      `${key.kid}  ${key.algorithm}  ${key.state}  created ${key.created_at}  signs from ${key.activates_at}${until}\n`,
    );
  }
}

async function createKey(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      roles: { type: 'string' },
      applications: { type: 'string' },
      'expires-in': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.name === undefined) throw new UsageError('keys create needs --name');
  if (values.roles === undefined)
    throw new UsageError('keys create needs --roles (e.g. users:read,users:write)');
  const roles = splitList(values.roles);
  if (!roles.every(isRole)) {
    const unknown = roles.filter((role) => !isRole(role));
    throw new UsageError(`unknown role(s): ${unknown.join(', ')}`);
  }
  const applications = values.applications === undefined ? null : splitList(values.applications);
  const body = {
    name: values.name,
    roles,
    applications,
    expires_at: null,
  };
  const errors = createBodyChecker()(CreateApiKeyBody, body);
  if (errors.length > 0) {
    // The API's own wording, with command-line names: "applications.0" → --applications.
    const described = invalid(errors).detail.replace(/"(\w+)(?:\.\d+)?"/g, '--$1');
    throw new UsageError(`invalid key: ${described}`);
  }
  const expiresIn =
    values['expires-in'] === undefined
      ? null
      : parseDuration(values['expires-in'], '--expires-in', '30d');

  const issued = await withStore((store) =>
    servicesFor(store).apiKeys.createApiKey(
      'operator',
      {
        name: values.name!.trim(),
        roles,
        applications,
        expiresAt: expiresIn === null ? null : systemClock.now() + expiresIn,
      },
      CLI_ORIGIN,
    ),
  );
  const resource = toApiKeyResource(issued.record);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...resource, key: issued.secret }, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    [
      `Created API key ${resource.id} (${resource.name})`,
      `  roles:        ${resource.roles.join(', ')}`,
      `  applications: ${resource.applications?.join(', ') ?? 'all'}`,
      `  expires:      ${resource.expires_at ?? 'never'}`,
      '',
      'Secret (shown only now; store it safely):',
      issued.secret,
      '',
    ].join('\n'),
  );
}

async function listKeys(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      json: { type: 'boolean', default: false },
      'include-revoked': { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const filter = { includeRevoked: values['include-revoked'] };
  const keys = await withStore(async (store) => {
    const apiKeys = servicesFor(store).apiKeys;
    const all = [];
    for (let page = await apiKeys.listApiKeys('operator', filter, null, 1000); ;) {
      all.push(...page);
      if (page.length < 1000) return all;
      page = await apiKeys.listApiKeys('operator', filter, page.at(-1)!.id, 1000);
    }
  });
  const resources = keys.map(toApiKeyResource);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(resources, null, 2)}\n`);
    return;
  }
  if (resources.length === 0) {
    process.stdout.write('No API keys.\n');
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
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  for (const row of [header, ...rows]) {
    process.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}

const MAX_OVERLAP_MS = UNIT_MS.w;

async function rotateKey(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { overlap: { type: 'string' }, json: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError('keys rotate takes exactly one key id');
  const overlap = values.overlap ?? '1d';
  const overlapMs = overlap === '0' ? 0 : parseDuration(overlap, '--overlap', '1d');
  if (overlapMs > MAX_OVERLAP_MS) throw new UsageError('--overlap must be at most 7d');
  const rotated = await withStore((store) =>
    servicesFor(store).apiKeys.rotateApiKey('operator', positionals[0]!, overlapMs, CLI_ORIGIN),
  );
  const resource = toApiKeyResource(rotated.record);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...resource, key: rotated.secret }, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    [
      `Rotated API key ${resource.id} (${resource.name}); the previous secret works until ${resource.previous_expires_at}.`,
      '',
      'New secret (shown only now; store it safely):',
      rotated.secret,
      '',
    ].join('\n'),
  );
}

async function revokeKey(args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('keys revoke takes exactly one key id');
  const id = positionals[0]!;
  await withStore((store) => servicesFor(store).apiKeys.revokeApiKey('operator', id, CLI_ORIGIN));
  process.stdout.write(`Revoked API key ${id}.\n`);
}

async function migrate(args: string[]): Promise<void> {
  parseArgs({ args, options: {}, strict: true, allowPositionals: false });
  await withStore(async () => {}, { create: true });
  process.stdout.write('The database schema is up to date.\n');
}

async function run(argv: string[]): Promise<void> {
  const [command, subcommand, ...rest] = argv;
  registerTypeBoxFormats();
  switch (command) {
    case 'serve':
      if (argv.length > 1)
        throw new UsageError('serve takes no arguments; configure it with environment variables');
      await import('../main.js');
      return;
    case 'migrate':
      return migrate(argv.slice(1));
    case 'keys':
      if (subcommand === 'create') return createKey(rest);
      if (subcommand === 'list') return listKeys(rest);
      if (subcommand === 'rotate') return rotateKey(rest);
      if (subcommand === 'revoke') return revokeKey(rest);
      throw new UsageError(
        `keys needs create, list, rotate or revoke${subcommand ? `, not "${subcommand}"` : ''}`,
      );
    case 'signing-keys':
      if (subcommand === 'rotate') return rotateSigningKey(rest);
      if (subcommand === 'revoke') return revokeSigningKey(rest);
      if (subcommand === 'list') return listSigningKeys(rest);
      throw new UsageError(
        `signing-keys needs rotate, revoke or list${subcommand ? `, not "${subcommand}"` : ''}`,
      );
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    case undefined:
      throw new UsageError(
        'a command is needed (serve, migrate, keys, signing-keys); see tessera --help',
      );
    default:
      throw new UsageError(`unknown command "${command}"; see tessera --help`);
  }
}

try {
  await run(process.argv.slice(2));
} catch (error) {
  // parseArgs reports unknown or malformed options with these codes.
  const code = (error as { code?: unknown }).code;
  const isUsage =
    error instanceof UsageError ||
    error instanceof ConfigError ||
    (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'));
  const message =
    error instanceof ProblemError
      ? error.detail
      : error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`tessera: ${message}\n`);
  process.exitCode = isUsage ? 2 : 1;
}
