// tessera-test: both-stores
// Importing users from the console (inject): the upload, the dry run every import starts with,
// the confirmation that imports the same file without sending it again, the job's progress,
// error lines and cancel; CSRF on the upload, and a key restricted to other applications.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ConsoleClient } from './console-client.js';
import { type TestContext, buildTestApp, call, createApplication, createUser } from './helpers.js';
import { ndjson, waitForImport } from './import-kit.js';

const USERS = '/console/applications/billing-web/users';

function line(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    provider: 'google_oauth2',
    identifier: `console-${n}`,
    name: `Console User ${n}`,
    email: `console${n}@example.com`,
    locale: 'en',
    roles: [],
    scopes: [],
    ...overrides,
  };
}

/** The job id a redirect to a job's page names. */
function jobIdOf(location: unknown): string {
  const match = /\/users\/imports\/([^/?]+)/.exec(String(location));
  assert.ok(match, `a job's page: ${String(location)}`);
  return match[1]!;
}

describe('importing users from the console', () => {
  let ctx: TestContext;
  /** This file's own temporary directory: the uploads kept in it are counted. */
  const previousTmp = process.env.TMPDIR;
  let uploadsDir = '';
  const keptFiles = () =>
    readdirSync(uploadsDir).filter((name) => name.startsWith('tessera-console-import-')).length;
  before(async () => {
    uploadsDir = mkdtempSync(join(tmpdir(), 'tessera-console-imports-test-'));
    process.env.TMPDIR = uploadsDir;
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'other-app', display_name: 'Other' });
  });
  after(async () => {
    await ctx.close();
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
    rmSync(uploadsDir, { recursive: true, force: true });
  });

  async function signedIn(key = ctx.adminKey): Promise<ConsoleClient> {
    const client = new ConsoleClient(ctx);
    assert.equal((await client.signIn(key)).statusCode, 303);
    assert.equal((await client.get('/console/account')).statusCode, 200);
    return client;
  }

  async function userCount(clientId = 'billing-web'): Promise<number> {
    const response = await call(ctx, 'GET', `/applications/${clientId}/users?include_total=true`);
    return response.json<{ total: number }>().total;
  }

  /** Uploads a file for a dry run and waits for it; the job and its page. */
  async function dryRun(
    client: ConsoleClient,
    content: string,
    fields: Record<string, string> = {},
    name = 'users.ndjson',
  ) {
    const response = await client.upload(
      `${USERS}/import`,
      { format: 'tessera', on_conflict: 'update', ...fields },
      { name, content, type: 'application/x-ndjson' },
    );
    assert.equal(response.statusCode, 303, response.body);
    const id = jobIdOf(response.headers.location);
    const job = await waitForImport(ctx, id);
    const page = await client.get(String(response.headers.location));
    assert.equal(page.statusCode, 200, page.body);
    return { id, job, page: page.body, location: String(response.headers.location) };
  }

  it('offers import beside export on the users page, to a key that may write users only', async () => {
    const admin = await signedIn();
    const list = await admin.get(USERS);
    assert.match(list.body, new RegExp(`href="${USERS}/import">Import users</a>`));
    assert.match(list.body, new RegExp(`href="${USERS}/export"`));
    const reader = await signedIn(await ctx.createKey({ roles: ['users:read'] }));
    const readOnly = await reader.get(USERS);
    assert.doesNotMatch(readOnly.body, /Import users/);
    assert.match(readOnly.body, /Export these users/);
    assert.equal((await reader.get(`${USERS}/import`)).statusCode, 403);
  });

  it('asks for the file after its token and choices, so the token arrives first', async () => {
    const client = await signedIn();
    const form = await client.get(`${USERS}/import`);
    assert.equal(form.statusCode, 200);
    assert.match(form.body, /enctype="multipart\/form-data"/);
    const token = form.body.indexOf('name="_csrf"', form.body.indexOf('enctype'));
    const file = form.body.indexOf('type="file"');
    assert.ok(token > 0 && file > token, 'the CSRF field comes before the file');
    for (const name of ['format', 'keycloak_client', 'on_conflict', 'provider_map']) {
      assert.match(form.body, new RegExp(`name="${name}"`));
    }
  });

  it('runs a dry run first, writes nothing, then imports the same file on confirmation', async () => {
    const client = await signedIn();
    const before = await userCount();
    const { job, page, location } = await dryRun(client, ndjson([line(1), line(2), line(3)]));
    assert.equal(job.dry_run, true);
    assert.deepEqual([job.status, job.counts.read, job.counts.created], ['succeeded', 3, 3]);
    assert.match(page, /Dry run of an import/);
    assert.match(page, /Users would be created<\/dt>\s*<dd>3<\/dd>/);
    assert.match(page, /No line is invalid/);
    assert.match(page, /<button type="submit">Import the users<\/button>/);
    assert.doesNotMatch(page, /hx-trigger="every/, 'a finished job is not followed');
    assert.equal(await userCount(), before, 'a dry run writes no user');

    const confirmed = await client.post(`${location}/run`, {});
    assert.equal(confirmed.statusCode, 303, confirmed.body);
    assert.match(String(confirmed.headers.location), /\?notice=started$/);
    const importId = jobIdOf(confirmed.headers.location);
    const imported = await waitForImport(ctx, importId);
    assert.deepEqual([imported.dry_run, imported.status], [false, 'succeeded']);
    assert.equal(imported.counts.created, 3);
    assert.equal(await userCount(), before + 3);
    const importPage = await client.get(String(confirmed.headers.location));
    assert.match(importPage.body, /The import started\./);
    assert.match(importPage.body, /<h1>Import /);
    assert.match(importPage.body, /Users created<\/dt>\s*<dd>3<\/dd>/);

    // The file went to its import: the dry run's page no longer offers it.
    const again = await client.post(`${location}/run`, {});
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /no longer kept here/);
  });

  it('shows a bad file’s error lines (line, pointer, message) and changes nothing', async () => {
    await createUser(ctx, 'billing-web', { identifier: 'kept-1', name: 'Kept As Is' });
    const client = await signedIn();
    const before = await userCount();
    const eventsBefore = (await call(ctx, 'GET', '/events?limit=100')).json<{ items: unknown[] }>()
      .items.length;
    const content = ndjson([
      line(10),
      line(11, { email: 'not-an-e-mail' }),
      '{"provider": ',
      line(12, { provider: 'google_oauth2', identifier: 'kept-1', name: 'Renamed' }),
    ]);
    const { job, page } = await dryRun(client, content);
    assert.deepEqual(
      [job.counts.read, job.counts.created, job.counts.updated, job.counts.invalid],
      [4, 1, 1, 2],
    );
    assert.match(page, /<h2>Invalid lines<\/h2>/);
    assert.match(page, /<td>2<\/td>\s*<td class="mono">\/email<\/td>\s*<td>[^<]*e-mail/);
    assert.match(page, /<td>3<\/td>\s*<td class="mono">\(the line\)<\/td>\s*<td>not valid JSON/);
    assert.match(page, /the 2 invalid lines are left out/);
    assert.equal(await userCount(), before, 'nothing created');
    const kept = await call(ctx, 'GET', '/applications/billing-web/users?identifier=kept-1');
    assert.doesNotMatch(kept.body, /Renamed/, 'nothing changed');
    const eventsAfter = (await call(ctx, 'GET', '/events?limit=100')).json<{ items: unknown[] }>()
      .items.length;
    assert.equal(eventsAfter, eventsBefore, 'a dry run records no event');
  });

  it('reads a Keycloak realm export with the client whose roles it takes', async () => {
    const client = await signedIn();
    const realm = readFileSync(
      new URL('./fixtures/imports/keycloak-realm.json', import.meta.url),
      'utf8',
    );
    const { job, page } = await dryRun(
      client,
      realm,
      { format: 'keycloak', keycloak_client: 'billing-web', on_conflict: 'skip' },
      'realm-export.json',
    );
    assert.deepEqual([job.format, job.on_conflict, job.status], ['keycloak', 'skip', 'succeeded']);
    assert.deepEqual([job.counts.read, job.counts.invalid], [11, 5]);
    assert.match(page, /keycloak file/);
    assert.match(page, /<td>5<\/td>\s*<td class="mono">\/federatedIdentities<\/td>/);
  });

  it('names what is wrong with the form next to its fields, and starts nothing', async () => {
    const client = await signedIn();
    const noFile = await client.upload(`${USERS}/import`, { format: 'tessera' }, null);
    assert.equal(noFile.statusCode, 400);
    assert.match(noFile.body, /id="field-file-error">File is required: choose a file/);
    const bad = await client.upload(
      `${USERS}/import`,
      { format: 'csv', on_conflict: 'merge', provider_map: 'no-colon' },
      { name: 'u.ndjson', content: ndjson([line(20)]) },
    );
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /id="field-format-error"/);
    assert.match(bad.body, /id="field-on_conflict-error"/);
    assert.match(bad.body, /id="field-provider_map-error"/);
    assert.match(
      bad.body,
      /name="provider_map"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*name="provider_map"|value="no-colon"/,
    );
  });

  it('refuses an upload without the form’s CSRF token, or from another site, before the file', async () => {
    const client = await signedIn();
    const content = ndjson([line(30)]);
    const missing = await client.upload(
      `${USERS}/import`,
      {},
      { name: 'u.ndjson', content },
      { csrf: false },
    );
    assert.equal(missing.statusCode, 403);
    assert.match(missing.body, /CSRF token is missing or wrong/);
    const real = client.csrf;
    client.csrf = `${real.slice(0, -2)}xx`;
    const wrong = await client.upload(`${USERS}/import`, {}, { name: 'u.ndjson', content });
    assert.equal(wrong.statusCode, 403);
    client.csrf = `${real.slice(0, -2)}xx`; // the error page handed the real one back
    const wrongHeader = await client.upload(
      `${USERS}/import`,
      {},
      { name: 'u.ndjson', content },
      { header: true },
    );
    assert.equal(wrongHeader.statusCode, 403);
    client.csrf = real;
    // As htmx sends it: the token in a header, none in the form.
    const byHeader = await client.upload(
      `${USERS}/import`,
      {},
      { name: 'u.ndjson', content },
      { header: true },
    );
    assert.equal(byHeader.statusCode, 303, byHeader.body);
    await waitForImport(ctx, jobIdOf(byHeader.headers.location));
    // The confirmation and the cancel are forms like any other.
    const run = await client.post(`${String(byHeader.headers.location)}/run`, {}, { csrf: false });
    assert.equal(run.statusCode, 403);
    const cancel = await client.post(
      `${String(byHeader.headers.location)}/cancel`,
      {},
      { origin: 'https://evil.example' },
    );
    assert.equal(cancel.statusCode, 403);
  });

  it('refuses a key restricted to other applications, and hides their jobs', async () => {
    const admin = await signedIn();
    const { location } = await dryRun(admin, ndjson([line(40)]));
    const restricted = await signedIn(
      await ctx.createKey({ roles: ['users:read', 'users:write'], applications: ['other-app'] }),
    );
    const upload = await restricted.upload(
      `${USERS}/import`,
      {},
      { name: 'u.ndjson', content: ndjson([line(41)]) },
    );
    assert.equal(upload.statusCode, 403);
    assert.match(upload.body, /restricted to other applications/);
    assert.equal((await restricted.get(location)).statusCode, 403);
    assert.equal((await restricted.post(`${location}/run`, {})).statusCode, 403);
    // Nor is the job reachable through the application the key may use.
    const elsewhere = location.replace('/billing-web/', '/other-app/');
    assert.equal((await restricted.get(elsewhere)).statusCode, 404);
    // An id no job can have is not looked up.
    for (const id of ['%00', 'x'.repeat(65), 'a%2Fb']) {
      assert.equal((await admin.get(`${USERS}/imports/${id}`)).statusCode, 404, id);
    }
  });

  it('keeps the file for the session that sent it only', async () => {
    const first = await signedIn();
    const { location } = await dryRun(first, ndjson([line(50)]));
    const second = await signedIn();
    const page = await second.get(location);
    assert.doesNotMatch(page.body, /Import the users/);
    assert.match(page.body, /no longer kept here/);
    const run = await second.post(`${location}/run`, {});
    assert.equal(run.statusCode, 409);
    assert.match((await first.get(location)).body, /Import the users/);
  });

  it('leaves no file behind: a refused form, a forged one, an imported file', async () => {
    const client = await signedIn();
    const before = keptFiles();
    const refused = await client.upload(
      `${USERS}/import`,
      { format: 'csv' },
      { name: 'u.ndjson', content: ndjson([line(70)]) },
    );
    assert.equal(refused.statusCode, 400);
    const forged = await client.upload(
      `${USERS}/import`,
      {},
      { name: 'u.ndjson', content: ndjson([line(71)]) },
      { csrf: false },
    );
    assert.equal(forged.statusCode, 403);
    assert.equal(keptFiles(), before);
    const { location } = await dryRun(client, ndjson([line(72)]));
    assert.equal(keptFiles(), before + 1, 'kept for the confirmation');
    const confirmed = await client.post(`${location}/run`, {});
    await waitForImport(ctx, jobIdOf(confirmed.headers.location));
    // The import removes it as it ends (just after its job records the end).
    for (let tries = 0; keptFiles() !== before && tries < 200; tries++) await sleep(10);
    assert.equal(keptFiles(), before, 'removed once imported');
  });

  it('follows a running job, and cancels it', async () => {
    // A source that stays open: the job runs until cancelled.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    async function* source() {
      yield Buffer.from(`${JSON.stringify(line(60))}\n`);
      await held;
    }
    const { job } = await ctx.services.imports.startImport(
      'billing-web',
      source(),
      {
        format: 'tessera',
        dryRun: false,
        onConflict: 'update',
        providerMap: new Map(),
        keycloakClient: null,
        layout: 'ndjson',
      },
      { actor: { type: 'api_key', id: 'test' }, requestId: 'test' },
    );
    try {
      const client = await signedIn();
      const url = `${USERS}/imports/${job.id}`;
      const page = await client.get(url);
      assert.match(page.body, /class="badge state-running">running</);
      assert.match(page.body, new RegExp(`hx-get="${url}/progress" hx-trigger="every 2s"`));
      assert.match(page.body, /Cancel the import/);
      const progress = await client.get(`${url}/progress`);
      assert.equal(progress.statusCode, 200);
      assert.match(progress.body, /^<section\s+id="import-job"/);
      const reader = await signedIn(await ctx.createKey({ roles: ['users:read'] }));
      assert.doesNotMatch((await reader.get(url)).body, /Cancel the import/);

      const cancelled = await client.post(`${url}/cancel`, {});
      assert.equal(cancelled.statusCode, 303);
      assert.equal(cancelled.headers.location, `${url}?notice=cancelled`);
      const after = await client.get(String(cancelled.headers.location));
      assert.match(after.body, /It was cancelled\./);
      assert.match(after.body, /class="badge state-cancelled">cancelled</);
      assert.doesNotMatch(after.body, /hx-trigger="every/);
      const twice = await client.post(`${url}/cancel`, {});
      assert.equal(twice.headers.location, `${url}?notice=finished`);
    } finally {
      release();
    }
  });
});
