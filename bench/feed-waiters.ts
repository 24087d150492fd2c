// `npm run bench:feed`: do idle long polls (GET /events?wait=30) cost other callers anything?
//
// Per store, the built server runs as its own process. A client measures the latency of
// GET /applications/bench, one request after another, in slices of BENCH_FEED_SLICE_SECONDS
// (2 s), alternately with no long poll waiting and with BENCH_FEED_WAITERS (1,000) long polls
// open over real HTTP, in pairs of alternating order (BENCH_FEED_PAIRS, 4). Nothing is written,
// so the long polls stay idle. Printed: the other caller's median and p99 latency without and
// with the waiters, and the server's CPU per slice. Target: no measurable difference
// (the median with waiters within the noise of the run: 10 %).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServerCopy, startServerProcess } from '../test/run-server.js';
import { onFreshDatabase, percentile } from './bench-kit.js';

const WAITERS = Number(process.env.BENCH_FEED_WAITERS ?? 1_000);
const SLICE_SECONDS = Number(process.env.BENCH_FEED_SLICE_SECONDS ?? 2);
const PAIRS = Number(process.env.BENCH_FEED_PAIRS ?? 4);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const KEY = `tsr_bench_${randomBytes(30).toString('base64url').slice(0, 40)}`;

/** CPU seconds (user + system) the process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const call = request(
      { agent, port, host: '127.0.0.1', path, headers: { authorization: `apikey ${KEY}` } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(performance.now() - started));
      },
    );
    call.on('error', reject);
    call.end();
  });
}

interface Slice {
  latencies: number[];
  cpu: number;
}

async function measure(store: string, databaseUrl: string, main: string, dataDir: string) {
  const server = await startServerProcess(process.execPath, [main], {
    DATABASE_URL: databaseUrl,
    IAM_DATA_DIR: dataDir,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ACCESS_LOG: 'false',
    LOG_LEVEL: 'warn',
  });
  const port = server.port;
  const pid = server.process.pid!;
  const caller = new Agent({ keepAlive: true, maxSockets: 1 });
  const waiterAgent = new Agent({ keepAlive: true, maxSockets: WAITERS });
  try {
    const created = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
      method: 'POST',
      headers: { authorization: `apikey ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'bench', display_name: 'Bench', description: '' }),
    });
    if (created.status !== 201) throw new Error(`create: ${created.status}`);
    const feed = (await (
      await fetch(`${server.baseUrl}/iam/api/v1/events?limit=1000`, {
        headers: { authorization: `apikey ${KEY}` },
      })
    ).json()) as { next_after: string };
    // Warm-up: the JIT and the pool.
    for (let index = 0; index < 300; index++)
      await get(caller, port, '/iam/api/v1/applications/bench');

    const slice = async (withWaiters: boolean): Promise<Slice> => {
      let polls: Promise<unknown>[] = [];
      if (withWaiters) {
        // Each long poll ends after 30 s; the slice is over long before.
        polls = Array.from({ length: WAITERS }, () =>
          get(waiterAgent, port, `/iam/api/v1/events?after=${feed.next_after}&wait=30`).catch(
            () => undefined,
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      const cpuBefore = cpuSeconds(pid);
      const latencies: number[] = [];
      const end = Date.now() + SLICE_SECONDS * 1000;
      while (Date.now() < end)
        latencies.push(await get(caller, port, '/iam/api/v1/applications/bench'));
      const cpu = cpuSeconds(pid) - cpuBefore;
      if (withWaiters) {
        // Closing the sockets ends the long polls.
        waiterAgent.destroy();
        await Promise.all(polls);
      }
      return { latencies, cpu };
    };
    const without: Slice[] = [];
    const withWaiting: Slice[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      for (const withWaiters of pair % 2 === 0 ? [false, true] : [true, false]) {
        (withWaiters ? withWaiting : without).push(await slice(withWaiters));
      }
    }
    const summary = (slices: Slice[]) => {
      const all = slices.flatMap((one) => one.latencies).sort((x, y) => x - y);
      return {
        requests: all.length,
        p50: percentile(all, 50),
        p99: percentile(all, 99),
        cpuPerSlice: slices.reduce((sum, one) => sum + one.cpu, 0) / slices.length,
      };
    };
    return { store, without: summary(without), with: summary(withWaiting) };
  } finally {
    caller.destroy();
    waiterAgent.destroy();
    await server.stop();
  }
}

async function main() {
  const build = buildServerCopy();
  const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-feed-'));
  const results = [];
  try {
    for (const store of STORES) {
      results.push(
        await onFreshDatabase(store, directory, (url) =>
          measure(store, url, build.main, directory),
        ),
      );
    }
  } finally {
    build.remove();
    rmSync(directory, { recursive: true, force: true });
  }
  process.stdout.write(
    `another caller's latency with 0 and ${WAITERS} idle long polls, ${PAIRS} pairs of ${SLICE_SECONDS} s slices (target: median within 10 %)\n`,
  );
  for (const { store, without, with: waiting } of results) {
    const ratio = waiting.p50 / without.p50;
    process.stdout.write(
      `${store.padEnd(9)} without: ${without.requests} requests, p50 ${without.p50.toFixed(2)} ms, p99 ${without.p99.toFixed(2)} ms, server CPU ${without.cpuPerSlice.toFixed(2)} s/slice; ` +
        `with: ${waiting.requests} requests, p50 ${waiting.p50.toFixed(2)} ms, p99 ${waiting.p99.toFixed(2)} ms, server CPU ${waiting.cpuPerSlice.toFixed(2)} s/slice; ` +
        `p50 ratio ${ratio.toFixed(2)} ${ratio <= 1.1 ? 'MET' : 'NOT MET'}\n`,
    );
  }
}

await main();
