// `npm run bench:imports`: bulk import and export through the built server (what `npm start`
// runs), on SQLite and PostgreSQL. For each store, on a fresh database:
//
// 1. Starts the server and lets it settle; its idle RSS (VmRSS) is the memory baseline.
// 2. Writes an NDJSON file of BENCH_IMPORT_USERS users (default 1,000,000) to a temporary
//    directory, and sends GET user requests at BENCH_GET_RATE a second (default 100, open loop)
//    for 5 s with no import: the latency baseline.
// 3. POSTs the file (streamed from disk) as an import, with events on (every user gets its
//    user.created), keeps the GET user load on, samples the server's RSS every 100 ms, and polls
//    the job until it is done. Import rate = lines / the job's own elapsed time (from the body
//    received to the last batch); the upload (spooling) time is printed beside it.
// 4. Exports every user (GET …/users/export) and counts lines and bytes: export rate.
//
// Printed per store: import users/s (target 20,000 SQLite, 8,000 PostgreSQL), export users/s
// (target 100,000), GET user p50/p99 with no import and during it (target p99 < 50 ms), peak RSS
// during the import against idle RSS (target: within 64 MB). Run under `flock /work/bench.lock`
// on a shared machine.

import { randomBytes } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  statSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { type ServerProcess, repository, startServerProcess } from '../test/run-server.js';
import { POSTGRES_URL, START_ENV, START_FLAGS, onFreshDatabase, percentile } from './bench-kit.js';

const USERS = Number(process.env.BENCH_IMPORT_USERS ?? 1_000_000);
const GET_RATE = Number(process.env.BENCH_GET_RATE ?? 100);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const KEY = `tsr_bench_${randomBytes(24).toString('base64url')}`;
const CLIENT_ID = 'bench-app';
/** BENCH_CPU_PROF=<dir>: the server runs under V8's profiler (--cpu-prof), one profile per store. */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;
/** BENCH_SERVER_FLAGS: more flags for the server's node (e.g. `--trace-gc`), space-separated. */
const SERVER_FLAGS = (process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
/** BENCH_SERVER_LOG=<dir>: the server's output is written there, one file per store. */
const SERVER_LOG_DIR = process.env.BENCH_SERVER_LOG;
const log = (line: string) => process.stderr.write(`${line}\n`);

function rssMb(pid: number): number {
  return rssParts(pid).rss;
}

/** The resident set and its parts (anonymous; file-backed and shared: SQLite's files), MB. */
function rssParts(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return {
    rss: mb('VmRSS'),
    anon: mb('RssAnon'),
    file: mb('RssFile') + mb('RssShmem'),
  };
}

/** A glibc heap of a thread's malloc arena: 64 MB, aligned to its size (HEAP_MAX_SIZE). */
const ARENA_KB = 64 * 1024;

/**
 * The anonymous resident set by who maps it, MB, from /proc/<pid>/smaps: the main thread's
 * malloc heap (`[heap]`, grown by brk), the heaps of the other threads' malloc arenas (64 MB
 * regions, aligned: a read-write part and its reserve), and the rest (V8's heap pages, the
 * malloc chunks large enough to be mapped on their own, stacks); and the number of threads.
 */
function anonParts(pid: number) {
  const lines = readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n');
  const maps: { start: bigint; end: bigint; perms: string; path: string; rss: number }[] = [];
  for (const line of lines) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      maps.push({
        start: BigInt(`0x${header[1]}`),
        end: BigInt(`0x${header[2]}`),
        perms: header[3]!,
        path: header[4]!,
        rss: 0,
      });
    } else if (line.startsWith('Rss:') && maps.length > 0) {
      maps[maps.length - 1]!.rss = Number(/\d+/.exec(line)![0]);
    }
  }
  const parts = { brk: 0, arenas: 0, arenaCount: 0, other: 0, threads: 0 };
  for (let index = 0; index < maps.length; index++) {
    const map = maps[index]!;
    if (map.path === '[heap]') parts.brk += map.rss;
    else if (map.path !== '' && !map.path.startsWith('[anon')) continue;
    else {
      const next = maps[index + 1];
      const reserve =
        next !== undefined && next.start === map.end && next.perms.startsWith('---')
          ? Number((next.end - next.start) / 1024n)
          : 0;
      const size = Number((map.end - map.start) / 1024n) + reserve;
      if (
        map.perms.startsWith('rw') &&
        map.start % BigInt(ARENA_KB * 1024) === 0n &&
        size === ARENA_KB
      ) {
        parts.arenas += map.rss;
        parts.arenaCount++;
        if (reserve > 0) index++;
      } else parts.other += map.rss;
    }
  }
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  parts.threads = Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return {
    ...parts,
    brk: parts.brk / 1024,
    arenas: parts.arenas / 1024,
    other: parts.other / 1024,
  };
}

