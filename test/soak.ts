// The soak: Tessera as its own process (the built dist, as `npm start` runs it), started and
// stopped with SIGTERM many times under load, then kept under a sustained mixed load, with
// V8 told to collect garbage far more often than it would. It is what would have caught
// better-sqlite3 12 aborting on Node.js 24 (a prepared statement finalised after the
// environment that owns it was torn down: SIGABRT at exit or at a random collection).
//
// Every stop must end with exit code 0 and no signal; every answer must be one the request
// can get (no 5xx other than the 503 of a stopping server, no dropped connection outside a
// stop). `npm test` runs a short soak (test/soak.test.ts); `npm run soak` the long one.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerProcess, startServerProcess } from './run-server.js';

/** V8 flags that make collections frequent: a 1 MiB young generation, and a full GC at random. */
export const FREQUENT_GC_FLAGS = ['--max-semi-space-size=1', '--random-gc-interval=200000'];

const KEY = `tsr_soak_${'s'.repeat(40)}`;
const APPLICATION = 'soak';
const CONCURRENCY = 16;

export interface SoakOptions {
  /** The built server's dist/main.js. */
  main: string;
  /** Start/SIGTERM cycles, each under load when the signal arrives. */
  cycles: number;
  /** Seconds of sustained mixed load on one process after the cycles. */
  loadSeconds: number;
  /** A DATABASE_URL; default: a SQLite file in a directory of its own. */
  databaseUrl?: string;
  onProgress?: (line: string) => void;
}

export interface SoakReport {
  cycles: number;
  /** Exits other than code 0 without a signal, with the process's last output: must be empty. */
  badExits: string[];
  /** Requests answered, by status. */
  statuses: Record<string, number>;
  requests: number;
  /** Answers no request of the soak should get (5xx outside a stop): must be empty. */
  unexpected: string[];
  /** Requests of the sustained phase per second. */
  sustainedPerSecond: number;
}

/** One request of the mixed load; `n` makes each one different, `user` is one that exists. */
type Operation = (server: ServerProcess, n: number, user: string) => Promise<Response>;

const headers = { authorization: `apikey ${KEY}`, 'content-type': 'application/json' };
const usersPath = `/iam/api/v1/applications/${APPLICATION}/users`;

function userBody(n: number) {
  return {
    provider: 'soak_oidc',
    identifier: `user-${n}`,
    name: `Soak ${n}`,
    email: `soak-${n}@example.com`,
    locale: 'en',
    roles: [`r${n % 7}`],
    scopes: [`org:${n % 3}`],
  };
}

