// The TypeScript client as a user outside this repository gets it: `npm pack` of
// clients/typescript, installed with `npm install <tarball>` into a project of its own in a
// temporary directory (openapi-fetch coming as the package's own dependency), a small program
// type-checked there with tsc and run with plain node (no tsx) against a running Tessera.
// CI runs the suite on Node.js 24 and 22, so the package is installed and run on both.

import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  repository,
  type ServerProcess,
  serverEntry,
  startServerProcess,
} from './server-process.js';

const CLIENT = join(repository, 'clients/typescript');

/** The program a user writes: typed calls, a problem as TesseraError, pages, the change feed, a decision. */
const PROGRAM = `
import { createTessera, TesseraError, type Application, type User } from '@tessera/client';

const tessera = createTessera({
  baseUrl: process.env.TESSERA_URL!,
  apiKey: process.env.TESSERA_KEY!,
});

const application: Application = await tessera.applications.create({
  client_id: 'outside',
  display_name: 'Made from outside the repository',
  description: '',
});
await tessera.users.create('outside', {
  provider: 'azure_saml',
  identifier: 'CN=Grace Hopper,OU=Navy',
  name: 'Grace Hopper',
  email: 'grace@example.com',
  locale: 'en-US',
  roles: ['admiral'],
  scopes: [],
});
const users: User[] = [];
for await (const user of tessera.users.list('outside', { limit: 1 })) users.push(user);
const webhook = await tessera.webhooks.create({
  url: 'https://hooks.example.com/tessera',
  event_types: ['user.*'],
});
const signingKey = await tessera.signingKeys.rotate();
const feed = await tessera.events.poll({ client_id: 'outside', wait: 1 });
// Without an authorization model, an action named like a role the user holds is allowed.
const { decision } = await tessera.decisions.evaluate({
  subject: { type: 'user', id: 'azure_saml:CN=Grace Hopper,OU=Navy' },
  action: { name: 'admiral' },
  resource: { type: 'fleet', id: 'pacific' },
  context: { client_id: 'outside' },
});
let missing = 0;
try {
  await tessera.applications.get('no-such-application');
} catch (error) {
  if (!(error instanceof TesseraError)) throw error;
  missing = error.status;
}
console.log(
  JSON.stringify({
    application: application.client_id,
    users: users.map((user) => user.identifier),
    secret: webhook.secret.startsWith('whsec_'),
    signingKey: signingKey.state,
    events: feed.items.map((event) => event.type),
    decision,
    missing,
  }),
);
`;

/** A mistake the package's types must catch. */
const WRONG = `
import { createTessera } from '@tessera/client';

const tessera = createTessera({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'tsr_x' });
await tessera.applications.create({ client_id: 'x', display_name: 42, description: '' });
`;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const environment = { ...process.env, ...env };
  // `npm test` hands its own settings down as npm_config_*; the user's project has none of them.
  for (const name of Object.keys(environment)) {
    if (name.startsWith('npm_')) delete environment[name];
  }
  delete environment.NODE_TEST_CONTEXT;
  delete environment.NODE_OPTIONS;
  return spawnSync(command, args, { cwd, env: environment, encoding: 'utf8', timeout: 240_000 });
}

