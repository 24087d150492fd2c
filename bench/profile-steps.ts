// Where the main thread's CPU goes, per scenario and step, from a `BENCH_CPU_PROF=<dir>` run:
//
//   node --import tsx bench/profile-steps.ts <dir>/cpuprof-<store>.json [--markdown] [--stacks N]
//     [--functions N] [--inclusive N]
//
// --functions N lists each scenario's N functions of most self time (µs of the main thread per
// request), --inclusive N the N of most time with their callees (a function counted once per
// sample however often it recurs): side by side for two builds' runs of one scenario
// (bench/baseline.ts's profiles), the difference is where the added cost sits.
//
// Each measured run of Tessera was recorded by V8's sampling profiler (bench/run.ts, through the
// inspector). Every sample is given to one step by its stack: the frames are read from the leaf
// towards the root, and the first frame that one of the RULES below recognises decides (the
// rules are tried in order on that frame). Frames no rule names (V8 builtins, Node's generic
// event and promise machinery, native functions without a file) pass the sample on to their
// caller, so a native call is charged to the JavaScript that made it: better-sqlite3's `all` to
// the store, `writeUtf8String` to Node's HTTP write, a hash to the API-key check. `(idle)` is
// excluded; `(garbage collector)` and `(program)` (native code outside any JavaScript: the event
// loop, the HTTP parser, V8 itself) are steps of their own.
//
// µs per request of a step = its share of the busy samples × the main thread's CPU time in those
// runs (from /proc, user + system) ÷ the requests answered. On a loaded machine the profiler
// misses some ticks (busy samples × interval came to 75–95 % of the main thread's CPU time in our
// runs), so the samples are used for the split and /proc for the total; the raw figure (busy
// samples × interval ÷ requests) is printed beside it. The process's other threads (libuv's pool,
// where the token scenarios sign and verify; V8's GC helpers; the logger) are one more line: their
// CPU time, which the profiler does not see.

import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}
/** One profiled run of a scenario, as bench/run.ts records it beside the profiles. */
export interface ProfiledRun {
  scenario: string;
  file: string;
  answered: number;
  intervalUs: number;
  mainThreadCpuUs: number;
  processCpuUs: number;
}

const STEPS = [
  'Node HTTP: parse, socket reads and writes',
  'Fastify: routing and request lifecycle',
  'hook: request id',
  'hook: failure limiter',
  'hook: API-key auth (incl. digest)',
  'hook: rate limit',
  'metrics (hook; GC observer of prom-client)',
  'hook: access log (pino)',
  'body parsing (JSON, form)',
  'schema validation',
  'route handler and service',
  'problem documents (errors)',
  'store: SQLite (better-sqlite3, statements)',
  'store: PostgreSQL client (pg: protocol, its socket I/O)',
  'store: queries and transactions (Tessera, Kysely)',
  'row → record → resource',
  'serialization (JSON.stringify, fast-json-stringify)',
  'JWT (jose: decode, claims, key set)',
  'crypto: sign / verify (node:crypto)',
  'garbage collection',
  'native, outside JavaScript (event loop, HTTP parser, V8)',
  'other (Node internals, promises, timers)',
] as const;
type Step = (typeof STEPS)[number];
const HTTP: Step = 'Node HTTP: parse, socket reads and writes';
const PG: Step = 'store: PostgreSQL client (pg: protocol, its socket I/O)';

