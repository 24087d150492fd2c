// Where Tessera's CPU goes, per scenario, from a `BENCH_PERF=<dir>` run:
//
//   node --import tsx bench/perf-summary.ts <dir>/perf-<store>.json [top]
//
// Each measured run of Tessera was recorded by `perf record -e cpu-clock` (every thread of the
// process, on-CPU time only: unlike V8's --cpu-prof, which samples wall time, a thread waiting
// for the CPU on a busy machine is not counted). `perf report` gives each symbol's share of
// the samples and the total CPU time; divided by the requests answered in those runs, that is
// CPU µs per request, by step (the groups below, first match wins) and by native symbol.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const STEPS: [string, RegExp][] = [
  ['kernel: sockets, epoll, scheduling', /^\[kernel\]/],
  // better-sqlite3's prebuilt addon is prebuilds/linux-x64.node (the only native addon here).
  ['SQLite (better-sqlite3, native)', /\((linux-x64|better_sqlite3)\.node\)$/],
  [
    'garbage collection',
    /Heap::|Scaveng|Mark(ing|Compact)|Sweep|Evacuat|MinorM|GCTracer|RememberedSet|SlotSet|Worklist|MemoryAllocator|PagedSpace|NewSpace|SemiSpace|LargeObjectSpace|MemoryReducer/,
  ],
  [
    'crypto (OpenSSL: sign, verify, hash)',
    /libcrypto|ossl_|EVP_|ecp_nistz|bn_|BN_|sha256|SHA256|sha512|ecdsa|ECDSA|RSA_|rsa_|p256|x25519|ec_GFp|OPENSSL|CRYPTO_|HMAC|hmac/,
  ],
  ['JSON (V8 parse and stringify)', /Json|JSON/],
  [
    'strings from C (column values, bytes to and from UTF-8)',
    /Utf8|NewStringFrom|String::New|WriteUtf8|Latin1|StringBytes|Flatten|ExternalString/,
  ],
  ['libc (malloc, memcpy)', /\((libc|ld-linux|libstdc\+\+|libm)[^)]*\)$/],
  ['libuv (event loop, thread pool)', /uv_|libuv/],
];

function stepOf(name: string): string {
  for (const [step, pattern] of STEPS) if (pattern.test(name)) return step;
  // JIT-compiled functions, V8's builtins, inline caches and interpreter, Node's bindings: the
  // JavaScript of Node, Fastify, the plugins and Tessera. perf names JIT code from
  // /tmp/perf-<pid>.map, whose lines go stale as V8 reuses code addresses, so it is not split
  // by function here.
  return 'JavaScript (Node, Fastify, plugins, Tessera; V8 builtins and inline caches)';
}

const [listPath, topArg] = process.argv.slice(2);
if (listPath === undefined) {
  process.stderr.write('usage: perf-summary.ts <dir>/perf-<store>.json [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 10);
const runs = JSON.parse(readFileSync(listPath, 'utf8')) as {
  scenario: string;
  file: string;
  answered: number;
}[];

interface Tally {
  answered: number;
  ns: number;
  bySymbol: Map<string, number>;
}
const tallies = new Map<string, Tally>();
for (const run of runs) {
  const report = execFileSync(
    'perf',
    [
      'report',
      '-i',
      run.file,
      '--stdio',
      '--no-children',
      '--sort',
      'dso,sym',
      '--percent-limit',
      '0',
    ],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const total = Number(/Event count \(approx\.\): (\d+)/.exec(report)?.[1] ?? 0);
  const tally = tallies.get(run.scenario) ?? { answered: 0, ns: 0, bySymbol: new Map() };
  tally.answered += run.answered;
  tally.ns += total;
  for (const line of report.split('\n')) {
    const match = /^\s+([\d.]+)%\s+(\[JIT\] tid \d+|\S+)\s+\[(.)\]\s+(.*?)\s*$/.exec(line);
    if (match === null) continue;
    const [, percent, dso, kind, symbol] = match;
    const name = dso!.startsWith('[JIT]')
      ? '(JIT-compiled JavaScript)'
      : `${kind === 'k' ? '[kernel] ' : ''}${symbol} (${dso})`;
    tally.bySymbol.set(name, (tally.bySymbol.get(name) ?? 0) + (Number(percent) / 100) * total);
  }
  tallies.set(run.scenario, tally);
}

const print = (line: string) => process.stdout.write(`${line}\n`);
const perRequest = (ns: number, tally: Tally) =>
  (ns / 1000 / tally.answered).toFixed(1).padStart(7);
for (const [scenario, tally] of tallies) {
  if (tally.answered === 0) continue;
  const bySteps = new Map<string, number>();
  for (const [symbol, ns] of tally.bySymbol) {
    const step = stepOf(symbol);
    bySteps.set(step, (bySteps.get(step) ?? 0) + ns);
  }
  print(
    `\n## ${scenario}: ${perRequest(tally.ns, tally).trim()} µs of CPU per request ` +
      `(every thread, ${tally.answered} requests)`,
  );
  print('  by step (µs/request):');
  for (const [step, ns] of [...bySteps].sort((a, b) => b[1] - a[1])) {
    if (ns / 1000 / tally.answered >= 0.5) print(`  ${perRequest(ns, tally)}  ${step}`);
  }
  print(`  top ${top} symbols, self time (µs/request):`);
  for (const [name, ns] of [...tally.bySymbol].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    print(`  ${perRequest(ns, tally)}  ${name.slice(0, 140)}`);
  }
}
