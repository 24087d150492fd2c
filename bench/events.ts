// What the audit trail costs: create and update throughput with events on, and with them off
// (bench/serve-without-events.mjs, an entry point for this measurement only), in the same run, on
// both stores. The two servers run side by side, each on a database of its own, and take turns
// in short slices, in pairs whose order alternates, so that a machine whose speed drifts skews
// neither side. Printed: the medians of each side's slices and their ratio, and the median of the
// pairs' own ratios (with over without, a few seconds apart), which is what the target is judged
// on. Target: with events, within 15% of without.
//
//   npm run build && node --import tsx bench/events.ts
//   BENCH_STORES=sqlite BENCH_SCENARIOS=create-user BENCH_PAIRS=15 BENCH_SLICE=1.5 …
//   BENCH_CONNECTIONS=16 BENCH_WARMUP=1
//   BENCH_NOISE_FLOOR=true: both sides without events, the spread of identical servers

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type ServerProcess, startServerProcess } from '../test/run-server.js';

const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'create-user,put-user').split(',');
for (const scenario of SCENARIOS) {
  if (scenario !== 'create-user' && scenario !== 'put-user') {
    throw new Error(`BENCH_SCENARIOS: unknown scenario ${scenario} (create-user, put-user)`);
  }
}
/** Pairs of slices per scenario, and the length of one slice. */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 15);
const SLICE_MS = Number(process.env.BENCH_SLICE ?? 1.5) * 1000;
/** Driven, unmeasured, before the slices of a scenario: the server's and the load generator's JIT. */
const WARMUP_MS = Number(process.env.BENCH_WARMUP ?? 1) * 1000;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGET = 0.85;
/**
 * BENCH_NOISE_FLOOR=true: both servers without events (an A/A run), to see how far the pairs of
 * two identical servers spread on this machine.
 */
const NOISE_FLOOR = process.env.BENCH_NOISE_FLOOR === 'true';

type Scenario = 'create-user' | 'put-user';

async function start(databaseUrl: string, withEvents: boolean, key: string, dataDir: string) {
  // The same dist/ both ways; only the entry point differs (no setting turns events off).
  const entry = withEvents && !NOISE_FLOOR ? 'dist/main.js' : 'bench/serve-without-events.mjs';
  return startServerProcess(process.execPath, [entry], {
    DATABASE_URL: databaseUrl,
    IAM_BOOTSTRAP_API_KEY: key,
    IAM_DATA_DIR: dataDir,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ACCESS_LOG: 'false',
    LOG_LEVEL: 'warn',
  });
}

/** The bodies and addresses of one side's requests. */
function requests(server: ServerProcess, key: string) {
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
  return { headers, base, body };
}

/** put-user: each connection updates a user of its own, created here. */
async function createOwnUsers(server: ServerProcess, key: string, scenario: Scenario) {
  const own = Array.from({ length: CONNECTIONS }, (_, c) => `put-${c}`);
  if (scenario !== 'put-user') return own;
  const { headers, base, body } = requests(server, key);
  for (const n of own) {
    const made = await fetch(base, { method: 'POST', headers, body: body(n, 'first') });
    if (made.status !== 201) throw new Error(`setup: ${made.status}`);
  }
  return own;
}

/**
 * Requests per second of CONNECTIONS loops doing `scenario` for `durationMs`: completed
 * requests over the time from the start until the last one answered.
 */
async function drive(
  server: ServerProcess,
  key: string,
  scenario: Scenario,
  own: string[],
  run: string,
  durationMs: number,
) {
  const { headers, base, body } = requests(server, key);
  let done = 0;
  let failed = 0;
  const started = performance.now();
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
                body: body(mine, `Renamed ${run} ${i}`),
              });
        await response.arrayBuffer();
        if (response.status === 200 || response.status === 201) done += 1;
        else failed += 1;
      }
    }),
  );
  if (failed > 0) throw new Error(`${scenario}: ${failed} requests failed`);
  return done / ((performance.now() - started) / 1000);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A database for one side: a schema of its own on PostgreSQL, a file of its own on SQLite. */