/** [step, test on one frame]; tried in order on each frame, leaf first. */
const RULES: [Step, (frame: CallFrame) => boolean][] = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  [
    'native, outside JavaScript (event loop, HTTP parser, V8)',
    (f) => f.functionName === '(program)',
  ],
  ['hook: request id', (f) => f.functionName === 'genReqId' || /\/hyperid\//.test(f.url)],
  ['hook: failure limiter', (f) => /\/http\/auth-failures\.[jt]s$/.test(f.url)],
  [
    'hook: API-key auth (incl. digest)',
    // (api-key-authenticator.service.js; api-key-authenticator.js in earlier builds such as 95ac0ff)
    (f) => /\/http\/auth\.[jt]s$|\/api-keys\/api-key-authenticator(\.service)?\.[jt]s$/.test(f.url),
  ],
  [
    'hook: rate limit',
    (f) => /\/http\/rate-limit\.[jt]s$|\/@fastify\/rate-limit\/|\/toad-cache\//.test(f.url),
  ],
  [
    'metrics (hook; GC observer of prom-client)',
    (f) => /\/http\/metrics\.[jt]s$|\/prom-client\/|^node:internal\/perf\/observe$/.test(f.url),
  ],
  [
    'hook: access log (pino)',
    (f) =>
      /\/http\/logging\.[jt]s$|\/pino\/|\/pino-std-serializers\/|\/sonic-boom\/|\/fastify\/lib\/logger/.test(
        f.url,
      ),
  ],
  [
    'serialization (JSON.stringify, fast-json-stringify)',
    (f) =>
      /\/fast-json-stringify\//.test(f.url) ||
      /^(userPageJson|serialize|stringify)$/.test(f.functionName) ||
      (/\/fastify\/lib\/reply\.js$/.test(f.url) && /serialize/i.test(f.functionName)),
  ],
  [
    'body parsing (JSON, form)',
    (f) =>
      /\/http\/content-types\.[jt]s$|\/secure-json-parse\/|\/fastify\/lib\/content-type-parser/.test(
        f.url,
      ) || f.functionName === 'parseForm',
  ],
  [
    'schema validation',
    (f) =>
      /\/http\/validation\.[jt]s$|\/http\/formats\.[jt]s$|\/typebox\/|\/ajv\/|\/fastify\/lib\/validation/.test(
        f.url,
      ),
  ],
  [
    'problem documents (errors)',
    (f) => /\/http\/error-handler\.[jt]s$|\/problems\.[jt]s$|\/fastify\/lib\/error/.test(f.url),
  ],
  [
    'store: SQLite (better-sqlite3, statements)',
    (f) => /\/store\/sqlite\/|\/better-sqlite3\//.test(f.url),
  ],
  [
    'store: PostgreSQL client (pg: protocol, its socket I/O)',
    (f) =>
      /\/store\/postgres\/|\/pg\/|\/pg-protocol\/|\/pg-pool\/|\/pg-types\/|\/postgres-/.test(f.url),
  ],
  [
    'row → record → resource',
    (f) =>
      /\/store\/sql\/rows\.[jt]s$|\/http\/schemas\.[jt]s$/.test(f.url) ||
      /^to\w+(Resource|Record)$/.test(f.functionName),
  ],
  ['store: queries and transactions (Tessera, Kysely)', (f) => /\/store\/|\/kysely\//.test(f.url)],
  ['JWT (jose: decode, claims, key set)', (f) => /\/jose\//.test(f.url)],
  [
    'crypto: sign / verify (node:crypto)',
    (f) =>
      /^node:internal\/crypto\/(sig|keys|webcrypto|ec|rsa|cfrg|util|keygen)$/.test(f.url) ||
      f.functionName === 'SignJob',
  ],
  [
    'route handler and service',
    (f) => /\/(dist|src)\/(modules|access|app|server)\b|\/(dist|src)\/http\//.test(f.url),
  ],
  [
    'Fastify: routing and request lifecycle',
    (f) => /\/fastify\/|\/find-my-way\/|\/avvio\/|\/@fastify\//.test(f.url),
  ],
  [
    'Node HTTP: parse, socket reads and writes',
    (f) =>
      /^node:(_http_\w+|net|stream|internal\/streams\/\w+|internal\/stream_base_commons|internal\/http|internal\/net)$/.test(
        f.url,
      ),
  ],
];

const PG_FRAME = /\/pg\/|\/pg-protocol\/|\/pg-pool\//;

function stepOf(stack: CallFrame[]): Step | 'idle' {
  if (stack[0]?.functionName === '(idle)') return 'idle';
  for (const frame of stack) {
    for (const [step, test] of RULES) {
      if (!test(frame)) continue;
      // Socket reads and writes that pg's connection makes are the PostgreSQL client's.
      if (step === HTTP && stack.some((f) => PG_FRAME.test(f.url))) return PG;
      return step;
    }
  }
  return 'other (Node internals, promises, timers)';
}

interface Tally {
  answered: number;
  mainThreadCpuUs: number;
  processCpuUs: number;
  busySamples: number;
  rawUs: number;
  bySteps: Map<Step, number>;
  unmatched: Map<string, number>;
  selfByFunction: Map<string, number>;
  inclusiveByFunction: Map<string, number>;
}

const frameName = (f: CallFrame & { lineNumber?: number }) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\/node_modules\//, '').replace(/.*\/(dist|src)\//, '')}:${(f.lineNumber ?? -1) + 1}`;

function tallyRuns(runs: ProfiledRun[]): Map<string, Tally> {
  const tallies = new Map<string, Tally>();
  for (const run of runs) {
    const profile = JSON.parse(readFileSync(run.file, 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parentOf = new Map<number, number>();
    for (const node of profile.nodes)
      for (const child of node.children ?? []) parentOf.set(child, node.id);
    const tally = tallies.get(run.scenario) ?? {
      answered: 0,
      mainThreadCpuUs: 0,
      processCpuUs: 0,
      busySamples: 0,
      rawUs: 0,
      bySteps: new Map(),
      unmatched: new Map(),
      selfByFunction: new Map(),
      inclusiveByFunction: new Map(),
    };
    tally.answered += run.answered;
    tally.mainThreadCpuUs += run.mainThreadCpuUs;
    tally.processCpuUs += run.processCpuUs;
    const stackOf = (leaf: number): CallFrame[] => {
      const stack: CallFrame[] = [];
      for (let id: number | undefined = leaf; id !== undefined; id = parentOf.get(id)) {
        stack.push(byId.get(id)!.callFrame);
      }
      return stack;
    };
    // Samples of one node share a stack, so each node is classified once.
    const stepOfNode = new Map<number, Step | 'idle'>();
    for (const sample of profile.samples) {
      let step = stepOfNode.get(sample);
      if (step === undefined) {
        step = stepOf(stackOf(sample));
        stepOfNode.set(sample, step);
      }
      if (step === 'idle') continue;
      tally.busySamples++;
      tally.rawUs += run.intervalUs;
      tally.bySteps.set(step, (tally.bySteps.get(step) ?? 0) + 1);
      const stack = stackOf(sample);
      const self = frameName(stack[0]!);
      tally.selfByFunction.set(self, (tally.selfByFunction.get(self) ?? 0) + 1);
      for (const name of new Set(stack.map(frameName))) {
        tally.inclusiveByFunction.set(name, (tally.inclusiveByFunction.get(name) ?? 0) + 1);
      }
      if (step === 'other (Node internals, promises, timers)') {
        const key = stackOf(sample)
          .slice(0, 4)
          .map((f) => `${f.functionName || '(anonymous)'}@${f.url.replace(/.*\//, '')}`)
          .join(' < ');
        tally.unmatched.set(key, (tally.unmatched.get(key) ?? 0) + 1);
      }
    }
    tallies.set(run.scenario, tally);
  }
  return tallies;
}

/** µs per request of each step, scaled to the main thread's CPU time; plus the other threads. */
function perRequest(tally: Tally): {
  steps: Map<Step, number>;
  mainThread: number;
  otherThreads: number;
  raw: number;
} {
  const mainThread = tally.mainThreadCpuUs / tally.answered;
  const steps = new Map<Step, number>();
  for (const step of STEPS) {
    steps.set(step, ((tally.bySteps.get(step) ?? 0) / tally.busySamples) * mainThread);
  }
  return {
    steps,
    mainThread,
    otherThreads: (tally.processCpuUs - tally.mainThreadCpuUs) / tally.answered,
    raw: tally.rawUs / tally.answered,
  };
}

function main(): void {
  const args = process.argv.slice(2);
  const listPath = args.find((arg) => !arg.startsWith('--'));
  if (listPath === undefined) {
    process.stderr.write(
      'usage: profile-steps.ts <dir>/cpuprof-<store>.json [--markdown] [--stacks N]\n',
    );
    process.exit(2);
  }
  const stacksAt = args.indexOf('--stacks');
  const stacks = stacksAt === -1 ? 0 : Number(args[stacksAt + 1] ?? 10);
  const runs = JSON.parse(readFileSync(listPath, 'utf8')) as ProfiledRun[];
  const tallies = tallyRuns(runs);
  const print = (line: string) => process.stdout.write(`${line}\n`);
  const figures = [...tallies].map(([scenario, tally]) => ({
    scenario,
    tally,
    ...perRequest(tally),
  }));
  if (args.includes('--markdown')) {
    // One table: a row per step, a column per scenario (µs of CPU per request).
    const used = STEPS.filter((step) => figures.some((f) => f.steps.get(step)! >= 0.5));
    print(`| step | ${figures.map((f) => `\`${f.scenario}\``).join(' | ')} |`);
    print(`| --- | ${figures.map(() => '---:').join(' | ')} |`);
    const cell = (value: number) => (value < 0.5 ? '·' : value.toFixed(0));
    for (const step of used)
      print(`| ${step} | ${figures.map((f) => cell(f.steps.get(step)!)).join(' | ')} |`);
    print(
      `| **main thread** | ${figures.map((f) => `**${f.mainThread.toFixed(0)}**`).join(' | ')} |`,
    );
    print(
      `| other threads (libuv pool: sign/verify; GC helpers) | ${figures.map((f) => cell(f.otherThreads)).join(' | ')} |`,
    );
    print(
      `| **process** | ${figures.map((f) => `**${(f.mainThread + f.otherThreads).toFixed(0)}**`).join(' | ')} |`,
    );
    print(`| (samples × interval) | ${figures.map((f) => f.raw.toFixed(0)).join(' | ')} |`);
    print(`| requests profiled | ${figures.map((f) => f.tally.answered).join(' | ')} |`);
    return;
  }
  for (const f of figures) {
    print(
      `\n## ${f.scenario}: ${f.mainThread.toFixed(1)} µs main thread + ${f.otherThreads.toFixed(1)} µs other threads per request ` +
        `(${f.tally.answered} requests, ${f.tally.busySamples} busy samples = ${f.raw.toFixed(1)} µs/request raw)`,
    );
    for (const [step, us] of [...f.steps].sort((a, b) => b[1] - a[1])) {
      if (us >= 0.5) print(`  ${us.toFixed(1).padStart(7)}  ${step}`);
    }
    for (const [flag, counts] of [
      ['--functions', f.tally.selfByFunction],
      ['--inclusive', f.tally.inclusiveByFunction],
    ] as const) {
      const at = args.indexOf(flag);
      if (at === -1) continue;
      print(`  ${flag === '--functions' ? 'self' : 'inclusive'} time (µs per request):`);
      for (const [name, count] of [...counts]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(args[at + 1] ?? 30))) {
        print(
          `  ${((count / f.tally.busySamples) * f.mainThread).toFixed(1).padStart(7)}  ${name}`,
        );
      }
    }
    if (stacks > 0) {
      print(`  unattributed stacks (samples):`);
      for (const [key, count] of [...f.tally.unmatched]
        .sort((a, b) => b[1] - a[1])
        .slice(0, stacks)) {
        print(`  ${String(count).padStart(7)}  ${key}`);
      }
    }
  }
}

main();
