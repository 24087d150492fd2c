// kill -9 of the server in the middle of an import, then the same file imported again: on both
// stores, the users converge to the file's, none lost, none doubled, each with exactly one
// user.created event; and what the killed job counted as created is exactly what it wrote.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { buildServerCopy } from './run-server.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

const skipPostgres = await skipWithoutPostgres();
const KEY = `tsr_import_kill_${'k'.repeat(40)}`;
const LINES = 30_000;
const APPLICATION = 'moving-in';

const body =
  Array.from({ length: LINES }, (_, n) =>
    JSON.stringify({
      provider: n % 2 === 0 ? 'google_oauth2' : 'azure_saml',
      identifier: `user-${n}`,
      name: `User ${n}`,
      email: `user${n}@example.com`,
      locale: 'en',
      roles: n % 3 === 0 ? ['admin'] : [],
      scopes: [],
    }),
  ).join('\n') + '\n';

interface Job {
  id: string;
  status: string;
  counts: Record<'read' | 'created' | 'updated' | 'unchanged' | 'skipped' | 'invalid', number>;
}

async function runKilledImport(options: { databaseUrl: string; dataDir: string; main: string }) {
  const env = {
    DATABASE_URL: options.databaseUrl,
    IAM_DATA_DIR: options.dataDir,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  };
  const start = () => startServerProcess(process.execPath, [options.main], env);
  const headers = { authorization: `apikey ${KEY}` };
  const api = (server: ServerProcess, path: string, init: RequestInit = {}) =>
    fetch(`${server.baseUrl}/iam/api/v1${path}`, {
      ...init,
      headers: { ...headers, ...(init.headers as Record<string, string> | undefined) },
    });
  const importFile = async (server: ServerProcess): Promise<Job> => {
    const response = await api(server, `/applications/${APPLICATION}/users/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body,
    });
    assert.equal(response.status, 202, await response.clone().text());
    return (await response.json()) as Job;
  };
  const jobOf = async (server: ServerProcess, id: string): Promise<Job> =>
    (await (await api(server, `/imports/${id}`)).json()) as Job;

  let server = await start();
  try {
    const created = await api(server, '/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: APPLICATION, display_name: 'Moving in', description: '' }),
    });
    assert.equal(created.status, 201);

    // The first run: killed once some batches are written, before the last one.
    const first = await importFile(server);
    let seen: Job;
    for (;;) {
      seen = await jobOf(server, first.id);
      if (seen.counts.created >= 2000 || seen.status !== 'running') break;
      await sleep(5);
    }
    assert.equal(seen.status, 'running', 'the import was still running when the server was killed');
    server.killAll('SIGKILL');
    await server.exited;

    server = await start();
    const killed = await jobOf(server, first.id);
    assert.ok(killed.counts.created > 0 && killed.counts.created < LINES, JSON.stringify(killed));

    // The same file again: what the first run wrote is unchanged, the rest is created.
    const second = await importFile(server);
    let done: Job;
    do {
      await sleep(50);
      done = await jobOf(server, second.id);
    } while (done.status === 'running');
    assert.equal(done.status, 'succeeded');
    assert.deepEqual(done.counts, {
      read: LINES,
      created: LINES - killed.counts.created,
      updated: 0,
      unchanged: killed.counts.created,
      skipped: 0,
      invalid: 0,
    });

    // Every user once, and every user's creation recorded once.
    const exported = await (await api(server, `/applications/${APPLICATION}/users/export`)).text();
    const identities = exported
      .trimEnd()
      .split('\n')
      .map((line) => {
        const user = JSON.parse(line) as { provider: string; identifier: string };
        return `${user.provider}/${user.identifier}`;
      });
    assert.equal(identities.length, LINES);
    assert.equal(new Set(identities).size, LINES);
    const createdEvents = new Map<string, number>();
    let afterId = '0';
    for (;;) {
      const page = (await (
        await api(
          server,
          `/events?type=user.created&client_id=${APPLICATION}&limit=1000&after=${afterId}`,
        )
      ).json()) as {
        items: { id: string; resource: { id: { provider: string; identifier: string } } }[];
      };
      for (const event of page.items) {
        const key = `${event.resource.id.provider}/${event.resource.id.identifier}`;
        createdEvents.set(key, (createdEvents.get(key) ?? 0) + 1);
      }
      if (page.items.length === 0) break;
      afterId = page.items.at(-1)!.id;
    }
    assert.equal(createdEvents.size, LINES, 'every user has its user.created event');
    assert.deepEqual(
      [...createdEvents.values()].filter((count) => count !== 1),
      [],
      'no user has two',
    );
  } finally {
    if (server.process.exitCode === null) await server.stop();
  }
}

describe('kill -9 in the middle of an import', { timeout: 600_000 }, () => {
  let build: ReturnType<typeof buildServerCopy>;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-import-kill-'));
  before(() => {
    build = buildServerCopy();
  });
  after(() => {
    build?.remove();
    rmSync(directory, { recursive: true, force: true });
  });

  it('then the same file again converges on SQLite: nothing lost, nothing doubled', async () => {
    await runKilledImport({
      databaseUrl: `sqlite:${join(directory, 'sqlite', 'tessera.db')}`,
      dataDir: join(directory, 'sqlite'),
      main: build.main,
    });
  });

  it(
    'then the same file again converges on PostgreSQL: nothing lost, nothing doubled',
    { skip: skipPostgres },
    async () => {
      const schema = await createTestSchema();
      try {
        await runKilledImport({
          databaseUrl: databaseUrlFor(schema),
          dataDir: join(directory, 'postgres'),
          main: build.main,
        });
      } finally {
        await dropSchema(schema);
      }
    },
  );
});
