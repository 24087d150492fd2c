// What several benchmarks share: a percentile, a fresh database per run, and the webhook
// receiver process (bench/webhook-receiver.mjs).

import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { type ServerProcess, repository, startServerProcess } from '../test/run-server.js';
import type { ProfiledRun } from './profile-steps.js';

export const POSTGRES_URL =
  process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The value at percentile `p` of ascending `sorted` values (0 when there are none). */
const START_SCRIPT = (
  JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  }
).scripts.start;

/**
 * Node's flags in `npm start` (`exec env NAME=value… node <flags> dist/main.js`): a bench's
 * server runs as it does.
 */
export const START_FLAGS = (START_SCRIPT.match(/node (.*)dist\/main\.js/)?.[1] ?? '')
  .split(' ')
  .filter((flag) => flag !== '');

/** The environment `npm start` sets before node (`env NAME=value…`), e.g. glibc's malloc settings. */
export const START_ENV: Record<string, string> = Object.fromEntries(
  (START_SCRIPT.match(/\benv ((?:[A-Z_][A-Z0-9_]*=\S* )+)node /)?.[1] ?? '')
    .split(' ')
    .filter((assignment) => assignment !== '')
    .map((assignment) => [
      assignment.slice(0, assignment.indexOf('=')),
      assignment.slice(assignment.indexOf('=') + 1),
    ]),
);

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

/** Runs `work` on a fresh database of `store`: a SQLite file, or a PostgreSQL schema dropped after. */
export async function onFreshDatabase<T>(
  store: string,
  directory: string,
  work: (databaseUrl: string) => Promise<T>,
): Promise<T> {
  if (store === 'sqlite') {
    return work(`sqlite:${join(mkdtempSync(join(directory, 'db-')), 'tessera.db')}`);
  }
  const schema = `bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  try {
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return await work(url.toString());
  } finally {
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}

/**
 * Starts bench/webhook-receiver.mjs in a process of its own; `arrived` is told of each
 * delivery (the user's identifier, the arrival in epoch ms, the path it was sent to).
 */
export async function startWebhookReceiver(
  arrived: (identifier: string, at: number, path: string) => void,
): Promise<{ origin: string; close: () => void }> {
  const child = spawn(process.execPath, [join(repository, 'bench/webhook-receiver.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise<string>((resolve) => lines.once('line', resolve));
  lines.on('line', (line) => {
    const [identifier, at, path] = line.split(' ');
    if (identifier !== undefined) arrived(identifier, Number(at), path ?? '');
  });
  return { origin: `http://127.0.0.1:${port}`, close: () => child.kill('SIGTERM') };
}

/**
 * Creates `total` users of the application `bench`, named u<first>…, through `writers`
 * concurrent writers paced at `rate` per second (user n is sent no earlier than n / rate
 * seconds after the start). Resolves with each acknowledged user's acknowledgement time.
 */
export async function createUsersPaced(options: {
  api: string;
  headers: Record<string, string>;
  rate: number;
  total: number;
  writers: number;
  first?: number;
}): Promise<{ acknowledged: Map<string, number>; started: number }> {
  const acknowledged = new Map<string, number>();
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: options.writers }, async () => {
      for (;;) {
        const index = next++;
        if (index >= options.total) return;
        const wait = started + (index * 1000) / options.rate - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const identifier = `u${(options.first ?? 0) + index}`;
        const response = await fetch(`${options.api}/applications/bench/users`, {
          method: 'POST',
          headers: options.headers,
          body: JSON.stringify({
            provider: 'bench_idp',
            identifier,
            name: identifier,
            email: `${identifier}@example.com`,
            locale: 'en',
            roles: [],
            scopes: [],
          }),
        });
        await response.arrayBuffer();
        if (response.status === 201) acknowledged.set(identifier, Date.now());
      }
    }),
  );
  return { acknowledged, started };
}

/** The built server as its own process, delivering to loopback receivers, quiet but for errors. */
export function startDeliveringServer(
  main: string,
  databaseUrl: string,
  dataDir: string,
  bootstrapKey: string,
): Promise<ServerProcess> {
  return startServerProcess(process.execPath, [main], {
    DATABASE_URL: databaseUrl,
    IAM_DATA_DIR: dataDir,
    IAM_BOOTSTRAP_API_KEY: bootstrapKey,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
    IAM_ACCESS_LOG: 'false',
    LOG_LEVEL: 'warn',
  });
}

/** A Chrome DevTools Protocol session with a server's inspector (Node's global WebSocket). */
export interface Inspector {
  send: (method: string, params?: Record<string, unknown>) => Promise<Record<string, unknown>>;
  close: () => void;
}

/** Connects to the inspector a server process announced in its output (`--inspect`). */
export async function connectInspector(output: () => string): Promise<Inspector> {
  const deadline = Date.now() + 10_000;
  let url: string | undefined;
  while ((url = /Debugger listening on (ws:\/\/\S+)/.exec(output())?.[1]) === undefined) {
    if (Date.now() > deadline) throw new Error('the inspector did not say where it listens');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  let nextId = 0;
  const pending = new Map<number, (result: Record<string, unknown>) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as {
      id?: number;
      result?: Record<string, unknown>;
    };
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? {});
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = ++nextId;
        pending.set(id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** CPU time a process (or one of its threads) used so far, user + system, in µs (Linux /proc, 100 ticks/s); NaN elsewhere. */
export function cpuTimeOf(pid: number, thread?: number): number {
  try {
    // Fields after the parenthesised command name: state is the 3rd, utime the 14th, stime the 15th.
    const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
    const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return NaN;
  }
}

/**
 * `run` recorded by V8's sampling profiler through the server's inspector: the profile goes to
 * `<dir>/<scenario>-<n>-<time>.cpuprofile` and its entry, with the requests answered and the CPU
 * time of the main thread and of the whole process during the run, to `runs` (for
 * bench/profile-steps.ts).
 */
export async function profiledRun<Figures extends { rps: number }>(
  options: {
    inspector: Inspector;
    pid: number;
    dir: string;
    intervalUs: number;
    scenario: string;
    seconds: number;
    runs: ProfiledRun[];
  },
  run: () => Promise<Figures>,
): Promise<Figures> {
  const { inspector, pid, scenario, seconds, runs } = options;
  await inspector.send('Profiler.setSamplingInterval', { interval: options.intervalUs });
  await inspector.send('Profiler.start');
  const mainBefore = cpuTimeOf(pid, pid);
  const processBefore = cpuTimeOf(pid);
  const figures = await run();
  const mainThreadCpuUs = cpuTimeOf(pid, pid) - mainBefore;
  const processCpuUs = cpuTimeOf(pid) - processBefore;
  const { profile } = await inspector.send('Profiler.stop');
  const file = join(options.dir, `${scenario}-${runs.length}-${Date.now()}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  runs.push({
    scenario,
    file,
    answered: Math.round(figures.rps * seconds),
    intervalUs: options.intervalUs,
    mainThreadCpuUs,
    processCpuUs,
  });
  return figures;
}
