import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { runCli as runTessera } from '../src/cli/main.js';
import { ROLES } from '../src/roles.js';
import { startServerProcess } from './server-process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECRET = /tsr_[A-Za-z0-9_-]{43}/g;
const DAY = 86_400_000;
const RECORD_FIELDS = [
  'applications',
  'created_at',
  'expires_at',
  'id',
  'last_used_at',
  'name',
  'previous_expires_at',
  'revoked_at',
  'roles',
  'updated_at',
];

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface KeyJson {
  id: string;
  name: string;
  roles: string[];
  applications: string[] | null;
  expires_at: string | null;
  key?: string;
}

/**
 * Runs `tessera <args>` in this process (runCli, as bin/tessera.js does) on the given database,
 * or with DATABASE_URL unset (null).
 */
async function runCli(databasePath: string | null, args: string[]): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (databasePath === null) delete env.DATABASE_URL;
  else env.DATABASE_URL = `sqlite:${databasePath}`;
  return runCliWith(env, args);
}

async function runCliWith(env: NodeJS.ProcessEnv, args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runTessera(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

/**
 * Runs the installed command, `bin/tessera.js` (the compiled CLI), as a process of its own in
 * `cwd`: what an operator runs. Few tests need it; the rest run in-process.
 */
function spawnCli(databasePath: string | null, args: string[], cwd = ROOT): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (databasePath === null) delete env.DATABASE_URL;
  else env.DATABASE_URL = `sqlite:${databasePath}`;
  // The test runner's marker would make a child that loads node:test report to it.
  delete env.NODE_TEST_CONTEXT;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/tessera.js'), ...args],
      { cwd, env, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A migrated database in a directory of its own for the enclosing describe(), removed after. */
function useMigratedDatabase(prefix: string): { path: () => string } {
  let directory = '';
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), prefix));
    const migrated = await runCli(join(directory, 't.db'), ['migrate']);
    assert.equal(migrated.code, 0, migrated.stderr);
  });
  after(() => rm(directory, { recursive: true, force: true }));
  return { path: () => join(directory, 't.db') };
}

