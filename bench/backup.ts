// `npm run bench:backup`: what a backup of a large SQLite database costs the requests served
// meanwhile (issue 27's measure: GET and PUT user p99 during a backup of 1,000,000 users).
//
// Seeds one application with BENCH_USERS users (default 1,000,000), starts the built server
// (what `npm start` runs) and sends GET user and PUT user requests at a fixed rate (open loop:
// BENCH_GET_RATE and BENCH_PUT_RATE a second, default 300 and 60, far below saturation, so a
// latency is service time and waiting, not a queue the load built), each to a random user.
// Every request's send time and latency is kept. Two phases, each with its own server:
//
// - service: the server backs itself up (IAM_BACKUP_DIR, IAM_BACKUP_INTERVAL=BENCH_INTERVAL,
//   default 40s) in its worker thread; the windows come from its `backup written` log lines.
// - cli: `tessera backup` runs as its own process, BENCH_CLI_BACKUPS times (default 2), with
//   BENCH_QUIET seconds (default 15) without a backup before each.
//
// Requests are then told apart by when they were sent: during a backup, in the 2 s after one
// (the WAL the backup held back is checkpointed then), or with no backup near. Printed: count,
// p50, p99 and max per kind and class, and the backups' durations and sizes.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/open-store.js';
import { type ServerProcess, repository, startServerProcess } from '../test/run-server.js';
import { seedUsers, seededIdentifier } from '../test/seed-users.js';
import { percentile } from './bench-kit.js';

const USERS = Number(process.env.BENCH_USERS ?? 1_000_000);
const GET_RATE = Number(process.env.BENCH_GET_RATE ?? 300);
const PUT_RATE = Number(process.env.BENCH_PUT_RATE ?? 60);
const INTERVAL = process.env.BENCH_INTERVAL ?? '40s';
const SERVICE_SECONDS = Number(process.env.BENCH_SERVICE_SECONDS ?? 100);
const CLI_BACKUPS = Number(process.env.BENCH_CLI_BACKUPS ?? 2);
const QUIET_SECONDS = Number(process.env.BENCH_QUIET ?? 15);
const AFTER_MS = 2_000;
const CLIENT_ID = 'bench-app';
const PROVIDER = 'google_oauth2';
const KEY = `tsr_bench_${randomBytes(24).toString('base64url')}`;

const log = (line: string) => process.stderr.write(`${line}\n`);

async function seed(path: string): Promise<void> {
  const store = await openStore({ kind: 'sqlite', path });
  await store.migrate();
  await seedUsers(store, CLIENT_ID, USERS);
  await store.close();
}

interface Sample {
  kind: 'GET' | 'PUT';
  sentAt: number;
  ms: number;
}

