// `npm run bench:baseline`: create user and PUT user on this build against the build of an
// earlier commit (BENCH_BASELINE, default 95ac0ff: the build before the domain core), in the
// same run, on the same machine. See bench/README.md ("Against an earlier build").
//
// The earlier commit is checked out in a temporary git worktree and built there (with this
// checkout's node_modules: the dependencies it has are the same versions); this build is built
// into a directory of its own. Each build seeds its own database through its own store (the
// schemas differ) with BENCH_USERS users, then both servers run side by side and are driven
// alternately, ROUNDS times per scenario (the earlier build first in odd rounds), each run
// after a warm-up. Printed: medians of req/s, CPU µs per request and latency, and the median of
// the rounds' ratios (this build ÷ the earlier one).

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { newVersion } from '../src/modules/conditional-writes.js';
import type { Store, UserRecord } from '../src/store/store.js';
import {
  type ServerProcess,
  buildServerCopy,
  repository,
  startServerProcess,
} from '../test/run-server.js';

const BASELINE = process.env.BENCH_BASELINE ?? '95ac0ff';
/** Another commit to measure instead of this checkout (to compare two earlier builds). */
const CANDIDATE = process.env.BENCH_CANDIDATE;
const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 3);
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? 1);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CONNECTIONS = 32;
const SEED_BATCH = 10_000;
const CLIENT_ID = 'bench-app';
const PROVIDER = 'google_oauth2';
const PREFIX = '/iam/api/v1';
const START_FLAGS = (
  (
    JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
      scripts: { start: string };
    }
  ).scripts.start.match(/node (.*)dist\/main\.js/)?.[1] ?? ''
)
  .split(' ')
  .filter((flag) => flag !== '');

const log = (line: string) => process.stderr.write(`${line}\n`);
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

interface Build {
  label: string;
  /** dist/main.js of the build. */
  main: string;
  remove: () => void;
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  }
}