/** The database file and its write-ahead log, as bytes. */
function databaseBytes(databasePath: string): Buffer {
  const parts = [databasePath, `${databasePath}-wal`]
    .filter((path) => existsSync(path))
    .map((path) => readFileSync(path));
  return Buffer.concat(parts);
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

describe('tessera keys', () => {
  let database: string;
  let jsonKey: KeyJson & { key: string };
  let humanSecret: string;
  let humanId: string;

  const migrated = useMigratedDatabase('tessera-cli-');
  before(() => {
    database = migrated.path();
  });

  it('keys create --json prints the record with the secret, expiring in 30 days', async () => {
    const started = Date.now();
    const result = await runCli(database, [
      'keys',
      'create',
      '--name',
      'ci',
      '--roles',
      'users:read,users:write',
      '--applications',
      'a,b',
      '--expires-in',
      '30d',
      '--json',
    ]);
    const finished = Date.now();
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    jsonKey = JSON.parse(result.stdout) as KeyJson & { key: string };
    assert.deepEqual(Object.keys(jsonKey).sort(), [...RECORD_FIELDS, 'key'].sort());
    assert.match(jsonKey.key, /^tsr_[A-Za-z0-9_-]{43}$/);
    assert.equal(jsonKey.name, 'ci');
    assert.deepEqual(jsonKey.roles, ['users:read', 'users:write']);
    assert.deepEqual(jsonKey.applications, ['a', 'b']);
    const expiresAt = Date.parse(jsonKey.expires_at!);
    assert.ok(
      expiresAt >= started + 30 * DAY && expiresAt <= finished + 30 * DAY,
      jsonKey.expires_at!,
    );
  });

  it('stores the SHA-256 digest of the secret, never the secret', async () => {
    const bytes = databaseBytes(database);
    assert.ok(bytes.includes(sha256Hex(jsonKey.key)), 'the digest is stored');
    assert.ok(!bytes.includes(jsonKey.key), 'the secret is not stored');
    assert.ok(!bytes.includes(jsonKey.key.slice(4)), 'nor the secret without its prefix');
  });

  it('keys create prints the secret once and stores the name trimmed', async () => {
    const result = await runCli(database, [
      'keys',
      'create',
      '--name',
      'ops',
      '--roles',
      'keys:read',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const secrets = result.stdout.match(SECRET) ?? [];
    assert.equal(secrets.length, 1, result.stdout);
    humanSecret = secrets[0]!;
    assert.equal(result.stdout.split(humanSecret).length, 2);
    const store = openSqliteStore({ path: database });
    try {
      const stored = await store.apiKeys.findApiKeyByDigest(sha256Hex(humanSecret));
      assert.ok(stored, 'a key with this secret exists');
      assert.equal(stored.name, 'ops');
      assert.deepEqual(stored.roles, ['keys:read']);
      assert.equal(stored.applications, null);
      assert.equal(stored.expiresAt, null);
      humanId = stored.id;
    } finally {
      await store.close();
    }
    assert.ok(result.stdout.includes(humanId));
  });

  it('keys list shows every key but no secret', async () => {
    const result = await runCli(database, ['keys', 'list']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.stdout.match(SECRET), null);
    assert.ok(!result.stdout.includes(jsonKey.key));
    assert.ok(!result.stdout.includes(humanSecret));
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 3, result.stdout);
    assert.ok(lines.some((line) => line.includes(jsonKey.id) && line.includes('ci')));
    assert.ok(lines.some((line) => line.includes(humanId) && line.includes('ops')));
  });

  it('keys list --json shows the records without secrets', async () => {
    const result = await runCli(database, ['keys', 'list', '--json']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.stdout.match(SECRET), null);
    const keys = JSON.parse(result.stdout) as KeyJson[];
    assert.deepEqual(
      keys.map((key) => key.id),
      [jsonKey.id, humanId],
    );
    for (const key of keys) assert.deepEqual(Object.keys(key).sort(), RECORD_FIELDS);
    const { key: _secret, ...record } = jsonKey;
    assert.deepEqual(keys[0], record);
  });

  it('keys revoke ID removes the key from the list', async () => {
    const revoked = await runCli(database, ['keys', 'revoke', jsonKey.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const listed = await runCli(database, ['keys', 'list', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as KeyJson[]).map((key) => key.id),
      [humanId],
    );
    const table = await runCli(database, ['keys', 'list']);
    assert.ok(!table.stdout.includes(jsonKey.id));
  });

  it('keys revoke of an unknown id fails with a non-zero exit code', async () => {
    const result = await runCli(database, [
      'keys',
      'revoke',
      '01900000-0000-7000-8000-000000000000',
    ]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^tessera: [^\n]+\n$/);
    assert.equal(result.stdout, '');
  });
});

describe('tessera migrate', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-cli-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('creates and migrates a new database, exit code 0, and again on a migrated one', async () => {
    const database = join(directory, 'fresh', 't.db');
    const first = await runCli(database, ['migrate']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stderr, '');
    assert.ok(existsSync(database));
    const second = await runCli(database, ['migrate']);
    assert.equal(second.code, 0, second.stderr);
  });
});

describe('tessera with bad arguments', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-cli-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  const cases: [string, string[]][] = [
    ['an unknown command', ['frobnicate']],
    ['an unknown command followed by more', ['key', 'list']],
    ['keys create without --name', ['keys', 'create', '--roles', 'users:read']],
    ['keys create without --roles', ['keys', 'create', '--name', 'ci']],
    ['an unknown role', ['keys', 'create', '--name', 'ci', '--roles', 'users:read,users:admin']],
    ['an unknown option', ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--nope']],
    [
      'a bad --expires-in',
      ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--expires-in', '30x'],
    ],
    [
      'an invalid application',
      ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--applications', 'a b'],
    ],
    [
      'a zero --expires-in',
      ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--expires-in', '0d'],
    ],
    ['an empty --roles', ['keys', 'create', '--name', 'ci', '--roles', '']],
    ['a blank --name', ['keys', 'create', '--name', '   ', '--roles', 'users:read']],
    ['keys revoke without an id', ['keys', 'revoke']],
    ['keys revoke with two ids', ['keys', 'revoke', 'one', 'two']],
    ['migrate with an argument', ['migrate', 'now']],
  ];
  for (const [label, args] of cases) {
    it(`exits 2 with a one-line message for ${label}`, async () => {
      const database = join(directory, 't.db');
      const result = await runCli(database, args);
      assert.equal(result.code, 2, `${result.stdout}${result.stderr}`);
      assert.match(result.stderr, /^tessera: [^\n]+\n$/);
      assert.equal(result.stdout, '');
    });
  }

  it('creates no key when the arguments are bad', async () => {
    const database = join(directory, 'untouched.db');
    assert.equal((await runCli(database, ['migrate'])).code, 0);
    await runCli(database, ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--nope']);
    await runCli(database, [
      'keys',
      'create',
      '--name',
      'ci',
      '--roles',
      'users:read',
      '--expires-in',
      '30x',
    ]);
    const listed = await runCli(database, ['keys', 'list', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout), []);
  });
});

describe('tessera serve', () => {
  it('serves the API on DATABASE_URL, like npm start, and stops on SIGTERM with 0', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tessera-serve-'));
    try {
      const server = await startServerProcess(process.execPath, ['bin/tessera.js', 'serve'], {
        DATABASE_URL: `sqlite:${join(directory, 'tessera.db')}`,
      });
      const key = readFileSync(join(directory, 'admin-api-key'), 'utf8').trim();
      const response = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
        headers: { authorization: `apikey ${key}` },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { items: [], next_cursor: null });
      assert.equal(await server.stop(), 0);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('takes no arguments: exit code 2', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tessera-serve-'));
    try {
      const result = await runCli(join(directory, 't.db'), ['serve', '--port', '1']);
      assert.equal(result.code, 2);
      assert.equal(result.stderr.trim().split('\n').length, 1);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('tessera signing-keys', () => {
  const migrated = useMigratedDatabase('tessera-signing-');
  let database: string;
  before(() => {
    database = migrated.path();
  });

  interface SigningKeyJson {
    kid: string;
    algorithm: string;
    state: string;
    activates_at: string;
  }

  it('rotate adds a key that signs in 10 minutes; list shows both, never a private key', async () => {
    const started = Date.now();
    const rotated = await runCli(database, ['signing-keys', 'rotate', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const added = JSON.parse(rotated.stdout) as SigningKeyJson;
    // On an empty store, rotate finds no key; the new one is generation 1 and signs at once.
    const second = JSON.parse(
      (await runCli(database, ['signing-keys', 'rotate', '--json'])).stdout,
    ) as SigningKeyJson;
    assert.ok(Date.parse(second.activates_at) >= started + 10 * 60_000);
    const listed = await runCli(database, ['signing-keys', 'list', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const keys = JSON.parse(listed.stdout) as SigningKeyJson[];
    assert.deepEqual(
      keys.map((key) => [key.kid, key.algorithm, key.state]),
      [
        [added.kid, 'ES256', 'active'],
        [second.kid, 'ES256', 'pending'],
      ],
    );
    assert.doesNotMatch(listed.stdout, /"d"/);
    const human = await runCli(database, ['signing-keys', 'list']);
    const [header, ...rows] = human.stdout.trimEnd().split('\n');
    assert.match(
      header!,
      /^KID +ALG +STATE +CREATED +SIGNS FROM +PUBLISHED UNTIL +REVOKED$/,
      'a header names the columns',
    );
    assert.equal(rows.length, 2);
    assert.match(
      rows[1]!,
      new RegExp(`^${second.kid} +ES256 +pending +\\S+Z +${second.activates_at} +- +-$`),
    );
    // Columns line up under their titles.
    assert.equal(rows[0]!.indexOf('ES256'), header!.indexOf('ALG'));
  });

  it('revoke KID removes the key from the JWKS, a new key signing in its place', async () => {
    const [active] = (
      JSON.parse(
        (await runCli(database, ['signing-keys', 'list', '--json'])).stdout,
      ) as SigningKeyJson[]
    ).filter((key) => key.state === 'active');
    // Hex, so never taken for an option (a base64url kid began with '-' one time in 64).
    assert.match(active!.kid, /^[0-9a-f]{32}$/);
    const result = await runCli(database, ['signing-keys', 'revoke', active!.kid, '--json']);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout) as {
      revoked: SigningKeyJson;
      active: SigningKeyJson;
    };
    assert.equal(summary.revoked.kid, active!.kid);
    assert.equal(summary.revoked.state, 'revoked');
    assert.notEqual(summary.active.kid, active!.kid);
    assert.equal(summary.active.state, 'active');
    const human = await runCli(database, ['signing-keys', 'revoke', active!.kid]);
    assert.match(human.stdout, /^Revoked signing key /);
  });

  it('refuses an unknown subcommand, and revoke without a kid, with exit code 2', async () => {
    const result = await runCli(database, ['signing-keys', 'frobnicate']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /choose rotate, revoke, list/);
    assert.equal((await runCli(database, ['signing-keys', 'revoke'])).code, 2);
  });
});

/** `keys create --json` of a users:read key; its record and secret. */
async function createKey(database: string, name: string): Promise<KeyJson & { key: string }> {
  const created = await runCli(database, [
    'keys',
    'create',
    '--name',
    name,
    '--roles',
    'users:read',
    '--json',
  ]);
  assert.equal(created.code, 0, created.stderr);
  return JSON.parse(created.stdout) as KeyJson & { key: string };
}

describe('tessera keys rotate and list --include-revoked', () => {
  const migrated = useMigratedDatabase('tessera-cli-rotate-');
  let database: string;
  before(() => {
    database = migrated.path();
  });

  it('prints a new secret once; the record shows until when the old one works', async () => {
    const created = await createKey(database, 'ci');
    const started = Date.now();
    const rotated = await runCli(database, [
      'keys',
      'rotate',
      created.id,
      '--overlap',
      '2h',
      '--json',
    ]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const body = JSON.parse(rotated.stdout) as KeyJson & {
      key: string;
      previous_expires_at: string;
    };
    assert.match(body.key, /^tsr_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(body.key, created.key);
    const until = Date.parse(body.previous_expires_at);
    assert.ok(until >= started + 2 * 3_600_000 && until <= Date.now() + 2 * 3_600_000);
    const human = await runCli(database, ['keys', 'rotate', created.id, '--overlap', '0']);
    assert.equal(human.code, 0, human.stderr);
    assert.equal((human.stdout.match(SECRET) ?? []).length, 1, 'the secret, once');
  });

  it('refuses an overlap beyond 7 days or without a unit, with exit code 2', async () => {
    for (const overlap of ['8d', '2', '1y']) {
      const result = await runCli(database, ['keys', 'rotate', 'some-id', '--overlap', overlap]);
      assert.equal(result.code, 2, `${overlap}: ${result.stderr}`);
    }
  });

  it('lists revoked keys with --include-revoked only', async () => {
    const created = await createKey(database, 'gone');
    assert.equal((await runCli(database, ['keys', 'revoke', created.id])).code, 0);
    const live = JSON.parse(
      (await runCli(database, ['keys', 'list', '--json'])).stdout,
    ) as KeyJson[];
    assert.ok(!live.some((key) => key.id === created.id));
    const all = JSON.parse(
      (await runCli(database, ['keys', 'list', '--include-revoked', '--json'])).stdout,
    ) as (KeyJson & { revoked_at: string | null })[];
    assert.notEqual(all.find((key) => key.id === created.id)?.revoked_at, null);
  });
});

describe('tessera creates a database only in serve and migrate', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-cli-nodb-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  for (const args of [
    ['keys', 'list'],
    ['keys', 'create', '--name', 'ci', '--roles', 'users:read'],
    ['signing-keys', 'list'],
  ]) {
    it(`refuses ${args.slice(0, 2).join(' ')} on a missing database, naming the path`, async () => {
      const database = join(directory, 'missing', 'x.db');
      const result = await runCli(database, args);
      assert.equal(result.code, 1, result.stdout);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /^tessera: no database at [^\n]*missing\/x\.db[^\n]*\n$/);
      assert.equal(existsSync(join(directory, 'missing')), false, 'no directory was created');
    });
  }

  it('does not create ./data when run in the wrong directory', async () => {
    const result = await spawnCli(null, ['keys', 'list'], directory);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no database at .*data\/tessera\.db/);
    assert.equal(existsSync(join(directory, 'data')), false);
  });
});

describe('tessera --help and --version', () => {
  const version = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
  ).version;

  it('--version prints the package version, in-process and as the installed command', async () => {
    const inProcess = await runCli(null, ['--version']);
    assert.deepEqual(inProcess, { code: 0, stdout: `${version}\n`, stderr: '' });
    const spawned = await spawnCli(null, ['--version']);
    assert.deepEqual(spawned, { code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('--help lists every command, with exit code 0', async () => {
    const result = await runCli(null, ['--help']);
    assert.equal(result.code, 0, result.stderr);
    for (const command of ['serve', 'migrate', 'keys', 'signing-keys']) {
      assert.match(result.stdout, new RegExp(`^  ${command}\\b`, 'm'), command);
    }
  });

  it('each command has its own --help with its options', async () => {
    const create = await runCli(null, ['keys', 'create', '--help']);
    assert.equal(create.code, 0, create.stderr);
    assert.match(create.stdout, /^Usage: tessera keys create \[options\]/);
    for (const option of ['--name <name>', '--roles <roles>', '--applications', '--expires-in']) {
      assert.ok(create.stdout.includes(option), option);
    }
    assert.ok(create.stdout.includes('users:write'), 'the roles are listed');
    const rotate = await runCli(null, ['help', 'signing-keys']);
    assert.equal(rotate.code, 0, rotate.stderr);
    assert.match(rotate.stdout, /rotate[\s\S]*revoke[\s\S]*list/);
  });
});

describe('tessera errors name the valid choices', () => {
  it('an unknown role lists the roles that exist', async () => {
    const result = await runCli(null, ['keys', 'create', '--name', 'ci', '--roles', 'admin']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^tessera: unknown role\(s\): admin; the roles are /);
    for (const role of ROLES) assert.ok(result.stderr.includes(role), role);
  });

  it('an unknown command or subcommand lists the commands', async () => {
    const top = await runCli(null, ['frobnicate']);
    assert.equal(top.code, 2);
    assert.equal(
      top.stderr,
      'tessera: unknown command "frobnicate"; choose serve, migrate, backup, restore, keys, signing-keys, secret-key, events, users, cluster-settings (see tessera --help)\n',
    );
    const sub = await runCli(null, ['signing-keys', 'remove']);
    assert.equal(sub.code, 2);
    assert.match(
      sub.stderr,
      /unknown command "signing-keys remove" \(did you mean signing-keys revoke\?\); choose rotate, revoke, list/,
    );
  });

  it('a mistyped command followed by its arguments names the command meant, not the arguments', async () => {
    const result = await runCli(null, ['key', 'list', '--json']);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(
      result.stderr,
      /^tessera: unknown command "key" \(did you mean keys\?\); choose serve, migrate, .*keys, signing-keys/,
    );
    assert.doesNotMatch(result.stderr, /too many arguments/);
    const sub = await runCli(null, ['keys', 'lst']);
    assert.match(
      sub.stderr,
      /unknown command "keys lst" \(did you mean keys list\?\); choose create, list/,
    );
  });

  it('bare tessera prints the usage with every command on stderr, exit code 2', async () => {
    const result = await runCli(null, []);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^Usage: tessera \[options\] <command>\n/);
    for (const command of ['serve', 'migrate', 'keys <command>', 'signing-keys <command>']) {
      assert.ok(result.stderr.includes(`\n  ${command} `), command);
    }
    assert.doesNotMatch(result.stderr, /needs a command|\[command\.\.\.\]/);
    const group = await runCli(null, ['keys']);
    assert.equal(group.code, 2);
    assert.match(group.stderr, /^Usage: tessera keys \[options\] <command>\n[\s\S]*\n {2}create /);
  });

  it('a mistyped option suggests the right one', async () => {
    const args = ['keys', 'create', '--name', 'ci', '--roles', 'users:read', '--jsno'];
    const result = await runCli(null, args);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^tessera: unknown option '--jsno' \(Did you mean --json\?\)\n$/);
  });

  it('a refused PostgreSQL connection names the host, the port and the cause', async () => {
    const result = await runCliWith(
      { ...process.env, DATABASE_URL: 'postgres://someone:secret@127.0.0.1:1/tessera' },
      ['keys', 'list'],
    );
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(
      result.stderr,
      /^tessera: cannot use PostgreSQL at 127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    assert.ok(!result.stderr.includes('secret'), 'the password stays out of the message');
  });

  it('exits 2 as a process too, with the one-line message on stderr', async () => {
    const result = await spawnCli(null, ['keys', 'create', '--name', 'ci']);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^tessera: required option '--roles <roles>' not specified\n$/);
  });
});

describe('tessera signing-keys list on an empty store', () => {
  const migrated = useMigratedDatabase('tessera-signing-empty-');

  it('says there are none yet and how to make one', async () => {
    const result = await runCli(migrated.path(), ['signing-keys', 'list']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^No signing keys yet: .*tessera signing-keys rotate/);
    const json = await runCli(migrated.path(), ['signing-keys', 'list', '--json']);
    assert.deepEqual(JSON.parse(json.stdout), []);
  });
});
