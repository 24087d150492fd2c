// `npm test`: runs every *.test.ts under src/ and test/ with node's test runner (via tsx).
// Node 20's --test takes no ** globs and a bare --test that finds nothing exits 0, so the
// files are listed here, counted, and an empty list is a failure.
// `npm test -- test/users.test.ts` runs just the named files.
//
// Two passes. The first runs every file with the HTTP suite on SQLite (in memory), and the
// store's own tests for both SQLite and PostgreSQL. The second runs the HTTP suite again on
// PostgreSQL: every file marked with the line `// tessera-test: both-stores` (a file that uses
// buildTestApp or TEST_STORE without it is refused). Both use a database created for this run
// and dropped after.
// Without a reachable PostgreSQL the second pass is skipped with the reason printed, and the
// PostgreSQL store tests skip themselves; in CI (CI=true) that is a failure instead.
// TESSERA_TEST_POSTGRES_PASS=skip leaves out the second pass only, saying so: CI does it on its
// second Node.js line, where the first pass still runs the PostgreSQL store tests (the driver and
// the SQL on that Node.js) and the HTTP suite on PostgreSQL already ran on the first line.

import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

const BASE_URL = process.env.TESSERA_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function findTests(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

async function createRunDatabase() {
  const admin = new pg.Client({ connectionString: BASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (error) {
    return { reason: `PostgreSQL at ${BASE_URL} is not reachable (${error.message})` };
  }
  const name = `tessera_test_${process.pid}_${Date.now()}`;
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(BASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: BASE_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

function run(label, files, env) {
  process.stdout.write(`\n# ${label}: ${files.length} test file(s)\n`);
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      '--test-timeout=600000',
      ...options,
      ...files,
    ],
    { stdio: 'inherit', env: { ...process.env, ...env } },
  );
  return result.status ?? 1;
}

const named = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const options = process.argv.slice(2).filter((arg) => arg.startsWith('-'));
// The runner starts files in the order given, two at a time: the longest files go first, so a
// long one does not start last and leave the other slot idle while it finishes (the list is
// the slowest files of a timed run; the others follow in name order).
const LONGEST_FIRST = [
  'src/store/postgres/postgres-store.test.ts',
  'test/imports-kill.test.ts',
  'test/webhook-chaos.test.ts',
  'test/properties.test.ts',
  'test/cluster.test.ts',
  'test/backups.test.ts',
  'test/chaos.test.ts',
  'test/client-package.test.ts',
  'test/operations-guide.test.ts',
  'test/soak.test.ts',
];
const rank = (file) => {
  const at = LONGEST_FIRST.indexOf(file);
  return at === -1 ? LONGEST_FIRST.length : at;
};
const files =
  named.length > 0
    ? named
    : [...findTests('src'), ...findTests('test'), ...findTests('clients')]
        .sort()
        .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  process.stderr.write('no test files found\n');
  process.exit(1);
}
// A file runs on both stores when it says so, in a line of its own near its top. A file that
// builds the app through the test helpers (buildTestApp) or asks for the test store
// (TEST_STORE) without saying so would silently lose its PostgreSQL coverage: refused.
const BOTH_STORES = /^\/\/ tessera-test: both-stores$/m;
const USES_TEST_STORE = /buildTestApp\(|TEST_STORE/;
const sources = new Map(files.map((file) => [file, readFileSync(file, 'utf8')]));
const unmarked = files.filter(
  (file) => USES_TEST_STORE.test(sources.get(file)) && !BOTH_STORES.test(sources.get(file)),
);
if (unmarked.length > 0) {
  process.stderr.write(
    `these test files use buildTestApp or TEST_STORE but do not say which stores they run on:\n` +
      unmarked.map((file) => `  ${file}\n`).join('') +
      `add the line "// tessera-test: both-stores" near the top of each (it runs them on ` +
      `SQLite and PostgreSQL)\n`,
  );
  process.exit(1);
}
const onBothStores = files.filter((file) => BOTH_STORES.test(sources.get(file)));

// Suites that start the server as operators do (`npm start`, `tessera`) run the compiled
// dist/: build it from the sources under test first, as `npm ci` does at install.
const build = spawnSync(
  process.execPath,
  ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
  {
    stdio: 'inherit',
  },
);
if (build.status !== 0) {
  process.stderr.write('the build failed; no tests ran\n');
  process.exit(1);
}

const database = await createRunDatabase();
if (database.reason !== undefined) {
  if (process.env.CI === 'true') {
    process.stderr.write(`PostgreSQL is required in CI: ${database.reason}\n`);
    process.exit(1);
  }
  process.stdout.write(`# skipping the PostgreSQL pass: ${database.reason}\n`);
}

let status = 1;
try {
  // dist/ was built above and nothing rebuilds it during the run: tests start it directly.
  const shared = {
    TESSERA_TEST_DIST_FRESH: '1',
    ...(database.url === undefined ? {} : { TESSERA_TEST_DATABASE_URL: database.url }),
  };
  status = run('SQLite pass (and the PostgreSQL store tests)', files, {
    ...shared,
    TESSERA_TEST_STORE: 'sqlite',
  });
  const skipSecond = process.env.TESSERA_TEST_POSTGRES_PASS === 'skip';
  if (database.url !== undefined && onBothStores.length > 0 && skipSecond) {
    process.stdout.write(
      `\n# skipping the PostgreSQL pass (${onBothStores.length} file(s)): ` +
        `TESSERA_TEST_POSTGRES_PASS=skip; the PostgreSQL store tests ran in the first pass, ` +
        `the HTTP suite on SQLite only\n`,
    );
  } else if (database.url !== undefined && onBothStores.length > 0) {
    const second = run('PostgreSQL pass', onBothStores, {
      ...shared,
      TESSERA_TEST_STORE: 'postgres',
    });
    if (status === 0) status = second;
  }
} finally {
  await database.drop?.();
}
process.exit(status);
