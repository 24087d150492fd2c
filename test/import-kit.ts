// Shared by the import specs: start an import over the API and wait for its job to finish.

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { type TestContext, call, seg } from './helpers.js';

export interface ImportJobBody {
  id: string;
  client_id: string;
  status: string;
  counts: Record<'read' | 'created' | 'updated' | 'unchanged' | 'skipped' | 'invalid', number>;
  failure: string | null;
  errors: string;
  [member: string]: unknown;
}

/** POSTs an import, expects 202 with a Location, and returns the job once it has finished. */
export async function runImport(
  ctx: TestContext,
  clientId: string,
  body: string,
  query = '',
  options: { contentType?: string; key?: string } = {},
): Promise<ImportJobBody> {
  const response = await call(ctx, 'POST', `/applications/${seg(clientId)}/users/import${query}`, {
    rawBody: body,
    contentType: options.contentType ?? 'application/x-ndjson',
    ...(options.key === undefined ? {} : { key: options.key }),
  });
  assert.equal(response.statusCode, 202, response.body);
  const started = response.json<ImportJobBody>();
  assert.equal(response.headers.location, `/iam/api/v1/imports/${started.id}`);
  return waitForImport(ctx, started.id, options.key);
}

/** Polls the job until it is no longer running. */
export async function waitForImport(
  ctx: TestContext,
  id: string,
  key?: string,
): Promise<ImportJobBody> {
  for (let attempt = 0; attempt < 2000; attempt++) {
    const response = await call(ctx, 'GET', `/imports/${id}`, key === undefined ? {} : { key });
    assert.equal(response.statusCode, 200, response.body);
    const job = response.json<ImportJobBody>();
    if (job.status !== 'running') return job;
    await sleep(10);
  }
  throw new Error(`import ${id} did not finish`);
}

/** Every error line of a job, through the pages. */
export async function importErrors(
  ctx: TestContext,
  id: string,
): Promise<{ line: number; pointer: string; detail: string }[]> {
  const errors: { line: number; pointer: string; detail: string }[] = [];
  let cursor: string | null = null;
  do {
    const response = await call(
      ctx,
      'GET',
      `/imports/${id}/errors?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    assert.equal(response.statusCode, 200, response.body);
    const page = response.json<{
      items: { line: number; pointer: string; detail: string }[];
      next_cursor: string | null;
    }>();
    errors.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return errors;
}

export function ndjson(lines: readonly unknown[]): string {
  return (
    lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n') + '\n'
  );
}
