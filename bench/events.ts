// What the audit trail costs: create and update throughput with events on, and with them off
// (IAM_BENCH_WITHOUT_EVENTS=true, a switch for this measurement only), in the same run, on
// both stores. Each round runs both, back to back, in alternating order, so that a machine whose
// speed drifts skews neither side. Printed: the medians of each side's rounds and their ratio,
// and the median of the rounds' own ratios (with over without, within one round), which is what
// the target is judged on: two runs a round apart share the machine's state, two medians taken
// over the whole run do not. Target: with events, within 15% of without.
//
//   npm run build && node --import tsx bench/events.ts
//   BENCH_STORES=sqlite BENCH_DURATION=4 BENCH_ROUNDS=5 BENCH_CONNECTIONS=16 BENCH_WARMUP=1 …

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type ServerProcess, startServerProcess } from '../test/run-server.js';

const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const DURATION_MS = Number(process.env.BENCH_DURATION ?? 4) * 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Driven, unmeasured, before each measured run: the server's and the load generator's JIT. */
const WARMUP_MS = Number(process.env.BENCH_WARMUP ?? 1) * 1000;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGET = 0.85;

type Scenario = 'create-user' | 'put-user';

async function start(databaseUrl: string, withEvents: boolean, key: string, dataDir: string) {
  return startServerProcess(process.execPath, ['dist/main.js'], {
    DATABASE_URL: databaseUrl,
    IAM_BOOTSTRAP_API_KEY: key,
    IAM_DATA_DIR: dataDir,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ACCESS_LOG: 'false',
    LOG_LEVEL: 'warn',
    ...(withEvents ? {} : { IAM_BENCH_WITHOUT_EVENTS: 'true' }),
  });
}

/** Requests per second of CONNECTIONS loops doing `scenario` for `durationMs`. */
async function drive(
  server: ServerProcess,
  key: string,
  scenario: Scenario,
  run: string,
  durationMs: number,
) {
  const headers = { authorization: `apikey ${key}`, 'content-type': 'application/json' };
  const base = `${server.baseUrl}/iam/api/v1/applications/bench/users`;
  const body = (n: string, name: string) =>
    JSON.stringify({
      provider: 'bench_test',
      identifier: n,
      name,
      email: `${n}@example.com`,
      locale: 'en',
      roles: ['reader'],
      scopes: [],
    });
  // put-user: each connection updates users of its own, created first.
  const own = Array.from({ length: CONNECTIONS }, (_, c) => `${run}-put-${c}`);
  if (scenario === 'put-user') {
    for (const n of own) {
      const made = await fetch(base, { method: 'POST', headers, body: body(n, 'first') });
      if (made.status !== 201) throw new Error(`setup: ${made.status}`);
    }
  }
  let done = 0;
  let failed = 0;
  const until = Date.now() + durationMs;
  await Promise.all(
    own.map(async (mine, c) => {
      for (let i = 0; Date.now() < until; i++) {
        const response =
          scenario === 'create-user'
            ? await fetch(base, { method: 'POST', headers, body: body(`${run}-${c}-${i}`, 'New') })
            : await fetch(`${base}/bench_test/${mine}`, {
                method: 'PUT',
                headers,
                body: body(mine, `Renamed ${i}`),
              });
        await response.arrayBuffer();
        if (response.status === 200 || response.status === 201) done += 1;
        else failed += 1;
      }
    }),
  );
  if (failed > 0) throw new Error(`${scenario}: ${failed} requests failed`);
  return done / (durationMs / 1000);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function benchStore(kind: string) {
  const key = `tsr_bench_${randomBytes(24).toString('base64url')}`;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-events-'));
  let schema: string | undefined;
  let databaseUrl = `sqlite:${join(directory, 'tessera.db')}`;
  const admin = kind === 'postgres' ? new pg.Client(POSTGRES_URL) : undefined;
  if (admin !== undefined) {
    await admin.connect();
    schema = `bench_events_${process.pid}`;
    await admin.query(`create schema ${schema}`);
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    databaseUrl = url.toString();
  }
  const results: Record<Scenario, { on: number[]; off: number[] }> = {
    'create-user': { on: [], off: [] },
    'put-user': { on: [], off: [] },
  };
  try {
    let run = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [true, false] : [false, true];
      for (const withEvents of order) {
        const server = await start(databaseUrl, withEvents, key, join(directory, 'data'));
        try {
          if (run === 0) {
            const created = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
              method: 'POST',
              headers: { authorization: `apikey ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ client_id: 'bench', display_name: 'Bench', description: '' }),
            });
            if (created.status !== 201) throw new Error(`setup: ${created.status}`);
          }
          for (const scenario of ['create-user', 'put-user'] as const) {
            if (WARMUP_MS > 0) await drive(server, key, scenario, `w${run}`, WARMUP_MS);
            const rps = await drive(server, key, scenario, `r${run}`, DURATION_MS);
            results[scenario][withEvents ? 'on' : 'off'].push(rps);
          }
        } finally {
          await server.stop();
        }
        run += 1;
      }
    }
  } finally {
    if (admin !== undefined) {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    }
    rmSync(directory, { recursive: true, force: true });
  }
  return Object.entries(results).map(([scenario, { on, off }]) => ({
    store: kind,
    scenario,
    withEvents: median(on),
    withoutEvents: median(off),
    ratioOfMedians: median(on) / median(off),
    ratio: median(on.map((rps, round) => rps / off[round]!)),
    roundRatios: on.map((rps, round) => rps / off[round]!),
  }));
}

const rows = [];
for (const kind of STORES) rows.push(...(await benchStore(kind)));
process.stdout.write(
  `\nThe audit trail's cost (${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_MS / 1000} s, medians)\n` +
    'store     scenario      with events   without events   ratio of medians   median ratio   target ≥ 0.85   rounds\n',
);
for (const row of rows) {
  process.stdout.write(
    `${row.store.padEnd(9)} ${row.scenario.padEnd(13)} ${row.withEvents.toFixed(0).padStart(8)} req/s ` +
      `${row.withoutEvents.toFixed(0).padStart(10)} req/s   ${row.ratioOfMedians.toFixed(2).padStart(16)}   ` +
      `${row.ratio.toFixed(2).padStart(12)}   ${(row.ratio >= TARGET ? 'met' : 'NOT MET').padEnd(13)}   ` +
      `${row.roundRatios.map((ratio) => ratio.toFixed(2)).join(' ')}\n`,
  );
}