function succeeded(result: SpawnSyncReturns<string>, what: string): string {
  assert.equal(result.status, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe(
  'the TypeScript client installed from npm pack outside the repository',
  { timeout: 300_000 },
  () => {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-client-package-'));
    const project = join(directory, 'project');
    const key = `tsr_${randomBytes(32).toString('base64url')}`;
    let server: ServerProcess;
    let tarball: string;

    before(async () => {
      server = await startServerProcess(process.execPath, serverEntry(), {
        DATABASE_URL: `sqlite:${join(directory, 'tessera.db')}`,
        IAM_BOOTSTRAP_API_KEY: key,
        LOG_LEVEL: 'warn',
      });
    });
    after(async () => {
      await server?.stop();
      rmSync(directory, { recursive: true, force: true });
    });

    it('packs built JavaScript and type declarations, without sources or tests', () => {
      const packed = JSON.parse(
        succeeded(
          run('npm', ['pack', '--json', '--pack-destination', directory], CLIENT),
          'npm pack',
        ),
      ) as { filename: string; files: { path: string }[] }[];
      tarball = join(directory, packed[0]!.filename);
      const files = packed[0]!.files.map((file) => file.path).sort();
      assert.deepEqual(files, [
        'README.md',
        'dist/index.d.ts',
        'dist/index.js',
        'dist/schema.d.ts',
        'dist/schema.js',
        'package.json',
      ]);
      const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8'));
      assert.equal(manifest.private, undefined, 'the package can be published');
      assert.deepEqual(manifest.exports['.'], {
        types: './dist/index.d.ts',
        import: './dist/index.js',
        // require() of an ES module, as Node.js 22.12 and later do it.
        default: './dist/index.js',
      });
      assert.ok(manifest.dependencies['openapi-fetch'], 'openapi-fetch is its own dependency');
    });

    it('installs into a project of its own, type-checks a program with tsc and runs it with node', () => {
      const root = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8'));
      mkdirSync(project);
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ name: 'outside', private: true, type: 'module' }),
      );
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            types: ['node'],
            outDir: 'out',
          },
          files: ['program.ts'],
        }),
      );
      writeFileSync(join(project, 'program.ts'), PROGRAM);
      succeeded(
        run(
          'npm',
          [
            'install',
            '--no-audit',
            '--no-fund',
            tarball,
            `typescript@${root.devDependencies.typescript}`,
            `@types/node@${root.devDependencies['@types/node']}`,
          ],
          project,
        ),
        'npm install',
      );
      assert.ok(existsSync(join(project, 'node_modules/openapi-fetch/package.json')));
      const required = run(
        process.execPath,
        ['-e', "console.log(typeof require('@tessera/client').createTessera)"],
        project,
      );
      assert.equal(
        succeeded(required, 'require()').trim(),
        'function',
        'CommonJS can require() it',
      );

      const tsc = join(project, 'node_modules/typescript/bin/tsc');
      succeeded(run(process.execPath, [tsc, '-p', '.'], project), 'tsc');
      const output = succeeded(
        run(process.execPath, ['out/program.js'], project, {
          TESSERA_URL: server.baseUrl,
          TESSERA_KEY: key,
        }),
        'node out/program.js',
      );
      assert.deepEqual(JSON.parse(output), {
        application: 'outside',
        users: ['CN=Grace Hopper,OU=Navy'],
        secret: true,
        signingKey: 'pending',
        events: ['application.created', 'user.created'],
        decision: true,
        missing: 404,
      });
    });

    it('refuses, at type-check time, a call that does not match the API', () => {
      writeFileSync(join(project, 'wrong.ts'), WRONG);
      const tsc = join(project, 'node_modules/typescript/bin/tsc');
      const result = run(
        process.execPath,
        [
          tsc,
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--module',
          'NodeNext',
          '--target',
          'ES2022',
          'wrong.ts',
        ],
        project,
      );
      assert.notEqual(result.status, 0, 'a number where the API takes a string does not compile');
      assert.match(
        result.stdout,
        /wrong\.ts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/,
      );
    });
  },
);

describe("the TypeScript client's sources", () => {
  it('are TypeScript that Node.js runs by stripping types (no parameter properties, enums, …)', () => {
    const sources = readdirSync(join(CLIENT, 'src')).filter((file) => file.endsWith('.ts'));
    assert.ok(sources.includes('index.ts'));
    for (const file of sources) {
      const source = readFileSync(join(CLIENT, 'src', file), 'utf8');
      assert.doesNotThrow(() => stripTypeScriptTypes(source), file);
    }
    // What it refuses, so the check above means something.
    assert.throws(
      () => stripTypeScriptTypes('class A { constructor(readonly a: number) {} }'),
      /parameter property is not supported/,
    );
  });
});