/** The earlier commit, checked out in a temporary worktree and built there. */
function buildBaseline(commit: string): Build {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-baseline-'));
  rmSync(directory, { recursive: true, force: true });
  run('git', ['worktree', 'add', '--detach', directory, commit], repository);
  const remove = () => {
    spawnSync('git', ['worktree', 'remove', '--force', directory], { cwd: repository });
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    symlinkSync(join(repository, 'node_modules'), join(directory, 'node_modules'), 'dir');
    run(
      process.execPath,
      [join(repository, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      directory,
    );
  } catch (error) {
    remove();
    throw error;
  }
  const label = spawnSync('git', ['rev-parse', '--short', commit], {
    cwd: repository,
    encoding: 'utf8',
  }).stdout.trim();
  return { label, main: join(directory, 'dist/main.js'), remove };
}

function seedUser(n: number, now: number): UserRecord {
  return {
    clientId: CLIENT_ID,
    provider: PROVIDER,
    identifier: `1${String(n).padStart(14, '0')}`,
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name: `Bench User ${n}`,
    avatar: n % 2 === 0 ? `https://cdn.example.com/avatars/${n}.png` : null,
    email: `user${n}@example.com`,
    locale: 'en-GB',
    roles: ['member', 'billing:read'],
    scopes: ['org:acme'],
    active: true,
    externalId: `00u${String(n).padStart(17, '0')}`,
    createdAt: now,
    updatedAt: now,
    etag: newVersion(),
  };
}

interface Database {
  url: string;
  drop: () => Promise<void>;
}

async function createDatabase(kind: string, label: string): Promise<Database> {
  if (kind === 'sqlite') {
    const directory = mkdtempSync(join(tmpdir(), `tessera-bench-${label}-`));
    return {
      url: `sqlite:${join(directory, 'tessera.db')}`,
      drop: async () => rmSync(directory, { recursive: true, force: true }),
    };
  }
  const name = `tessera_bench_${label}_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** Seeds the database through the build's own store (its schema, its migrations). */
async function seed(build: Build, url: string): Promise<void> {
  const module = (await import(
    pathToFileURL(join(dirname(build.main), 'store/open-store.js')).href
  )) as { openStore: (database: Record<string, unknown>) => Store };
  const store = module.openStore(
    url.startsWith('sqlite:')
      ? { kind: 'sqlite', path: url.slice('sqlite:'.length) }
      : {
          kind: 'postgres',
          url,
          poolSize: 4,
          connectTimeoutMs: 5000,
          poolWaitMs: 60_000,
          statementTimeoutMs: 600_000,
        },
  );
  await store.migrate();
  const now = Date.now();
  await store.applications.insertApplication(
    {
      clientId: CLIENT_ID,
      displayName: 'Benchmark',
      description: 'The application the benchmark users belong to',
      mode: 'internal',
      jwtExpirationInMinutes: 60,
      externalTokenValidation: null,
      scimProvider: null,
      authorization: null,
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    },
    [],
  );
  for (let start = 0; start < USERS; start += SEED_BATCH) {
    const batch = [];
    for (let n = start; n < Math.min(USERS, start + SEED_BATCH); n++) batch.push(seedUser(n, now));
    await store.users.insertUsers(batch, []);
  }
  await store.close();
  if (!url.startsWith('sqlite:')) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('analyze');
    await client.end();
  }
}

interface Shape {
  method: 'POST' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body: string;
}

function scenarios(apiKey: string): { name: string; expect: number; next: () => Shape }[] {
  const headers = { authorization: `apikey ${apiKey}`, 'content-type': 'application/json' };
  let written = 0;
  return [
    {
      name: 'create-user',
      expect: 201,
      next: () => ({
        method: 'POST',
        path: `${PREFIX}/applications/${CLIENT_ID}/users`,
        headers,
        body: JSON.stringify({
          provider: 'okta_oidc',
          identifier: `new-${process.pid}-${++written}`,
          name: 'New User',
          email: `new${written}@example.com`,
          locale: 'de-CH',
          roles: ['member'],
          scopes: ['org:acme'],
        }),
      }),
    },
    {
      name: 'put-user',
      expect: 200,
      next: () => ({
        method: 'PUT',
        path: `${PREFIX}/applications/${CLIENT_ID}/users/${PROVIDER}/1${String(
          Math.floor(Math.random() * USERS),
        ).padStart(14, '0')}`,
        headers,
        body: JSON.stringify({
          name: `Renamed ${++written}`,
          email: `renamed${written}@example.com`,
          locale: 'en-GB',
          roles: ['member'],
          scopes: ['org:acme'],
        }),
      }),
    },
  ];
}

/** CPU time a process used so far (user + system), in µs (Linux /proc); NaN elsewhere. */
function cpuTimeOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return NaN;
  }
}

interface Figures {
  rps: number;
  cpuUs: number;
  p50: number;
  p99: number;
  unexpected: number;
}

async function drive(
  server: ServerProcess,
  next: () => Shape,
  expect: number,
  seconds: number,
): Promise<Figures> {
  const pid = server.process.pid!;
  const cpuBefore = cpuTimeOf(pid);
  const result = await autocannon({
    url: server.baseUrl,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        setupRequest: (request) => {
          const shape = next();
          return { ...request, ...shape, headers: { ...shape.headers } };
        },
      },
    ],
  });
  let answered = 0;
  let expected = 0;
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    answered += stats.count ?? 0;
    if (code === String(expect)) expected += stats.count ?? 0;
  }
  return {
    rps: answered / result.duration,
    cpuUs: (cpuTimeOf(pid) - cpuBefore) / answered,
    p50: result.latency.p50,
    p99: result.latency.p99,
    unexpected: answered - expected + result.errors + result.timeouts,
  };
}

interface Row {
  store: string;
  scenario: string;
  candidate: Figures;
  baseline: Figures;
  ratio: number;
  cpuRatio: number;
  rounds: { candidate: Figures; baseline: Figures }[];
}

async function benchStore(kind: string, builds: { candidate: Build; baseline: Build }) {
  const apiKey = `tsr_bench_${randomBytes(24).toString('base64url')}`;
  const databases: Database[] = [];
  const servers: ServerProcess[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-data-'));
  try {
    const started: Record<'candidate' | 'baseline', ServerProcess> = {} as never;
    for (const which of ['baseline', 'candidate'] as const) {
      const build = builds[which];
      const database = await createDatabase(kind, which);
      databases.push(database);
      const seeding = Date.now();
      await seed(build, database.url);
      log(
        `== ${kind}, ${build.label}: seeded ${USERS} users in ${(Date.now() - seeding) / 1000} s`,
      );
      const server = await startServerProcess(process.execPath, [...START_FLAGS, build.main], {
        DATABASE_URL: database.url,
        IAM_BOOTSTRAP_API_KEY: apiKey,
        IAM_DATA_DIR: join(dataDir, which),
        IAM_RATE_LIMIT_PER_MINUTE: '999999999',
        IAM_AUTH_FAILURES_PER_MINUTE: '0',
        LOG_LEVEL: 'info',
      });
      servers.push(server);
      started[which] = server;
    }
    const rows: Row[] = [];
    for (const scenario of scenarios(apiKey)) {
      const rounds: Row['rounds'] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const order =
          round % 2 === 0
            ? (['baseline', 'candidate'] as const)
            : (['candidate', 'baseline'] as const);
        const figures = {} as Record<'candidate' | 'baseline', Figures>;
        for (const which of order) {
          await drive(started[which], scenario.next, scenario.expect, WARMUP_S);
          figures[which] = await drive(started[which], scenario.next, scenario.expect, DURATION_S);
        }
        rounds.push(figures);
        log(
          `   ${kind} ${scenario.name} round ${round + 1}: ${builds.candidate.label} ${figures.candidate.rps.toFixed(0)} req/s, ` +
            `${builds.baseline.label} ${figures.baseline.rps.toFixed(0)} req/s (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
      const summary = (which: 'candidate' | 'baseline'): Figures => ({
        rps: median(rounds.map((r) => r[which].rps)),
        cpuUs: median(rounds.map((r) => r[which].cpuUs)),
        p50: median(rounds.map((r) => r[which].p50)),
        p99: median(rounds.map((r) => r[which].p99)),
        unexpected: rounds.reduce((sum, r) => sum + r[which].unexpected, 0),
      });
      rows.push({
        store: kind,
        scenario: scenario.name,
        candidate: summary('candidate'),
        baseline: summary('baseline'),
        ratio: median(rounds.map((r) => r.candidate.rps / r.baseline.rps)),
        cpuRatio: median(rounds.map((r) => r.candidate.cpuUs / r.baseline.cpuUs)),
        rounds,
      });
    }
    return rows;
  } finally {
    for (const server of servers) await server.stop();
    for (const database of databases) await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  log(`== building ${BASELINE} (the baseline) and this checkout`);
  const baseline = buildBaseline(BASELINE);
  const copy = CANDIDATE === undefined ? buildServerCopy() : undefined;
  const candidate: Build =
    copy === undefined
      ? buildBaseline(CANDIDATE!)
      : { label: 'this build', main: copy.main, remove: copy.remove };
  const rows: Row[] = [];
  try {
    for (const kind of STORES) rows.push(...(await benchStore(kind, { candidate, baseline })));
  } finally {
    baseline.remove();
    candidate.remove();
  }
  const header =
    `\n${candidate.label === 'this build' ? 'This build' : candidate.label} against ${baseline.label} (${USERS.toLocaleString('en')} users, ${ROUNDS} alternated rounds of ` +
    `${DURATION_S} s, ${CONNECTIONS} connections; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)}):\n\n` +
    '| store | scenario | req/s | baseline req/s | ratio (median of rounds) | CPU µs/req | baseline CPU µs/req | p99 ms | baseline p99 ms |\n' +
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n';
  const table = rows
    .map(
      (row) =>
        `| ${row.store} | ${row.scenario} | ${row.candidate.rps.toFixed(0)} | ${row.baseline.rps.toFixed(0)} | ` +
        `${row.ratio.toFixed(2)} | ${row.candidate.cpuUs.toFixed(0)} | ${row.baseline.cpuUs.toFixed(0)} | ` +
        `${row.candidate.p99} | ${row.baseline.p99} |`,
    )
    .join('\n');
  process.stdout.write(`${header}${table}\n`);
  const unexpected = rows.reduce(
    (sum, row) => sum + row.candidate.unexpected + row.baseline.unexpected,
    0,
  );
  if (unexpected > 0)
    process.stdout.write(`\n${unexpected} answers had another status than expected.\n`);
  const outDir = join(repository, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `baseline-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ baseline: BASELINE, users: USERS, rows }, null, 2)}\n`);
  log(`== written ${file}`);
}

await main();