/** Sends GET and PUT user requests at fixed rates until stop() resolves with what they took. */
function drive(server: ServerProcess) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const samples: Sample[] = [];
  let failures = 0;
  let stopped = false;
  const inFlight = new Set<Promise<void>>();
  const send = (kind: 'GET' | 'PUT') => {
    const n = Math.floor(Math.random() * USERS);
    const body =
      kind === 'PUT'
        ? JSON.stringify({
            name: `Renamed ${randomBytes(4).toString('hex')}`,
            email: `user${n}@example.com`,
            locale: 'en-GB',
            roles: ['member'],
            scopes: ['org:acme'],
          })
        : undefined;
    const sentAt = Date.now();
    const started = performance.now();
    const done = new Promise<void>((resolve) => {
      const req = request(
        `${server.baseUrl}/iam/api/v1/applications/${CLIENT_ID}/users/${PROVIDER}/${seededIdentifier(n)}`,
        {
          method: kind,
          agent,
          headers: {
            authorization: `apikey ${KEY}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode === 200) {
              samples.push({ kind, sentAt, ms: performance.now() - started });
            } else failures++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failures++;
        resolve();
      });
      req.end(body);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };
  // Open loop: every 10 ms, the requests due by now, whatever the answers are doing.
  const began = performance.now();
  const sent = { GET: 0, PUT: 0 };
  const timer = setInterval(() => {
    if (stopped) return;
    const elapsed = (performance.now() - began) / 1000;
    while (sent.GET < elapsed * GET_RATE) {
      sent.GET++;
      send('GET');
    }
    while (sent.PUT < elapsed * PUT_RATE) {
      sent.PUT++;
      send('PUT');
    }
  }, 10);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(inFlight);
      agent.destroy();
      return { samples, failures };
    },
  };
}

interface Window {
  from: number;
  to: number;
  label: string;
}

function startServer(path: string, env: Record<string, string> = {}) {
  return startServerProcess(process.execPath, ['dist/main.js'], {
    DATABASE_URL: `sqlite:${path}`,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_ACCESS_LOG: 'false',
    LOG_LEVEL: 'info',
    ...env,
  });
}

/** The scheduled backups' windows, from the server's `backup written` lines. */
function windowsFromLog(output: string): Window[] {
  return output
    .split('\n')
    .filter((line) => line.includes('"msg":"backup written"'))
    .map((line) => JSON.parse(line) as { time: number; ms: number; bytes: number })
    .map((entry) => ({
      from: entry.time - entry.ms,
      to: entry.time,
      label: `${(entry.ms / 1000).toFixed(1)} s, ${(entry.bytes / 1024 / 1024).toFixed(0)} MiB`,
    }));
}

async function servicePhase(path: string): Promise<{ samples: Sample[]; windows: Window[] }> {
  const backups = mkdtempSync(join(tmpdir(), 'tessera-bench-backups-'));
  const server = await startServer(path, {
    IAM_BACKUP_DIR: backups,
    IAM_BACKUP_INTERVAL: INTERVAL,
    IAM_BACKUP_KEEP: '1',
  });
  try {
    log(`== service: scheduled backups every ${INTERVAL}, ${SERVICE_SECONDS} s of load`);
    const load = drive(server);
    await new Promise((resolve) => setTimeout(resolve, SERVICE_SECONDS * 1000));
    const { samples, failures } = await load.stop();
    if (failures > 0) log(`   ${failures} requests failed`);
    // A backup still running at the end is not counted as one (its line is not written yet).
    return { samples, windows: windowsFromLog(server.output()) };
  } finally {
    await server.stop();
    rmSync(backups, { recursive: true, force: true });
  }
}

async function cliPhase(path: string): Promise<{ samples: Sample[]; windows: Window[] }> {
  const backups = mkdtempSync(join(tmpdir(), 'tessera-bench-backups-'));
  const server = await startServer(path);
  const windows: Window[] = [];
  try {
    log(`== cli: tessera backup ${CLI_BACKUPS} times, ${QUIET_SECONDS} s without one before each`);
    const load = drive(server);
    for (let i = 0; i < CLI_BACKUPS; i++) {
      await new Promise((resolve) => setTimeout(resolve, QUIET_SECONDS * 1000));
      const output = join(backups, `cli-${i}.db`);
      const from = Date.now();
      const code = await new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, ['bin/tessera.js', 'backup', '-o', output], {
          cwd: repository,
          env: { ...process.env, DATABASE_URL: `sqlite:${path}` },
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        child.once('exit', resolve);
      });
      const to = Date.now();
      if (code !== 0) throw new Error(`tessera backup exited with ${code}`);
      const bytes = statSync(output).size;
      windows.push({
        from,
        to,
        label: `${((to - from) / 1000).toFixed(1)} s, ${(bytes / 1024 / 1024).toFixed(0)} MiB`,
      });
      rmSync(output);
    }
    await new Promise((resolve) => setTimeout(resolve, QUIET_SECONDS * 1000));
    const { samples, failures } = await load.stop();
    if (failures > 0) log(`   ${failures} requests failed`);
    return { samples, windows };
  } finally {
    await server.stop();
    rmSync(backups, { recursive: true, force: true });
  }
}

function report(phase: string, { samples, windows }: { samples: Sample[]; windows: Window[] }) {
  const classOf = (sample: Sample) => {
    if (windows.some((w) => sample.sentAt >= w.from && sample.sentAt <= w.to)) return 'during';
    if (windows.some((w) => sample.sentAt > w.to && sample.sentAt <= w.to + AFTER_MS)) {
      return 'after';
    }
    return 'none';
  };
  const lines = [
    `${phase}: backups ${windows.map((w) => w.label).join('; ') || 'none finished'}`,
    `  ${'requests'.padEnd(30)} ${'n'.padStart(6)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)}`,
  ];
  for (const kind of ['GET', 'PUT'] as const) {
    for (const [cls, label] of [
      ['none', 'no backup'],
      ['during', 'during a backup'],
      ['after', `within ${AFTER_MS / 1000} s after one`],
    ] as const) {
      const ms = samples
        .filter((sample) => sample.kind === kind && classOf(sample) === cls)
        .map((sample) => sample.ms)
        .sort((a, b) => a - b);
      lines.push(
        `  ${`${kind} user, ${label}`.padEnd(30)} ${String(ms.length).padStart(6)} ` +
          `${percentile(ms, 50).toFixed(1).padStart(8)} ${percentile(ms, 99).toFixed(1).padStart(8)} ` +
          `${(ms.at(-1) ?? NaN).toFixed(1).padStart(8)}`,
      );
    }
  }
  return lines.join('\n');
}

const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-backup-'));
try {
  const path = join(directory, 'tessera.db');
  // BENCH_SEED_CACHE=<directory> keeps the seeded database there and copies it on later runs
  // (seeding 1,000,000 users takes minutes; the copy seconds).
  const cached = process.env.BENCH_SEED_CACHE
    ? join(process.env.BENCH_SEED_CACHE, `bench-backup-${USERS}.db`)
    : undefined;
  const seeded = Date.now();
  if (cached !== undefined && existsSync(cached)) {
    log(`== copying ${USERS.toLocaleString('en')} seeded users from ${cached}`);
    copyFileSync(cached, path);
  } else {
    log(`== seeding ${USERS.toLocaleString('en')} users`);
    await seed(path);
    if (cached !== undefined) copyFileSync(path, cached);
  }
  log(
    `   ${((Date.now() - seeded) / 1000).toFixed(0)} s, ${(statSync(path).size / 1024 / 1024).toFixed(0)} MiB`,
  );
  const phases = (process.env.BENCH_PHASES ?? 'service,cli').split(',');
  const lines: string[] = [];
  if (phases.includes('service')) lines.push(report('service', await servicePhase(path)));
  if (phases.includes('cli')) lines.push(report('cli', await cliPhase(path)));
  process.stdout.write(
    `\nGET and PUT user during backups of ${USERS.toLocaleString('en')} users ` +
      `(${GET_RATE} GET/s, ${PUT_RATE} PUT/s, open loop):\n${lines.join('\n\n')}\n`,
  );
} finally {
  rmSync(directory, { recursive: true, force: true });
}