async function database(directory: string, side: string, admin?: pg.Client) {
  if (admin === undefined) return { url: `sqlite:${join(directory, `${side}.db`)}` };
  const schema = `bench_events_${process.pid}_${side}`;
  await admin.query(`create schema ${schema}`);
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), schema };
}

/**
 * Both servers run side by side, each on a database of its own, and take turns: slices of
 * SLICE_MS, in pairs whose order alternates. The machine's speed drifts over seconds and
 * minutes; the two slices of a pair are a few seconds apart.
 */
async function benchStore(kind: string) {
  const key = `tsr_bench_${randomBytes(24).toString('base64url')}`;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-events-'));
  const admin = kind === 'postgres' ? new pg.Client(POSTGRES_URL) : undefined;
  await admin?.connect();
  const schemas: string[] = [];
  const servers: ServerProcess[] = [];
  const measured = [];
  try {
    const sides = new Map<boolean, ServerProcess>();
    for (const withEvents of [true, false]) {
      const side = withEvents ? 'on' : 'off';
      const { url, schema } = await database(directory, side, admin);
      if (schema !== undefined) schemas.push(schema);
      const server = await start(url, withEvents, key, join(directory, `data-${side}`));
      servers.push(server);
      sides.set(withEvents, server);
      const created = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
        method: 'POST',
        headers: { authorization: `apikey ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'bench', display_name: 'Bench', description: '' }),
      });
      if (created.status !== 201) throw new Error(`setup: ${created.status}`);
    }
    for (const scenario of SCENARIOS as Scenario[]) {
      const own = new Map<boolean, string[]>();
      for (const [withEvents, server] of sides) {
        const names = await createOwnUsers(server, key, scenario);
        own.set(withEvents, names);
        if (WARMUP_MS > 0) await drive(server, key, scenario, names, 'w', WARMUP_MS);
      }
      const on: number[] = [];
      const off: number[] = [];
      for (let pair = 0; pair < PAIRS; pair++) {
        for (const withEvents of pair % 2 === 0 ? [true, false] : [false, true]) {
          const server = sides.get(withEvents)!;
          const rps = await drive(
            server,
            key,
            scenario,
            own.get(withEvents)!,
            `p${pair}`,
            SLICE_MS,
          );
          (withEvents ? on : off).push(rps);
        }
      }
      const ratios = on.map((rps, pair) => rps / off[pair]!);
      measured.push({
        store: kind,
        scenario,
        withEvents: median(on),
        withoutEvents: median(off),
        ratioOfMedians: median(on) / median(off),
        ratio: median(ratios),
        ratios: [...ratios].sort((a, b) => a - b),
      });
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    if (admin !== undefined) {
      for (const schema of schemas) await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    }
    rmSync(directory, { recursive: true, force: true });
  }
  return measured;
}

const rows = [];
for (const kind of STORES) rows.push(...(await benchStore(kind)));
const quartiles = (sorted: number[]) =>
  [0.25, 0.5, 0.75].map((q) => sorted[Math.floor((sorted.length - 1) * q)]!.toFixed(2)).join(' ');
process.stdout.write(
  `\nThe audit trail's cost${NOISE_FLOOR ? ' (NOISE FLOOR: both sides without events)' : ''} (${CONNECTIONS} connections, ${PAIRS} pairs of ${SLICE_MS / 1000} s slices, medians)\n` +
    'store     scenario      with events   without events   ratio of medians   median ratio   target ≥ 0.85   pair ratios: min, quartiles, max\n',
);
for (const row of rows) {
  process.stdout.write(
    `${row.store.padEnd(9)} ${row.scenario.padEnd(13)} ${row.withEvents.toFixed(0).padStart(8)} req/s ` +
      `${row.withoutEvents.toFixed(0).padStart(10)} req/s   ${row.ratioOfMedians.toFixed(2).padStart(16)}   ` +
      `${row.ratio.toFixed(2).padStart(12)}   ${(row.ratio >= TARGET ? 'met' : 'NOT MET').padEnd(13)}   ` +
      `${row.ratios[0]!.toFixed(2)}, ${quartiles(row.ratios)}, ${row.ratios.at(-1)!.toFixed(2)}\n`,
  );
}
