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
//
// BENCH_CPU_PROF=<dir>: both servers run with the inspector on a loopback port and each measured
// run (not the warm-ups) is recorded by V8's sampling profiler, one .cpuprofile per run, listed in
// <dir>/cpuprof-<store>.json under the scenario's name and the build's label, for
// `bench/profile-steps.ts` (whose --functions N lists the functions that cost the most, to diff
// two builds).

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  type Inspector,
  START_ENV,
  START_FLAGS,
  connectInspector,
  cpuTimeOf,
  profiledRun,
} from './bench-kit.js';
import { newVersion } from '../src/modules/conditional-writes.js';
import type { Store, UserRecord } from '../src/store/store.js';
import type { ProfiledRun } from './profile-steps.js';
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
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;
const CPU_PROF_INTERVAL_US = Number(process.env.BENCH_CPU_PROF_INTERVAL ?? 250);
const cpuProfRuns: ProfiledRun[] = [];
const SEED_BATCH = 10_000;
const CLIENT_ID = 'bench-app';
const PROVIDER = 'google_oauth2';
const PREFIX = '/iam/api/v1';
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
  /** PostgreSQL: the server processes serving this database now (its backends). */
  backends?: () => Promise<number[]>;
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
    backends: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        const { rows } = await client.query<{ pid: number }>(
          'select pid from pg_stat_activity where datname = $1',
          [name],
        );
        return rows.map((row) => row.pid);
      } finally {
        await client.end();
      }
    },
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
  )) as {
    openStore: (database: Record<string, unknown>) => Store | Promise<Store>;
  };
  const store = await module.openStore(
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
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** BENCH_SCENARIOS: a comma-separated subset of the scenarios' names; the writes by default. */
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'create-user,put-user').split(',');

/** A random seeded user's path. */
function randomUserPath(): string {
  return `${PREFIX}/applications/${CLIENT_ID}/users/${PROVIDER}/1${String(
    Math.floor(Math.random() * USERS),
  ).padStart(14, '0')}`;
}

function scenarios(apiKey: string): { name: string; expect: number; next: () => Shape }[] {
  const headers = { authorization: `apikey ${apiKey}`, 'content-type': 'application/json' };
  let written = 0;
  const wrongKey = `tsr_${randomBytes(32).toString('base64url')}`;
  const all: { name: string; expect: number; next: () => Shape }[] = [
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
        path: randomUserPath(),
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
    {
      name: 'get-user',
      expect: 200,
      next: () => ({
        method: 'GET',
        path: randomUserPath(),
        headers: { authorization: `apikey ${apiKey}` },
      }),
    },
    {
      name: 'wrong-key',
      expect: 401,
      next: () => ({
        method: 'GET',
        path: `${PREFIX}/applications/${CLIENT_ID}`,
        headers: { authorization: `apikey ${wrongKey}` },
      }),
    },
  ];
  const unknown = SCENARIOS.filter((name) => !all.some((scenario) => scenario.name === name));
  if (unknown.length > 0) throw new Error(`unknown scenarios: ${unknown.join(', ')}`);
  return all.filter((scenario) => SCENARIOS.includes(scenario.name));
}

/** drive(), recorded by V8's profiler through `inspector` when there is one. */
async function driveProfiled(
  server: ServerProcess,
  inspector: Inspector | undefined,
  scenario: string,
  next: () => Shape,
  expect: number,
  seconds: number,
  database: Database,
): Promise<Figures> {
  if (inspector === undefined) return drive(server, next, expect, seconds, database);
  return profiledRun(
    {
      inspector,
      pid: server.process.pid!,
      dir: CPU_PROF_DIR!,
      intervalUs: CPU_PROF_INTERVAL_US,
      scenario,
      seconds,
      runs: cpuProfRuns,
    },
    () => drive(server, next, expect, seconds, database),
  );
}

interface Figures {
  rps: number;
  cpuUs: number;
  /**
   * CPU µs per request of the database server's processes serving the build's database
   * (PostgreSQL's backends, on this machine); NaN for SQLite, which runs in the server.
   */
  dbCpuUs: number;
  p50: number;
  p99: number;
  unexpected: number;
}

/** CPU time so far of each of the database's backends (by pid). */
async function backendTimes(database: Database | undefined): Promise<Map<number, number>> {
  const pids = (await database?.backends?.()) ?? [];
  return new Map(pids.map((pid) => [pid, cpuTimeOf(pid)]));
}

