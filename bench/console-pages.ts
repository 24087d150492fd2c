// `npm run bench:console`: the admin console's users page with a million users (issue 14's
// target: the first page and the next one each in under 300 ms of server time).
//
// For each store: seed one application with BENCH_USERS users (default 1,000,000) through the
// store's bulk insert, start the built server as its own process (what `npm start` runs), sign
// in to the console as a browser does, then load the users page, the page after it (the
// page's own "Next page" link) and a page from 90 % of the way in, each BENCH_CONSOLE_SAMPLES times
// (default 30) after 5 unmeasured loads. Server time is the server's own Server-Timing figure
// (from the request's arrival to the rendered page leaving); wall time is what the client saw.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { encodeUserCursor } from '../src/modules/console/console-users.routes.js';
import { openStore } from '../src/store/open-store.js';
import { POSTGRES_DEFAULTS } from '../src/store/postgres/postgres-store.js';
import { type ServerProcess, startServerProcess } from '../test/run-server.js';
import { seedUsers, seededIdentifier } from '../test/seed-users.js';

const USERS = Number(process.env.BENCH_USERS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_CONSOLE_SAMPLES ?? 30);
const WARMUP = 5;
const TARGET_MS = 300;
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CLIENT_ID = 'bench-app';
const PROVIDER = 'google_oauth2';

const log = (line: string) => process.stderr.write(`${line}\n`);

async function seed(kind: string): Promise<{ databaseUrl: string; cleanUp: () => Promise<void> }> {
  let databaseUrl: string;
  let cleanUp: () => Promise<void>;
  let analyze = async () => {};
  if (kind === 'sqlite') {
    const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-console-'));
    databaseUrl = `sqlite:${join(directory, 'tessera.db')}`;
    cleanUp = async () => rmSync(directory, { recursive: true, force: true });
  } else {
    const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    await admin.connect();
    const name = `tessera_bench_console_${process.pid}_${Date.now()}`;
    await admin.query(`create database ${name}`);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    analyze = async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query('analyze');
      await client.end();
    };
    cleanUp = async () => {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    };
  }
  const store = await openStore(
    kind === 'sqlite'
      ? { kind: 'sqlite', path: databaseUrl.slice('sqlite:'.length) }
      : { kind: 'postgres', url: databaseUrl, ...POSTGRES_DEFAULTS, statementTimeoutMs: 60_000 },
  );
  await store.migrate();
  await seedUsers(store, CLIENT_ID, USERS);
  await store.close();
  await analyze();
  return { databaseUrl, cleanUp };
}

/** Signs in to the console with the key; the session cookie. */
async function signIn(server: ServerProcess, key: string): Promise<string> {
  const response = await fetch(`${server.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.baseUrl },
    body: new URLSearchParams({ key }).toString(),
  });
  const cookie = response.headers.get('set-cookie')?.split(';')[0];
  if (response.status !== 303 || cookie === undefined) {
    throw new Error(`sign-in answered ${response.status}`);
  }
  return cookie;
}

interface Figures {
  serverMs: number[];
  wallMs: number[];
  body: string;
}

async function load(server: ServerProcess, cookie: string, path: string): Promise<Figures> {
  const figures: Figures = { serverMs: [], wallMs: [], body: '' };
  for (let round = 0; round < WARMUP + SAMPLES; round++) {
    const started = performance.now();
    const response = await fetch(`${server.baseUrl}${path}`, { headers: { cookie } });
    const body = await response.text();
    const wall = performance.now() - started;
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
    const timing = /dur=([0-9.]+)/.exec(response.headers.get('server-timing') ?? '');
    if (timing === null) throw new Error(`${path}: no Server-Timing`);
    if (round >= WARMUP) {
      figures.serverMs.push(Number(timing[1]));
      figures.wallMs.push(wall);
    }
    figures.body = body;
  }
  return figures;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
};

async function benchStore(kind: string): Promise<string[]> {
  log(`== ${kind}: seeding ${USERS.toLocaleString('en')} users`);
  const seeded = await seed(kind);
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-console-data-'));
  const key = `tsr_bench_${randomBytes(24).toString('base64url')}`;
  let server: ServerProcess | undefined;
  try {
    server = await startServerProcess(process.execPath, ['dist/main.js'], {
      DATABASE_URL: seeded.databaseUrl,
      IAM_BOOTSTRAP_API_KEY: key,
      IAM_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    });
    const cookie = await signIn(server, key);
    const base = `/console/applications/${CLIENT_ID}/users`;
    const first = await load(server, cookie, base);
    const next = /href="([^"]+)"\s+rel="next"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    if (next === undefined) throw new Error('the first page has no next-page link');
    const pages: [string, Figures][] = [
      ['first page', first],
      ['next page', await load(server, cookie, next)],
      [
        `page at row ${Math.floor(USERS * 0.9).toLocaleString('en')}`,
        await load(
          server,
          cookie,
          `${base}?after=${encodeUserCursor({ provider: PROVIDER, identifier: seededIdentifier(Math.floor(USERS * 0.9) - 1) })}`,
        ),
      ],
    ];
    return pages.map(([name, figures]) => {
      const rows = (figures.body.match(/<tr>/g) ?? []).length - 1;
      const median = percentile(figures.serverMs, 50);
      const p95 = percentile(figures.serverMs, 95);
      return (
        `${kind.padEnd(9)} ${name.padEnd(20)} ${String(rows).padStart(4)} rows  ` +
        `server median ${median.toFixed(1).padStart(6)} ms, p95 ${p95.toFixed(1).padStart(6)} ms; ` +
        `wall median ${percentile(figures.wallMs, 50).toFixed(1).padStart(6)} ms  ` +
        `${p95 < TARGET_MS ? 'met' : 'MISSED'} (< ${TARGET_MS} ms)`
      );
    });
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await seeded.cleanUp();
  }
}

const lines: string[] = [];
for (const kind of STORES) {
  try {
    lines.push(...(await benchStore(kind)));
  } catch (error) {
    lines.push(`${kind.padEnd(9)} failed or skipped: ${(error as Error).message}`);
  }
}
process.stdout.write(
  `\nAdmin console, users page, ${USERS.toLocaleString('en')} users, ${SAMPLES} loads each:\n${lines.join('\n')}\n`,
);
