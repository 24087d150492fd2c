// Where Tessera's CPU goes, per scenario, from a `BENCH_CPU_PROF` run:
//
//   node --import tsx bench/profile-summary.ts <dir>/CPU.….cpuprofile <dir>/windows-….json [top]
//
// The benchmark notes when each of Tessera's runs took place (windows-<store>-….json, on the
// monotonic clock V8's profile uses) and how many requests it answered; the samples that fall
// inside a scenario's runs, divided by those requests, give its CPU per request by step (the
// groups below) and by function (self time). Idle samples are left out.

import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface Window {
  scenario: string;
  startUs: number;
  endUs: number;
  answered: number;
}

/** The step a function belongs to, by where it is defined; first match wins. */
const STEPS: [string, RegExp][] = [
  ['garbage collection', /^\(garbage collector\)/],
  [
    'socket write (string → bytes, writev)',
    /^(writeUtf8String|writev|writeBuffer|writeLatin1String) /,
  ],
  ['store: better-sqlite3 (native) and executor', /sqlite-executor|better-sqlite3/],
  ['store: pg client', /nm:pg|pg-protocol|pg-types|postgres-executor|pg-pool/],
  ['store: rows → records', /store\/sql\/rows|sql-users|sql-applications|sql-api-keys|precompiled/],
  [
    'crypto (sign, verify, hash, HMAC)',
    /node:internal\/crypto|nm:jose|signing-keys|^(sign|verify)/,
  ],
  ['response serialization', /fast-json-stringify|^anonymous\d* |serializ/],
  ['validation (Ajv)', /^validate\d* |nm:ajv|http\/validation/],
  ['metrics (prom-client)', /prom-client|http\/metrics/],
  ['rate limit', /rate-limit/],
  ['authentication', /http\/auth|api-key-authenticator|lru-cache/],
  ['logging (pino)', /nm:pino|nm:thread-stream|sonic-boom/],
  ['Fastify and routing', /nm:fastify|find-my-way|nm:@fastify|avvio|light-my-request/],
  ['Tessera code', /^.* dist\//],
  [
    'Node HTTP and streams',
    /node:_http|node:net|node:internal\/streams|node:events|node:internal\/http|parserOn|node:stream|node:buffer|stream_base|node:internal\/url|node:url/,
  ],
  [
    'event loop, promises, timers',
    /task_queues|runMicrotasks|node:internal\/timers|node:internal\/async_hooks|^\(program\)/,
  ],
];

function label(frame: CallFrame): string {
  const where = frame.url
    .replace(/^.*node_modules\/((?:@[^/]+\/)?[^/]+)\//, 'nm:$1/')
    .replace(/^.*\/dist\//, 'dist/');
  return `${frame.functionName || '(anonymous)'} ${where}${where === '' ? '' : `:${frame.lineNumber + 1}`}`;
}

function stepOf(name: string): string {
  for (const [step, pattern] of STEPS) if (pattern.test(name)) return step;
  return 'other';
}

const [profilePath, windowsPath, topArg] = process.argv.slice(2);
if (profilePath === undefined || windowsPath === undefined) {
  process.stderr.write('usage: profile-summary.ts <profile.cpuprofile> <windows.json> [top]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(profilePath, 'utf8')) as Profile;
const windows = JSON.parse(readFileSync(windowsPath, 'utf8')) as Window[];
const top = Number(topArg ?? 12);
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));

interface Tally {
  answered: number;
  busyUs: number;
  byStep: Map<string, number>;
  byFunction: Map<string, number>;
}
const tallies = new Map<string, Tally>();
for (const window of windows) {
  const tally = tallies.get(window.scenario) ?? {
    answered: 0,
    busyUs: 0,
    byStep: new Map(),
    byFunction: new Map(),
  };
  tally.answered += window.answered;
  tallies.set(window.scenario, tally);
}

let time = profile.startTime;
for (let index = 0; index < profile.samples.length; index++) {
  time += profile.timeDeltas[index] ?? 0;
  const delta = profile.timeDeltas[index + 1] ?? 0;
  const window = windows.find((w) => w.startUs <= time && time < w.endUs);
  if (window === undefined) continue;
  const frame = nodes.get(profile.samples[index]!)!.callFrame;
  if (frame.functionName === '(idle)') continue;
  const tally = tallies.get(window.scenario)!;
  const name = label(frame);
  tally.busyUs += delta;
  tally.byFunction.set(name, (tally.byFunction.get(name) ?? 0) + delta);
  const step = stepOf(name);
  tally.byStep.set(step, (tally.byStep.get(step) ?? 0) + delta);
}

const print = (line: string) => process.stdout.write(`${line}\n`);
const perRequest = (us: number, tally: Tally) => (us / tally.answered).toFixed(1).padStart(7);
for (const [scenario, tally] of tallies) {
  if (tally.answered === 0) continue;
  print(
    `\n## ${scenario}: ${perRequest(tally.busyUs, tally).trim()} µs of CPU per request ` +
      `(${tally.answered} requests, main thread only)`,
  );
  print('  by step (µs/request):');
  for (const [step, us] of [...tally.byStep].sort((a, b) => b[1] - a[1])) {
    print(`  ${perRequest(us, tally)}  ${step}`);
  }
  print(`  top ${top} functions, self time (µs/request):`);
  for (const [name, us] of [...tally.byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    print(`  ${perRequest(us, tally)}  ${name}`);
  }
}
