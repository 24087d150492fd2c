// Where the server's main thread went during bench:imports, by step, from the profile that
// `BENCH_CPU_PROF=<dir> npm run bench:imports` writes (V8's --cpu-prof, one per store):
//
//   node --import tsx bench/import-steps.ts <dir>/cpuprof-sqlite.cpuprofile [users]
//
// Each busy sample goes to the first step that a frame of its stack names, read from the leaf
// towards the root (so a native call is charged to the JavaScript that made it); `(garbage
// collector)` and `(program)` are steps of their own. With `users`, each step is also given in
// µs per imported user (the whole server run: start-up, GET user load and export are lines of
// their own). The profile samples wall time on the main thread: a synchronous fsync in COMMIT
// counts, time spent waiting on PostgreSQL does not (it is idle).

import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
}
interface Profile {
  nodes: { id: number; callFrame: Frame; children?: number[] }[];
  samples: number[];
  startTime: number;
  endTime: number;
}

const STEPS: [string, (frame: Frame) => boolean][] = [
  [
    'COMMIT and BEGIN (SQLite: the WAL fsync)',
    (f) => ['#tryStatement', '#begin'].includes(f.functionName),
  ],
  [
    'events INSERT',
    (f) =>
      ['#runAfterwards', 'insertPendingEvents', 'withEventParameters'].includes(f.functionName),
  ],
  ['SQLite statements (users INSERT, job row)', (f) => f.functionName === '#runInSavepoint'],
  ['PostgreSQL transaction (pg client)', (f) => f.functionName === '#transaction'],
  ['lookup of stored users', (f) => f.functionName === 'findUsersForImport'],
  ['planning (diff, records, events)', (f) => f.functionName === 'planImport'],
  [
    'job rows and statements',
    (f) => ['#record', 'recordImportBatch', 'insertStatements'].includes(f.functionName),
  ],
  [
    'JSON parse and depth check',
    (f) => /secure-json-parse/.test(f.url) || f.functionName === 'exceedsJsonDepth',
  ],
  [
    'mapping the line (format)',
    (f) => f.functionName === 'mapLine' || /imports\.formats/.test(f.url),
  ],
  ['domain check', (f) => f.functionName === 'checkUser'],
  ['reading lines (NDJSON, UTF-8)', (f) => /imports\.lines/.test(f.url)],
  ['batch bookkeeping', (f) => /imports\.service/.test(f.url)],
  [
    'export (rows to NDJSON)',
    (f) => ['exportLines', 'exportUsers', 'toExportLine'].includes(f.functionName),
  ],
  ['GET user and job polls (HTTP)', (f) => /fastify|_http_|find-my-way/.test(f.url)],
  ['pg client (protocol, rows)', (f) => /node_modules\/pg(-[a-z]+)?\//.test(f.url)],
  [
    'streams and sockets (the file read; writes to PostgreSQL and HTTP)',
    (f) => /internal\/fs\/streams|internal\/streams/.test(f.url),
  ],
  ['start-up (modules)', (f) => /modules\/esm|modules\/cjs|run_main/.test(f.url)],
];

const [file, usersArgument] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: import-steps.ts <profile> [users]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes)
  for (const child of node.children ?? []) parents.set(child, node.id);
const counts = new Map<string, number>();
let busy = 0;
for (const sample of profile.samples) {
  const leaf = nodes.get(sample)!.callFrame.functionName;
  if (leaf === '(idle)') continue;
  busy++;
  let step: string | undefined =
    leaf === '(garbage collector)'
      ? 'garbage collector'
      : leaf === '(program)'
        ? '(program)'
        : undefined;
  for (
    let id: number | undefined = sample;
    step === undefined && id !== undefined;
    id = parents.get(id)
  ) {
    const frame = nodes.get(id)!.callFrame;
    step = STEPS.find(([, names]) => names(frame))?.[0];
  }
  step ??= 'other';
  counts.set(step, (counts.get(step) ?? 0) + 1);
}
const intervalUs = (profile.endTime - profile.startTime) / profile.samples.length;
const users = Number(usersArgument ?? 0);
process.stdout.write(
  `busy ${((busy * intervalUs) / 1e6).toFixed(1)} s of ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s\n`,
);
for (const [step, count] of [...counts].sort((a, b) => b[1] - a[1])) {
  const perUser = users > 0 ? ` | ${((count * intervalUs) / users).toFixed(1)} µs a user` : '';
  process.stdout.write(`| ${step} | ${((100 * count) / busy).toFixed(1)} %${perUser} |\n`);
}
