// What the cluster tests read from a server's output: its JSON log lines, which name the worker
// that wrote each (the access log's lines carry the request's id).

import assert from 'node:assert/strict';
import type { ServerProcess } from './server-process.js';

export interface LogLine {
  msg?: string;
  worker?: number;
  pid?: number;
  request_id?: string;
}

export function logLines(server: ServerProcess): LogLine[] {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** The worker whose access-log line has this request id (the line may follow the answer). */
export async function servedBy(server: ServerProcess, requestId: string): Promise<number> {
  for (let waited = 0; ; waited += 20) {
    const line = logLines(server).find((each) => each.request_id === requestId);
    if (line?.worker !== undefined) return line.worker;
    assert.ok(waited < 5_000, `no access-log line names a worker for ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The workers that answered these calls. */
export async function workersOf(
  server: ServerProcess,
  answers: { requestId: string }[],
): Promise<Set<number>> {
  return new Set(await Promise.all(answers.map((answer) => servedBy(server, answer.requestId))));
}

/** The pid of each worker, as its latest "Tessera is serving" line says. */
export function workerPids(server: ServerProcess): Map<number, number> {
  const pids = new Map<number, number>();
  for (const line of logLines(server)) {
    if (line.msg === 'Tessera is serving' && line.worker !== undefined) {
      pids.set(line.worker, line.pid!);
    }
  }
  return pids;
}