async function drive(
  server: ServerProcess,
  next: () => Shape,
  expect: number,
  seconds: number,
  database?: Database,
): Promise<Figures> {
  const pid = server.process.pid!;
  const dbBefore = await backendTimes(database);
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
  const cpuAfter = cpuTimeOf(pid);
  const dbAfter = await backendTimes(database);
  let dbCpu = 0;
  // A backend that ended during the run is lost (the pool keeps its connections while busy).
  for (const [backend, time] of dbAfter) dbCpu += time - (dbBefore.get(backend) ?? 0);
  let answered = 0;
  let expected = 0;
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    answered += stats.count ?? 0;
    if (code === String(expect)) expected += stats.count ?? 0;
  }
  return {
    rps: answered / result.duration,
    cpuUs: (cpuAfter - cpuBefore) / answered,
    dbCpuUs: database?.backends === undefined ? NaN : dbCpu / answered,
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
  const inspectors: Partial<Record<'candidate' | 'baseline', Inspector>> = {};
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-data-'));
  try {
    const started: Record<'candidate' | 'baseline', ServerProcess> = {} as never;
    const databaseOf = {} as Record<'candidate' | 'baseline', Database>;
    for (const which of ['baseline', 'candidate'] as const) {
      const build = builds[which];
      const database = await createDatabase(kind, which);
      databases.push(database);
      databaseOf[which] = database;
      const seeding = Date.now();
      await seed(build, database.url);
      log(
        `== ${kind}, ${build.label}: seeded ${USERS} users in ${(Date.now() - seeding) / 1000} s`,
      );
      const server = await startServerProcess(
        process.execPath,
        [
          ...START_FLAGS,
          ...(CPU_PROF_DIR === undefined ? [] : ['--inspect=127.0.0.1:0']),
          build.main,
        ],
        {
          ...START_ENV,
          DATABASE_URL: database.url,
          IAM_BOOTSTRAP_API_KEY: apiKey,
          IAM_DATA_DIR: join(dataDir, which),
          IAM_RATE_LIMIT_PER_MINUTE: '999999999',
          IAM_AUTH_FAILURES_PER_MINUTE: '0',
          LOG_LEVEL: 'info',
        },
      );
      servers.push(server);
      started[which] = server;
      if (CPU_PROF_DIR !== undefined) {
        mkdirSync(CPU_PROF_DIR, { recursive: true });
        const inspector = await connectInspector(server.output);
        await inspector.send('Profiler.enable');
        inspectors[which] = inspector;
      }
      // The access log (a line per request) would grow the kept output without bound.
      server.process.stdout!.removeAllListeners('data');
      server.process.stdout!.resume();
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
          figures[which] = await driveProfiled(
            started[which],
            inspectors[which],
            `${scenario.name} (${builds[which].label})`,
            scenario.next,
            scenario.expect,
            DURATION_S,
            databaseOf[which],
          );
        }
        rounds.push(figures);
        log(
          `   ${kind} ${scenario.name} round ${round + 1}: ${builds.candidate.label} ${figures.candidate.rps.toFixed(0)} req/s, ` +
            `${builds.baseline.label} ${figures.baseline.rps.toFixed(0)} req/s; CPU µs/req ${figures.candidate.cpuUs.toFixed(0)} / ${figures.baseline.cpuUs.toFixed(0)} (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
      const summary = (which: 'candidate' | 'baseline'): Figures => ({
        rps: median(rounds.map((r) => r[which].rps)),
        cpuUs: median(rounds.map((r) => r[which].cpuUs)),
        dbCpuUs: median(rounds.map((r) => r[which].dbCpuUs)),
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
    for (const inspector of Object.values(inspectors)) inspector.close();
    if (CPU_PROF_DIR !== undefined) {
      writeFileSync(
        join(CPU_PROF_DIR, `cpuprof-${kind}.json`),
        JSON.stringify(cpuProfRuns.splice(0), null, 1),
      );
    }
    for (const server of servers) await server.stop();
    for (const database of databases) await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  log(`== building ${BASELINE} (the baseline) and this checkout`);
  const baseline = buildBaseline(BASELINE);
  let candidate: Build;
  try {
    const copy = CANDIDATE === undefined ? buildServerCopy() : undefined;
    candidate =
      copy === undefined
        ? buildBaseline(CANDIDATE!)
        : { label: 'this build', main: copy.main, remove: copy.remove };
  } catch (error) {
    // The earlier build's worktree goes too when this one does not build.
    baseline.remove();
    throw error;
  }
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
    '| store | scenario | req/s | baseline req/s | ratio (median of rounds) | CPU µs/req | baseline CPU µs/req | database CPU µs/req | baseline database CPU µs/req | p99 ms | baseline p99 ms |\n' +
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n';
  const table = rows
    .map(
      (row) =>
        `| ${row.store} | ${row.scenario} | ${row.candidate.rps.toFixed(0)} | ${row.baseline.rps.toFixed(0)} | ` +
        `${row.ratio.toFixed(2)} | ${row.candidate.cpuUs.toFixed(0)} | ${row.baseline.cpuUs.toFixed(0)} | ` +
        `${Number.isNaN(row.candidate.dbCpuUs) ? '–' : row.candidate.dbCpuUs.toFixed(0)} | ` +
        `${Number.isNaN(row.baseline.dbCpuUs) ? '–' : row.baseline.dbCpuUs.toFixed(0)} | ` +
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
