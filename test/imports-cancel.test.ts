// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { call, createApplication, problemOf, useTestApp, userPath } from './helpers.js';
import { IMPORT_BATCH_LINES } from '../src/modules/imports/imports.service.js';
import { ndjson, waitForImport } from './import-kit.js';

const CLIENT = 'billing-web';

function line(n: number): Record<string, unknown> {
  return {
    provider: 'google_oauth2',
    identifier: `user-${n}`,
    name: `User ${n}`,
    email: `user${n}@example.com`,
    locale: 'en',
    roles: [],
    scopes: [],
  };
}

describe('DELETE /imports/:id', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  it('stops a running job at its next line; what it wrote stays, the rest is not written', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // A body that sends a batch and a half, then waits: the first batch is written meanwhile.
    const batch = IMPORT_BATCH_LINES;
    const half = Math.floor(batch / 2);
    async function* body() {
      yield Buffer.from(ndjson(Array.from({ length: batch + half }, (_, n) => line(n))));
      await released;
      yield Buffer.from(
        ndjson(Array.from({ length: batch - half }, (_, n) => line(batch + half + n))),
      );
    }
    const { job, finished } = await ctx.services.imports.startImport(
      CLIENT,
      body(),
      {
        format: 'tessera',
        dryRun: false,
        onConflict: 'update',
        providerMap: new Map(),
        keycloakClient: null,
        layout: 'ndjson',
      },
      { actor: { type: 'api_key', id: null }, requestId: null },
    );
    // Wait for the first batch to be recorded.
    for (;;) {
      const seen = (await call(ctx, 'GET', `/imports/${job.id}`)).json<{
        counts: { created: number };
      }>();
      if (seen.counts.created >= batch) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const cancelled = await call(ctx, 'DELETE', `/imports/${job.id}`);
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json<{ status: string }>().status, 'cancelled');
    release();
    const ended = await finished;
    assert.equal(ended.status, 'cancelled');
    assert.equal(ended.counts.created, batch);
    assert.equal((await waitForImport(ctx, job.id)).status, 'cancelled');
    assert.equal(
      (await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', `user-${batch - 1}`))).statusCode,
      200,
    );
    assert.equal(
      (await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', `user-${2 * batch - 1}`)))
        .statusCode,
      404,
    );
    problemOf(await call(ctx, 'DELETE', `/imports/${job.id}`), 409);
  });

  it('shows a job whose runner is gone as failed (interrupted) once it stops moving', async () => {
    const now = ctx.clock.now();
    await ctx.store.imports.insertImportJob({
      id: 'orphan-job',
      clientId: CLIENT,
      format: 'tessera',
      dryRun: false,
      onConflict: 'update',
      status: 'running',
      counts: { read: 3000, created: 3000, updated: 0, unchanged: 0, skipped: 0, invalid: 0 },
      failure: null,
      startedBy: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    });
    // A killed server's job: nothing in this process runs it.
    assert.equal(
      (await call(ctx, 'GET', '/imports/orphan-job')).json<{ status: string }>().status,
      'running',
    );
    ctx.clock.advance(61_000);
    const seen = (await call(ctx, 'GET', '/imports/orphan-job')).json<{
      status: string;
      failure: string;
      counts: { created: number };
    }>();
    assert.equal(seen.status, 'failed');
    assert.match(seen.failure, /^interrupted: .*import the same file again/);
    assert.equal(seen.counts.created, 3000);
  });
});