/** Reads and writes in the proportions of a busy service, plus the refusals clients cause. */
const OPERATIONS: Operation[] = [
  (s, n) =>
    fetch(`${s.baseUrl}${usersPath}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(userBody(n)),
    }),
  (s, _, user) => fetch(`${s.baseUrl}${usersPath}/soak_oidc/${user}`, { headers }),
  (s, n) => fetch(`${s.baseUrl}${usersPath}?limit=50&role=r${n % 7}`, { headers }),
  (s, n, user) =>
    fetch(`${s.baseUrl}${usersPath}/soak_oidc/${user}`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ name: `Renamed ${n}` }),
    }),
  (s, _, user) =>
    fetch(`${s.baseUrl}${usersPath}/soak_oidc/${user}/tokens`, { method: 'POST', headers }),
  (s) => fetch(`${s.baseUrl}/iam/api/v1/applications/${APPLICATION}`, { headers }),
  (s) =>
    fetch(`${s.baseUrl}/iam/api/v1/applications`, { headers: { authorization: 'apikey tsr_x' } }),
  (s) => fetch(`${s.baseUrl}${usersPath}`, { method: 'POST', headers, body: '{"provider":' }),
  (s) => fetch(`${s.baseUrl}${usersPath}/soak_oidc/never-created`, { headers }),
  (s) => fetch(`${s.baseUrl}/.well-known/jwks.json`),
];

/** What a request may be answered: 400 and 401 for the refusals, 404 for the missing user. */
const EXPECTED = new Set([200, 201, 400, 401, 404]);

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-soak-'));
  const report: SoakReport = {
    cycles: 0,
    badExits: [],
    statuses: {},
    requests: 0,
    unexpected: [],
    sustainedPerSecond: 0,
  };
  const progress = options.onProgress ?? (() => {});
  const env = {
    DATABASE_URL: options.databaseUrl ?? `sqlite:${join(directory, 'tessera.db')}`,
    IAM_DATA_DIR: directory,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    // One of the operations sends a wrong key on purpose, from the one address every request
    // comes from: the failed-authentication limit would answer everything 429 after 60 of them.
    IAM_AUTH_FAILURES_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  };
  /** A process, or undefined when it died before it was healthy (recorded as a bad exit). */
  async function start(label: string): Promise<ServerProcess | undefined> {
    try {
      return await startServerProcess(process.execPath, [...FREQUENT_GC_FLAGS, options.main], env);
    } catch (error) {
      report.badExits.push(`${label}, starting: ${(error as Error).message.slice(-2000)}`);
      return undefined;
    }
  }
  let serial = 0;
  /** Identifiers of the users created so far, for the reads and writes to pick from. */
  const created: string[] = [];

  /** Runs CONCURRENCY loops of mixed requests until `until()`; a stopping server may refuse. */
  async function load(server: ServerProcess, until: () => boolean, stopping: () => boolean) {
    const loop = async () => {
      while (!until()) {
        const n = serial++;
        const operation = OPERATIONS[n % OPERATIONS.length]!;
        const user = created[Math.floor(Math.random() * created.length)] ?? 'never-created';
        try {
          const response = await operation(server, n, user);
          await response.arrayBuffer();
          if (response.status === 201 && n % OPERATIONS.length === 0) created.push(`user-${n}`);
          report.requests += 1;
          report.statuses[response.status] = (report.statuses[response.status] ?? 0) + 1;
          if (!EXPECTED.has(response.status) && !(stopping() && response.status === 503)) {
            report.unexpected.push(
              `request ${n} (operation ${n % OPERATIONS.length}): ${response.status}`,
            );
          }
        } catch (error) {
          if (stopping()) return; // the connection closed under the stop, as it may
          report.unexpected.push(`request ${n}: ${(error as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  }

  async function stop(server: ServerProcess, label: string) {
    server.process.kill('SIGTERM');
    const code = await server.exited;
    const signal = server.process.signalCode;
    if (code !== 0 || signal !== null) {
      report.badExits.push(
        `${label}: code ${code}, signal ${signal}\n${server.output().slice(-2000)}`,
      );
    }
  }

  try {
    let server = await start('first start');
    if (server === undefined) return report;
    await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ client_id: APPLICATION, display_name: 'Soak', description: '' }),
    });
    for (let cycle = 1; cycle <= options.cycles; cycle += 1) {
      server ??= await start(`cycle ${cycle}`);
      report.cycles = cycle;
      if (server === undefined) continue;
      const current: ServerProcess = server;
      let stopping = false;
      // Load for a moment, then SIGTERM while requests are still in flight.
      const running = load(
        current,
        () => current.process.exitCode !== null,
        () => stopping,
      );
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 350));
      stopping = true;
      await stop(current, `cycle ${cycle}`);
      await running;
      server = undefined;
      if (cycle % 10 === 0) progress(`${cycle} cycles, ${report.requests} requests`);
    }

    const sustained = await start('the sustained load');
    if (sustained === undefined) return report;
    const started = Date.now();
    const before = report.requests;
    const deadline = started + options.loadSeconds * 1000;
    await load(
      sustained,
      () => Date.now() >= deadline,
      () => false,
    );
    report.sustainedPerSecond = Math.round(
      (report.requests - before) / ((Date.now() - started) / 1000),
    );
    progress(`sustained: ${report.requests - before} requests in ${options.loadSeconds} s`);
    await stop(sustained, 'after the sustained load');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  return report;
}
