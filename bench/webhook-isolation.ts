// Part of `npm run bench:webhooks`: does one webhook whose receiver hangs delay the others?
//
// One server process, 50 webhooks for user.created pointing at healthy paths of one receiver
// process (bench/webhook-receiver.mjs, answering 204), and one more to a path of the same
// receiver, so the same origin, that never answers. Writers create users at
// BENCH_ISOLATION_RATE per second (default 20: 1,000 deliveries a second) in slices of
// BENCH_ISOLATION_SLICE_SECONDS (3 s), the hanging webhook enabled in every other slice and
// disabled in the rest (disabling closes its attempt in flight), in pairs of alternating order
// (BENCH_ISOLATION_PAIRS, 5), each slice drained before the next. Printed per store: the lag
// from a create's acknowledgement to its delivery at each healthy webhook, p50 and p99, in the
// slices without and with the hanging webhook, and each pair's ratio of p99 with it to p99
// without it. Target: the median of the pairs' ratios at most 1.2 (a pair's two slices ran
// next to each other, so the machine's other load weighs on both alike).

import { randomBytes } from 'node:crypto';
import {
  createUsersPaced,
  percentile,
  startDeliveringServer,
  startWebhookReceiver,
} from './bench-kit.js';

const RATE = Number(process.env.BENCH_ISOLATION_RATE ?? 20);
const SLICE_SECONDS = Number(process.env.BENCH_ISOLATION_SLICE_SECONDS ?? 3);
const PAIRS = Number(process.env.BENCH_ISOLATION_PAIRS ?? 5);
const HEALTHY = 50;
const WRITERS = 16;
const KEY = `tsr_bench_${randomBytes(30).toString('base64url').slice(0, 40)}`;

export interface IsolationFigures {
  store: string;
  deliveries: { without: number; with: number };
  p50: { without: number; with: number };
  p99: { without: number; with: number };
  /** p99 with the hanging webhook over p99 without it, per pair of slices. */
  pairRatios: number[];
  missing: number;
}

export async function runIsolation(
  store: string,
  databaseUrl: string,
  main: string,
  dataDir: string,
): Promise<IsolationFigures> {
  const arrivals = new Map<string, number>();
  const receiver = await startWebhookReceiver((identifier, at, path) => {
    const key = `${path} ${identifier}`;
    if (!arrivals.has(key)) arrivals.set(key, at);
  });
  const server = await startDeliveringServer(main, databaseUrl, dataDir, KEY);
  const headers = { authorization: `apikey ${KEY}`, 'content-type': 'application/json' };
  const api = `${server.baseUrl}/iam/api/v1`;
  const call = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers:
        method === 'PATCH'
          ? { ...headers, 'content-type': 'application/merge-patch+json' }
          : headers,
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as { id: string };
  };
  try {
    await call('POST', '/applications', {
      client_id: 'bench',
      display_name: 'Bench',
      description: '',
    });
    const paths = Array.from({ length: HEALTHY }, (_, index) => `/hook/${index}`);
    for (const path of paths) {
      await call('POST', '/webhooks', {
        url: `${receiver.origin}${path}`,
        event_types: ['user.created'],
      });
    }
    const hanging = await call('POST', '/webhooks', {
      url: `${receiver.origin}/hang`,
      event_types: ['user.created'],
      enabled: false,
    });

    let written = 0;
    const lags = { without: [] as number[], with: [] as number[] };
    const pairRatios: number[] = [];
    let missing = 0;
    /** One slice: writes for SLICE_SECONDS, waits for every healthy delivery; the lags. */
    const slice = async (withHanging: boolean): Promise<number[]> => {
      await call('PATCH', `/webhooks/${hanging.id}`, { enabled: withHanging });
      const first = written;
      written += RATE * SLICE_SECONDS;
      const { acknowledged } = await createUsersPaced({
        api,
        headers,
        rate: RATE,
        total: RATE * SLICE_SECONDS,
        writers: WRITERS,
        first,
      });
      const expected = [...acknowledged.keys()].flatMap((identifier) =>
        paths.map((path) => `${path} ${identifier}`),
      );
      const deadline = Date.now() + 60_000;
      while (expected.some((key) => !arrivals.has(key)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      missing += expected.filter((key) => !arrivals.has(key)).length;
      return expected
        .filter((key) => arrivals.has(key))
        .map((key) => arrivals.get(key)! - acknowledged.get(key.split(' ')[1]!)!);
    };
    for (let pair = 0; pair < PAIRS; pair++) {
      const order = pair % 2 === 0 ? [false, true] : [true, false];
      const p99 = { without: 0, with: 0 };
      for (const withHanging of order) {
        const measured = await slice(withHanging);
        (withHanging ? lags.with : lags.without).push(...measured);
        p99[withHanging ? 'with' : 'without'] = percentile(
          measured.sort((x, y) => x - y),
          99,
        );
      }
      pairRatios.push(p99.with / Math.max(1, p99.without));
    }
    await call('PATCH', `/webhooks/${hanging.id}`, { enabled: false });
    lags.without.sort((x, y) => x - y);
    lags.with.sort((x, y) => x - y);
    return {
      store,
      deliveries: { without: lags.without.length, with: lags.with.length },
      p50: { without: percentile(lags.without, 50), with: percentile(lags.with, 50) },
      p99: { without: percentile(lags.without, 99), with: percentile(lags.with, 99) },
      pairRatios,
      missing,
    };
  } finally {
    await server.stop();
    receiver.close();
  }
}

export function reportIsolation(results: IsolationFigures[]): void {
  process.stdout.write(
    `\none webhook hanging among ${HEALTHY} healthy ones on the same origin, ${RATE} changes/s, ` +
      `${PAIRS} pairs of ${SLICE_SECONDS} s slices (target: healthy lag p99 with it within 20 % of without, median of the pairs)\n`,
  );
  for (const f of results) {
    const ratios = [...f.pairRatios].sort((x, y) => x - y);
    const ratio = ratios[Math.floor(ratios.length / 2)] ?? 0;
    const met = ratio <= 1.2 && f.missing === 0;
    process.stdout.write(
      `${f.store.padEnd(9)} without: ${f.deliveries.without} deliveries, lag p50 ${f.p50.without} ms p99 ${f.p99.without} ms; ` +
        `with: ${f.deliveries.with} deliveries, lag p50 ${f.p50.with} ms p99 ${f.p99.with} ms; ` +
        `p99 ratio, median of the pairs ${ratio.toFixed(2)} (pairs ${f.pairRatios.map((r) => r.toFixed(2)).join(', ')}), ` +
        `missing ${f.missing} ${met ? 'MET' : 'NOT MET'}\n`,
    );
  }
}
