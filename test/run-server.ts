// Tessera as its own process, the way operators run it (`npm start`, `tessera serve`), and
// calls to it over real HTTP. Free of node:test, so the benchmark uses it too; tests import
// server-process.ts, which adds the check that no server prints a key.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const repository = new URL('..', import.meta.url).pathname;

/**
 * True when the runner (scripts/run-tests.mjs) built dist/ from the sources under test just
 * before, and nothing rebuilds it while the tests run.
 */
function distIsFresh(): boolean {
  return process.env.TESSERA_TEST_DIST_FRESH === '1';
}

/**
 * How to start the server's entry point (`npm start`'s): the compiled dist/main.js when the
 * test runner just built it (no TypeScript compiler in each child), else the sources via tsx.
 */
export function serverEntry(): string[] {
  return distIsFresh() ? [join(repository, 'dist/main.js')] : ['--import', 'tsx', 'src/main.ts'];
}

/**
 * Builds the server (tsc, as `npm run build` does) into a directory of its own, so that a
 * concurrent `npm start` elsewhere rewriting dist/ can never hand this run a half-written file.
 * Under the test runner, which built dist/ once for the whole run, that build is used.
 */
export function buildServerCopy(): { main: string; remove: () => void } {
  if (distIsFresh()) return { main: join(repository, 'dist/main.js'), remove: () => {} };
  const directory = mkdtempSync(join(tmpdir(), 'tessera-chaos-build-'));
  copyFileSync(join(repository, 'package.json'), join(directory, 'package.json'));
  symlinkSync(join(repository, 'node_modules'), join(directory, 'node_modules'), 'dir');
  // The built server reads files beside the sources (the console's style sheet and script).
  symlinkSync(join(repository, 'src'), join(directory, 'src'), 'dir');
  const result = spawnSync(
    process.execPath,
    [
      join(repository, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(repository, 'tsconfig.build.json'),
      '--outDir',
      join(directory, 'dist'),
      '--tsBuildInfoFile',
      join(directory, 'tsbuildinfo'),
    ],
    { cwd: repository, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`build failed:\n${result.stdout}${result.stderr}`);
  return {
    main: join(directory, 'dist/main.js'),
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  process: ChildProcess;
  port: number;
  baseUrl: string;
  /** Everything it printed so far (stdout and stderr). */
  output: () => string;
  /** Its exit code once it exits. */
  exited: Promise<number | null>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop: () => Promise<number | null>;
  /**
   * Sends `signal` to the server and, when it runs workers (IAM_WORKERS), to each of them at
   * once: kill -9 of the whole service, not of its primary alone.
   */
  killAll: (signal: NodeJS.Signals) => void;
}

/** The processes `pid` started (Linux), such as a primary's workers. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((text) => text.trim() !== '')
      .map(Number);
  } catch {
    return [];
  }
}

const OUTPUT_LIMIT = 64 * 1024 * 1024;
const TRUNCATED = '\n[output past 64 MiB dropped]\n';

/**
 * Runs `command args…` in the repository with `env` on a free port, and resolves once
 * /healthz answers (rejecting, with its output, if it exits or takes more than 90 s).
 */
export async function startServerProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<ServerProcess> {
  const port = await freePort();
  let output = '';
  const child = spawn(command, args, {
    cwd: repository,
    env: { ...process.env, LOG_LEVEL: 'info', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A benchmark at info level writes an access-log line per request: hundreds of megabytes
  // over a run, more than a string can hold. Past OUTPUT_LIMIT the rest is dropped (and said).
  const keep = (chunk: Buffer) => {
    if (output.length < OUTPUT_LIMIT) output += chunk.toString();
    else if (!output.endsWith(TRUNCATED)) output += TRUNCATED;
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} exited early:\n${output}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} did not become healthy:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    process: child,
    port,
    baseUrl,
    output: () => output,
    exited,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
    killAll: (signal) => {
      // The workers first, so none of them answers once the primary is gone.
      for (const worker of child.pid === undefined ? [] : childrenOf(child.pid)) {
        try {
          process.kill(worker, signal);
        } catch {
          // gone already
        }
      }
      child.kill(signal);
    },
  };
}

export interface ProcessResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null for an empty one. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read members freely
  body: any;
  /** Milliseconds from sending to the whole body read. */
  elapsed: number;
}

/**
 * Calls a Tessera process over HTTP with an API key: `path` is under /iam/api/v1, or an
 * absolute path when it starts with // (as call() in helpers.ts). A body is sent as JSON.
 */
export async function callServer(
  server: Pick<ServerProcess, 'baseUrl'>,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<ProcessResponse> {
  const started = Date.now();
  const url = path.startsWith('//') ? path.slice(1) : `/iam/api/v1${path}`;
  const response = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: {
      authorization: `apikey ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? null : JSON.parse(text),
    elapsed: Date.now() - started,
  };
}
