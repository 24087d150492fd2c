// `npm run bench:webhooks`: does webhook delivery keep up with a steady stream of changes?
//
// Per store, the built server runs as its own process with one webhook for user events
// pointing at a receiver in this process (loopback, answering 204). Writers create users at
// BENCH_WEBHOOK_RATE per second (default 1,000) for BENCH_WEBHOOK_SECONDS (default 10); the
// receiver notes when each user's event arrives. Printed: the change rate achieved, the
// delivery rate over the same window, the lag from a write's acknowledgement to its
// delivery (p50, p99, max), the backlog when writing stops and how long it takes to drain.
// Target: delivery rate >= change rate and the backlog drained within 2 s.
//
// Then, per store, one webhook whose receiver hangs among 50 healthy ones
// (bench/webhook-isolation.ts). BENCH_WEBHOOK_SCENARIOS=stream,isolation chooses.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServerCopy } from '../test/run-server.js';
import {
  createUsersPaced,
  onFreshDatabase,
  percentile,
  startDeliveringServer,
  startWebhookReceiver,
} from './bench-kit.js';
import { type IsolationFigures, reportIsolation, runIsolation } from './webhook-isolation.js';

const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 1_000);
const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 10);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const SCENARIOS = (process.env.BENCH_WEBHOOK_SCENARIOS ?? 'stream,isolation').split(',');
const WRITERS = 64;
const KEY = `tsr_bench_${randomBytes(30).toString('base64url').slice(0, 40)}`;

interface Figures {
  store: string;
  changeRate: number;
  deliveryRate: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  backlogAtStop: number;
  drainMs: number;
  missing: number;
}

async function runOnce(store: string, databaseUrl: string, main: string, dataDir: string) {
  const arrivals = new Map<string, number>();
  const receiver = await startWebhookReceiver((identifier, at) => {
    if (!arrivals.has(identifier)) arrivals.set(identifier, at);
  });
  const server = await startDeliveringServer(main, databaseUrl, dataDir, KEY);
  const headers = { authorization: `apikey ${KEY}`, 'content-type': 'application/json' };
  const api = `${server.baseUrl}/iam/api/v1`;
  try {
    const setup = [
      ['/applications', { client_id: 'bench', display_name: 'Bench', description: '' }],
      ['/webhooks', { url: `${receiver.origin}/hook`, event_types: ['user.created'] }],
    ] as const;
    for (const [path, body] of setup) {
      const response = await fetch(`${api}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      if (response.status !== 201) throw new Error(`${path}: ${response.status}`);
    }
    const { acknowledged, started } = await createUsersPaced({
      api,
      headers,
      rate: RATE,
      total: RATE * SECONDS,
      writers: WRITERS,
    });
    const stopped = Date.now();
    const deliveredAtStop = arrivals.size;
    const deadline = stopped + 60_000;
    while (arrivals.size < acknowledged.size && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const drained = Date.now();
    const lags = [...acknowledged]
      .map(([identifier, at]) => (arrivals.get(identifier) ?? Number.NaN) - at)
      .filter((lag) => !Number.isNaN(lag))
      .sort((a, b) => a - b);
    const window = (stopped - started) / 1000;
    const figures: Figures = {
      store,
      changeRate: Math.round(acknowledged.size / window),
      deliveryRate: Math.round(deliveredAtStop / window),
      lagP50: Math.round(percentile(lags, 50)),
      lagP99: Math.round(percentile(lags, 99)),
      lagMax: Math.round(lags.at(-1) ?? 0),
      backlogAtStop: acknowledged.size - deliveredAtStop,
      drainMs: Math.round(drained - stopped),
      missing: acknowledged.size - arrivals.size,
    };
    return figures;
  } finally {
    await server.stop();
    receiver.close();
  }
}

async function main() {
  const build = buildServerCopy();
  const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-webhooks-'));
  const results: Figures[] = [];
  const isolation: IsolationFigures[] = [];
  try {
    for (const store of STORES) {
      if (SCENARIOS.includes('stream')) {
        results.push(
          await onFreshDatabase(store, directory, (url) =>
            runOnce(store, url, build.main, directory),
          ),
        );
      }
      if (SCENARIOS.includes('isolation')) {
        isolation.push(
          await onFreshDatabase(store, directory, (url) =>
            runIsolation(store, url, build.main, directory),
          ),
        );
      }
    }
  } finally {
    build.remove();
    rmSync(directory, { recursive: true, force: true });
  }
  if (results.length > 0) {
    process.stdout.write(
      `webhook delivery at ${RATE} changes/s for ${SECONDS} s (target: delivery rate >= change rate, backlog drained within 2 s)\n`,
    );
    for (const f of results) {
      const met = f.deliveryRate >= f.changeRate * 0.98 && f.drainMs <= 2000 && f.missing === 0;
      process.stdout.write(
        `${f.store.padEnd(9)} changes ${f.changeRate}/s, delivered ${f.deliveryRate}/s, ` +
          `lag p50 ${f.lagP50} ms p99 ${f.lagP99} ms max ${f.lagMax} ms, ` +
          `backlog at stop ${f.backlogAtStop}, drained in ${f.drainMs} ms, missing ${f.missing} ` +
          `${met ? 'MET' : 'NOT MET'}\n`,
      );
    }
  }
  if (isolation.length > 0) reportIsolation(isolation);
}

await main();
