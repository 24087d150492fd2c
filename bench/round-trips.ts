// Statements each build sends to PostgreSQL per create and per PUT of a user, counted in the
// server process (a preload wraps pg's Client.prototype.query; see bench/README.md, "Against an
// earlier build"):
//
//   npm run build && node --import tsx bench/round-trips.ts <dist/main.js of another build>…
//
// Each build gets a database of its own, one application and N users created then replaced
// one after another over HTTP (so no statement is shared between requests); the counts are the
// statements sent during each phase, by text, divided by N. Background work (the event
// sequencer, the webhook dispatcher, the NOTIFY of other instances) is counted too: it is what
// a request costs the database, whenever it is sent.

import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { repository, startServerProcess } from '../test/run-server.js';

const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const N = Number(process.env.BENCH_N ?? 500);
/** Requests in flight at once (1: one after another). */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);
const PREFIX = '/iam/api/v1';

const PRELOAD = `
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
const pg = createRequire(${JSON.stringify(join(repository, 'package.json'))})('pg');
const counts = new Map();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, callback) {
  const text = typeof config === 'string' ? config : (config?.text ?? '?');
  counts.set(text, (counts.get(text) ?? 0) + 1);
  return query.call(this, config, values, callback);
};
process.on('SIGUSR2', () => writeFileSync(process.env.COUNT_PG_OUT, JSON.stringify([...counts])));
`;

async function snapshot(pid: number, file: string): Promise<Map<string, number>> {
  writeFileSync(file, '');
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = readFileSync(file, 'utf8');
    if (text !== '') return new Map(JSON.parse(text) as [string, number][]);
  }
}

function difference(after: Map<string, number>, before: Map<string, number>) {
  const rows: [string, number][] = [];
  for (const [text, count] of after) {
    const added = count - (before.get(text) ?? 0);
    if (added > 0) rows.push([text, added / N]);
  }
  return rows.sort((a, b) => b[1] - a[1]);
}

async function measure(main: string): Promise<void> {
  const name = `tessera_trips_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const dir = mkdtempSync(join(tmpdir(), 'tessera-trips-'));
  const preload = join(dir, 'count-pg.mjs');
  writeFileSync(preload, PRELOAD);
  const out = join(dir, 'counts.json');
  const apiKey = `tsr_bench_${randomBytes(24).toString('base64url')}`;
  const server = await startServerProcess(process.execPath, ['--import', preload, main], {
    DATABASE_URL: url.toString(),
    IAM_BOOTSTRAP_API_KEY: apiKey,
    IAM_DATA_DIR: join(dir, 'data'),
    IAM_RATE_LIMIT_PER_MINUTE: '999999999',
    IAM_AUTH_FAILURES_PER_MINUTE: '0',
    COUNT_PG_OUT: out,
  });
  const headers = { authorization: `apikey ${apiKey}`, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body: unknown, expect: number) => {
    const response = await fetch(`${server.baseUrl}${PREFIX}${path}`, {
      method,
      headers,
      body: JSON.stringify(body),
    });
    if (response.status !== expect) {
      throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    }
    await response.arrayBuffer();
  };
  try {
    await call(
      'POST',
      '/applications',
      { client_id: 'trips', display_name: 'Trips', description: 'Round trips' },
      201,
    );
    // Warm-up: the first requests prepare statements and open connections.
    for (let n = 0; n < 20; n++) {
      await call('POST', '/applications/trips/users', userBody(`warm-${n}`), 201);
      await call('PUT', `/applications/trips/users/okta_oidc/warm-${n}`, profile(n), 200);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pid = server.process.pid!;
    const start = await snapshot(pid, out);
    await inParallel((n) => call('POST', '/applications/trips/users', userBody(`u-${n}`), 201));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const created = await snapshot(pid, out);
    await inParallel((n) =>
      call('PUT', `/applications/trips/users/okta_oidc/u-${n}`, profile(n), 200),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const replaced = await snapshot(pid, out);
    for (const [phase, rows] of [
      ['create', difference(created, start)],
      ['PUT', difference(replaced, created)],
    ] as const) {
      const total = rows.reduce((sum, [, count]) => sum + count, 0);
      process.stdout.write(
        `\n${main}: ${phase} (${N} requests, ${CONCURRENCY} at a time): ${total.toFixed(2)} statements per request\n`,
      );
      for (const [text, count] of rows) {
        process.stdout.write(
          `  ${count.toFixed(3).padStart(7)}  ${text.replace(/\s+/g, ' ').slice(0, 150)}\n`,
        );
      }
    }
  } finally {
    await server.stop();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

/** Calls `request` for 0…N-1, CONCURRENCY at a time. */
async function inParallel(request: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) await request(next++);
    }),
  );
}

function userBody(identifier: string) {
  return {
    provider: 'okta_oidc',
    identifier,
    name: 'New User',
    email: `${identifier}@example.com`,
    locale: 'de-CH',
    roles: ['member'],
    scopes: ['org:acme'],
  };
}

function profile(n: number) {
  return {
    name: `Renamed ${n}`,
    email: `renamed${n}@example.com`,
    locale: 'en-GB',
    roles: ['member'],
    scopes: ['org:acme'],
  };
}

const builds = process.argv.slice(2);
for (const main of builds.length > 0 ? builds : [join(repository, 'dist/main.js')]) {
  await measure(main);
}