async function writeFile(path: string): Promise<void> {
  const out = createWriteStream(path);
  for (let n = 0; n < USERS; n++) {
    const line =
      JSON.stringify({
        provider: 'google_oauth2',
        identifier: String(100_000_000_000_000 + n),
        name: `User ${n}`,
        email: `user${n}@example.com`,
        locale: 'en',
        roles: n % 3 === 0 ? ['admin'] : ['member'],
        scopes: [`tenant:${n % 100}`],
      }) + '\n';
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** GET user requests at a fixed rate until stopped; each one's send time and latency. */
function driveGets(server: ServerProcess) {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const samples: { sentAt: number; ms: number }[] = [];
  let stopped = false;
  const path = `/iam/api/v1/applications/${CLIENT_ID}/users/google_oauth2/probe`;
  const timer = setInterval(() => {
    if (stopped) return;
    const sentAt = performance.now();
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        agent,
        headers: { authorization: `apikey ${KEY}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => samples.push({ sentAt, ms: performance.now() - sentAt }));
      },
    );
    req.on('error', () => undefined);
    req.end();
  }, 1000 / GET_RATE);
  return {
    samples,
    stop() {
      stopped = true;
      clearInterval(timer);
      agent.destroy();
    },
  };
}

/** V8's committed heap and Node's external memory (Buffers), MB, from the server's /metrics. */
async function heapMb(
  server: ServerProcess,
): Promise<{ heap: number; used: number; external: number }> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const read = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1024 / 1024;
  return {
    heap: read('nodejs_heap_size_total_bytes'),
    used: read('nodejs_heap_size_used_bytes'),
    external: read('nodejs_external_memory_bytes'),
  };
}

function latency(samples: { ms: number }[]) {
  const sorted = samples.map((sample) => sample.ms).sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function api(server: ServerProcess, path: string, init: RequestInit = {}) {
  return fetch(`${server.baseUrl}/iam/api/v1${path}`, {
    ...init,
    headers: { authorization: `apikey ${KEY}`, ...(init.headers as Record<string, string>) },
  });
}

async function benchStore(store: string, directory: string, file: string) {
  return onFreshDatabase(store, directory, async (databaseUrl) => {
    const server = await startServerProcess(
      process.execPath,
      [
        ...START_FLAGS,
        ...SERVER_FLAGS,
        ...(CPU_PROF_DIR === undefined
          ? []
          : [
              '--cpu-prof',
              `--cpu-prof-dir=${CPU_PROF_DIR}`,
              `--cpu-prof-name=cpuprof-${store}.cpuprofile`,
            ]),
        join(repository, 'dist/main.js'),
      ],
      {
        ...START_ENV,
        DATABASE_URL: databaseUrl,
        IAM_DATA_DIR: mkdtempSync(join(directory, 'data-')),
        IAM_BOOTSTRAP_API_KEY: KEY,
        IAM_RATE_LIMIT_PER_MINUTE: '0',
        LOG_LEVEL: 'warn',
      },
    );
    try {
      const pid = server.process.pid!;
      await api(server, '/applications', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: CLIENT_ID, display_name: 'Bench', description: '' }),
      });
      await api(server, `/applications/${CLIENT_ID}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          provider: 'google_oauth2',
          identifier: 'probe',
          name: 'Probe',
          email: 'probe@example.com',
          locale: 'en',
          roles: [],
          scopes: [],
        }),
      });
      // Idle: GET load alone, 5 s; its RSS at the end is the baseline.
      const idleLoad = driveGets(server);
      await new Promise((resolve) => setTimeout(resolve, 5000));
      idleLoad.stop();
      const idleRss = rssMb(pid);
      const idle = latency(idleLoad.samples.slice(GET_RATE)); // the first second warms up

      const load = driveGets(server);
      let peakRss = idleRss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 100);
      // Once a second, V8's share of the resident set (from /metrics), kept at the largest RSS.
      const heapAtIdle = await heapMb(server);
      const posted = performance.now();
      const partsAtIdle = { ...rssParts(pid), ...anonParts(pid) };
      let heapAtPeak = {
        ...partsAtIdle,
        rss: 0,
        heap: 0,
        used: 0,
        external: 0,
      };
      // With BENCH_SERVER_LOG, every second's parts are kept (written beside the server's log).
      const timeline: string[] = [];
      const heapSampler = setInterval(() => {
        const parts = rssParts(pid);
        if (SERVER_LOG_DIR !== undefined) {
          const at = ((performance.now() - posted) / 1000).toFixed(1);
          timeline.push(JSON.stringify({ at, ...parts, ...anonParts(pid) }));
        }
        if (parts.rss <= heapAtPeak.rss) return;
        const anon = anonParts(pid);
        heapMb(server)
          .then((heap) => {
            if (parts.rss > heapAtPeak.rss) heapAtPeak = { ...parts, ...anon, ...heap };
          })
          .catch(() => undefined);
      }, 1000);
      const response = await fetch(
        `${server.baseUrl}/iam/api/v1/applications/${CLIENT_ID}/users/import`,
        {
          method: 'POST',
          headers: { authorization: `apikey ${KEY}`, 'content-type': 'application/x-ndjson' },
          body: createReadStream(file) as never,
          duplex: 'half',
        } as RequestInit,
      );
      const job = (await response.json()) as { id: string };
      const uploadSeconds = (performance.now() - posted) / 1000;
      const partsAfterUpload = { ...rssParts(pid), ...anonParts(pid) };
      let done: {
        status: string;
        counts: { read: number };
        elapsed_seconds: number;
        failure?: string | null;
      };
      for (;;) {
        done = (await (await api(server, `/imports/${job.id}`)).json()) as typeof done;
        if (done.status !== 'running') break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const importEnd = performance.now();
      if (done.status === 'failed') {
        // Said with the job's reason and what the server logged, before the other figures.
        log(`import failed: ${done.failure ?? '(no reason recorded)'}; the server's log ends:`);
        log(server.output().slice(-4000));
      }
      clearInterval(sampler);
      clearInterval(heapSampler);
      if (SERVER_LOG_DIR !== undefined) {
        writeFileSync(join(SERVER_LOG_DIR, `timeline-${store}.ndjson`), timeline.join('\n'));
      }
      load.stop();
      const during = latency(
        load.samples.filter((sample) => sample.sentAt >= posted && sample.sentAt <= importEnd),
      );

      const exportStart = performance.now();
      let bytes = 0;
      let lines = 0;
      let exportFailure: string | null = null;
      try {
        const exported = await api(server, `/applications/${CLIENT_ID}/users/export`);
        for await (const chunk of exported.body as unknown as AsyncIterable<Uint8Array>) {
          bytes += chunk.length;
          for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) lines++;
        }
      } catch (error) {
        // Said, with what the server logged, instead of losing the store's other figures.
        exportFailure = `${(error as Error).message} after ${lines} lines; the server's log ends:\n${server.output().slice(-4000)}`;
      }
      const exportSeconds = (performance.now() - exportStart) / 1000;
      return {
        store,
        status: done.status,
        counts: done.counts,
        importSeconds: done.elapsed_seconds,
        uploadSeconds,
        importRate: done.counts.read / done.elapsed_seconds,
        endToEndRate: done.counts.read / ((importEnd - posted) / 1000),
        exportLines: lines,
        exportMb: bytes / 1024 / 1024,
        exportRate: lines / exportSeconds,
        exportFailure,
        idle,
        during,
        idleRss,
        peakRss,
        heapAtIdle,
        partsAtIdle,
        partsAfterUpload,
        heapAtPeak,
      };
    } finally {
      await server.stop();
      if (SERVER_LOG_DIR !== undefined) {
        writeFileSync(join(SERVER_LOG_DIR, `server-${store}.log`), server.output());
      }
    }
  });
}

async function main() {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-bench-imports-'));
  try {
    const file = join(directory, 'users.ndjson');
    log(`writing ${USERS} users to ${file}`);
    await writeFile(file);
    log(`file: ${(statSync(file).size / 1024 / 1024).toFixed(0)} MB`);
    const stores = [...STORES];
    if (stores.includes('postgres')) {
      const client = new pg.Client({
        connectionString: POSTGRES_URL,
        connectionTimeoutMillis: 3000,
      });
      try {
        await client.connect();
        await client.end();
      } catch (error) {
        log(`PostgreSQL skipped: ${(error as Error).message}`);
        stores.splice(stores.indexOf('postgres'), 1);
      }
    }
    const targets: Record<string, number> = { sqlite: 20_000, postgres: 8_000 };
    for (const store of stores) {
      log(`${store}: importing ${USERS} users`);
      const r = await benchStore(store, directory, file);
      const f = (n: number) => Math.round(n).toLocaleString('en-US');
      process.stdout.write(
        [
          `## ${store}, ${USERS.toLocaleString('en-US')} users, events on`,
          `import: ${r.status}, ${JSON.stringify(r.counts)}`,
          `import: ${f(r.importRate)} users/s over ${r.importSeconds.toFixed(1)} s (target ${f(targets[store]!)}: ${(r.importRate / targets[store]!).toFixed(2)}×); upload and spool ${r.uploadSeconds.toFixed(1)} s; end to end ${f(r.endToEndRate)} users/s`,
          r.exportFailure === null
            ? `export: ${f(r.exportRate)} users/s, ${r.exportLines} lines, ${r.exportMb.toFixed(0)} MB (target 100,000: ${(r.exportRate / 100_000).toFixed(2)}×)`
            : `export: FAILED: ${r.exportFailure}`,
          `GET user: idle p50 ${r.idle.p50.toFixed(1)} ms p99 ${r.idle.p99.toFixed(1)} ms (${r.idle.count}); during the import p50 ${r.during.p50.toFixed(1)} ms p99 ${r.during.p99.toFixed(1)} ms (${r.during.count}); p99 ratio ${(r.during.p99 / Math.max(0.1, r.idle.p99)).toFixed(1)}× (target < 50 ms)`,
          `RSS: idle ${r.idleRss.toFixed(0)} MB, peak during the import ${r.peakRss.toFixed(0)} MB, +${(r.peakRss - r.idleRss).toFixed(0)} MB (target within 64 MB)`,
          `RSS parts, idle → at the largest RSS sampled each second (${r.heapAtPeak.rss.toFixed(0)} MB): V8 heap committed ${r.heapAtIdle.heap.toFixed(0)} → ${r.heapAtPeak.heap.toFixed(0)} MB (used ${r.heapAtIdle.used.toFixed(0)} → ${r.heapAtPeak.used.toFixed(0)}), external ${r.heapAtIdle.external.toFixed(0)} → ${r.heapAtPeak.external.toFixed(0)} MB, anonymous ${r.partsAtIdle.anon.toFixed(0)} → ${r.heapAtPeak.anon.toFixed(0)} MB, file-backed and shared ${r.partsAtIdle.file.toFixed(0)} → ${r.heapAtPeak.file.toFixed(0)} MB`,
          `anonymous by mapping, idle → after the upload (${r.partsAfterUpload.rss.toFixed(0)} MB) → at the largest RSS: main thread's malloc heap (brk) ${[r.partsAtIdle, r.partsAfterUpload, r.heapAtPeak].map((p) => p.brk.toFixed(0)).join(' → ')} MB; other threads' malloc arenas ${[r.partsAtIdle, r.partsAfterUpload, r.heapAtPeak].map((p) => `${p.arenas.toFixed(0)} (${p.arenaCount})`).join(' → ')} MB; the rest (V8's heap pages, large malloc chunks, stacks) ${[r.partsAtIdle, r.partsAfterUpload, r.heapAtPeak].map((p) => p.other.toFixed(0)).join(' → ')} MB; threads ${r.partsAtIdle.threads} → ${r.heapAtPeak.threads}`,
          '',
        ].join('\n'),
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
