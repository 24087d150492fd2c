// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  buildTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  seg,
  useTestApp,
  userPath,
  type TestContext,
} from './helpers.js';
import { importErrors, ndjson, runImport } from './import-kit.js';

const CLIENT = 'billing-web';

function line(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    provider: 'google_oauth2',
    identifier: `user-${n}`,
    name: `User ${n}`,
    email: `user${n}@example.com`,
    locale: 'en',
    roles: n % 2 === 0 ? ['admin'] : [],
    scopes: [],
    ...overrides,
  };
}

async function exportText(ctx: TestContext, clientId: string, query = ''): Promise<string> {
  const response = await call(ctx, 'GET', `/applications/${seg(clientId)}/users/export${query}`);
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(response.headers['content-type'], 'application/x-ndjson; charset=utf-8');
  return response.body;
}

async function eventsOf(ctx: TestContext, actorId: string) {
  const response = await call(ctx, 'GET', `/events?actor_id=${seg(actorId)}&limit=1000`);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{
    items: { type: string; actor: { type: string; id: string }; resource: { id: unknown } }[];
  }>().items;
}

describe('POST /applications/:client_id/users/import', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'crm' });
  });

  it('runs a job: 202 with Location, every line a user, each with its event from the job', async () => {
    const job = await runImport(ctx, CLIENT, ndjson([line(1), line(2), line(3)]));
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(job.counts, {
      read: 3,
      created: 3,
      updated: 0,
      unchanged: 0,
      skipped: 0,
      invalid: 0,
    });
    assert.equal(job.client_id, CLIENT);
    const user = await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-2'));
    assert.equal(user.statusCode, 200);
    assert.deepEqual(user.json<{ roles: string[] }>().roles, ['admin']);
    const events = await eventsOf(ctx, job.id);
    assert.deepEqual(
      events.map((event) => [event.type, event.actor]),
      [1, 2, 3].map(() => ['user.created', { type: 'import', id: job.id }]),
    );
  });

  it('is idempotent: the same file again is all unchanged, and records no event', async () => {
    const body = ndjson([line(11), line(12, { active: false, external_id: 'ext-12' })]);
    const first = await runImport(ctx, CLIENT, body);
    assert.equal(first.counts.created, 2);
    const second = await runImport(ctx, CLIENT, body);
    assert.deepEqual(second.counts, {
      read: 2,
      created: 0,
      updated: 0,
      unchanged: 2,
      skipped: 0,
      invalid: 0,
    });
    assert.deepEqual(await eventsOf(ctx, second.id), []);
  });

  it('reports each bad line with its number and a JSON Pointer, and imports the others', async () => {
    const body = [
      JSON.stringify(line(21)),
      '{"provider": "google_oauth2", "identifier": ',
      '',
      JSON.stringify(line(22, { email: 'not-an-email', locale: 'xx_invalid_locale_tag' })),
      JSON.stringify(line(23, { colour: 'blue' })),
      '[1, 2]',
      JSON.stringify(line(24)),
    ].join('\n');
    const job = await runImport(ctx, CLIENT, body);
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(job.counts, {
      read: 6,
      created: 2,
      updated: 0,
      unchanged: 0,
      skipped: 0,
      invalid: 4,
    });
    const errors = await importErrors(ctx, job.id);
    assert.deepEqual(
      errors.map((error) => [error.line, error.pointer]),
      [
        [2, ''],
        [4, '/email'],
        [4, '/locale'],
        [5, '/colour'],
        [6, ''],
      ],
    );
    assert.match(errors[0]!.detail, /not valid JSON/);
    for (const n of [21, 24]) {
      assert.equal(
        (await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', `user-${n}`))).statusCode,
        200,
      );
    }
  });

  it('updates, skips or refuses a differing existing user as on_conflict says', async () => {
    await runImport(ctx, CLIENT, ndjson([line(31), line(32), line(33)]));
    const changed = ndjson([
      line(31, { name: 'Renamed 31' }),
      line(32, { roles: ['auditor'] }),
      line(33),
    ]);
    const skipped = await runImport(ctx, CLIENT, changed, '?on_conflict=skip');
    assert.deepEqual(
      [skipped.counts.skipped, skipped.counts.unchanged, skipped.counts.updated],
      [2, 1, 0],
    );
    const failed = await runImport(ctx, CLIENT, changed, '?on_conflict=fail');
    assert.deepEqual([failed.counts.invalid, failed.counts.unchanged], [2, 1]);
    assert.deepEqual(
      (await importErrors(ctx, failed.id)).map((error) => [error.line, error.pointer]),
      [
        [1, '/identifier'],
        [2, '/identifier'],
      ],
    );
    const updated = await runImport(ctx, CLIENT, changed);
    assert.deepEqual([updated.counts.updated, updated.counts.unchanged], [2, 1]);
    const user = await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-31'));
    assert.equal(user.json<{ name: string }>().name, 'Renamed 31');
    const events = await eventsOf(ctx, updated.id);
    assert.deepEqual(
      events.map((event) => event.type),
      ['user.updated', 'user.updated'],
    );
  });

  it('takes the same user twice in one file: the later line wins', async () => {
    const job = await runImport(
      ctx,
      CLIENT,
      ndjson([line(41), line(41, { name: 'Second' }), line(41, { name: 'Second' })]),
    );
    assert.deepEqual([job.counts.created, job.counts.updated, job.counts.unchanged], [1, 1, 1]);
    const user = await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-41'));
    assert.equal(user.json<{ name: string }>().name, 'Second');
  });

  it('dry_run=true counts what would happen, and writes no user and no event', async () => {
    await runImport(ctx, CLIENT, ndjson([line(51)]));
    const job = await runImport(
      ctx,
      CLIENT,
      ndjson([line(51, { name: 'Would change' }), line(52), line(53, { email: 'bad' })]),
      '?dry_run=true',
    );
    assert.deepEqual(job.counts, {
      read: 3,
      created: 1,
      updated: 1,
      unchanged: 0,
      skipped: 0,
      invalid: 1,
    });
    assert.equal(job.dry_run, true);
    assert.equal(
      (await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-52'))).statusCode,
      404,
    );
    const kept = await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-51'));
    assert.equal(kept.json<{ name: string }>().name, 'User 51');
    assert.deepEqual(await eventsOf(ctx, job.id), []);
  });

  it('keeps the ids a line gives, and refuses an id that belongs to another user', async () => {
    const id = '0a1b2c3d-0000-4000-8000-000000000061';
    const job = await runImport(
      ctx,
      CLIENT,
      ndjson([line(61, { id }), line(62, { id }), line(61, { id: 'other-id' })]),
    );
    assert.deepEqual([job.counts.created, job.counts.invalid], [1, 2]);
    const user = await call(ctx, 'GET', userPath(CLIENT, 'google_oauth2', 'user-61'));
    assert.equal(user.json<{ id: string }>().id, id);
    assert.deepEqual(
      (await importErrors(ctx, job.id)).map((error) => [error.line, error.pointer]),
      [
        [2, '/id'],
        [3, '/id'],
      ],
    );
  });

  it('refuses what it cannot read before starting a job', async () => {
    const path = `/applications/${CLIENT}/users/import`;
    problemOf(await call(ctx, 'POST', path, { rawBody: 'x', contentType: 'text/plain' }), 415);
    problemOf(await call(ctx, 'POST', path, { rawBody: '{"users": []}' }), 415);
    const badQuery = problemOf(
      await call(ctx, 'POST', `${path}?on_conflict=merge`, {
        rawBody: '{}',
        contentType: 'application/x-ndjson',
      }),
      400,
    );
    assert.equal(badQuery.errors?.[0]?.parameter, 'on_conflict');
    const badMap = problemOf(
      await call(ctx, 'POST', `${path}?provider_map=google:Not%20A%20Label`, {
        rawBody: '{}',
        contentType: 'application/x-ndjson',
      }),
      400,
    );
    assert.equal(badMap.errors?.[0]?.parameter, 'provider_map');
    problemOf(
      await call(ctx, 'POST', '/applications/ghost/users/import', {
        rawBody: ndjson([line(1)]),
        contentType: 'application/x-ndjson',
      }),
      404,
    );
  });

  it('keeps jobs of other applications from a restricted key, and needs the roles', async () => {
    const job = await runImport(ctx, CLIENT, ndjson([line(71)]));
    const crmOnly = await ctx.createKey({
      roles: ['users:read', 'users:write'],
      applications: ['crm'],
    });
    problemOf(await call(ctx, 'GET', `/imports/${job.id}`, { key: crmOnly }), 404);
    problemOf(await call(ctx, 'GET', `/imports/${job.id}/errors`, { key: crmOnly }), 404);
    problemOf(await call(ctx, 'DELETE', `/imports/${job.id}`, { key: crmOnly }), 404);
    problemOf(
      await call(ctx, 'POST', `/applications/${CLIENT}/users/import`, {
        key: crmOnly,
        rawBody: ndjson([line(72)]),
        contentType: 'application/x-ndjson',
      }),
      403,
    );
    problemOf(
      await call(ctx, 'GET', `/applications/${CLIENT}/users/export`, { key: crmOnly }),
      403,
    );
    const reader = await ctx.createKey({ roles: ['users:read'] });
    problemOf(
      await call(ctx, 'POST', `/applications/crm/users/import`, {
        key: reader,
        rawBody: ndjson([line(73)]),
        contentType: 'application/x-ndjson',
      }),
      403,
    );
    problemOf(await call(ctx, 'DELETE', `/imports/${job.id}`, { key: reader }), 403);
    assert.equal((await call(ctx, 'GET', `/imports/${job.id}`, { key: reader })).statusCode, 200);
  });

  it('answers 409 to cancelling a finished job and 404 to an unknown one', async () => {
    const job = await runImport(ctx, CLIENT, ndjson([line(81)]));
    const refused = problemOf(await call(ctx, 'DELETE', `/imports/${job.id}`), 409);
    assert.match(refused.detail, /succeeded already/);
    problemOf(await call(ctx, 'DELETE', '/imports/no-such-job'), 404);
    problemOf(await call(ctx, 'GET', '/imports/no-such-job'), 404);
  });
});

describe('GET /applications/:client_id/users/export', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await createApplication(ctx, { client_id: 'empty' });
  });

  it('streams every user as NDJSON in list order, with the list filters', async () => {
    await createUser(ctx, CLIENT, { identifier: 'b', roles: ['admin'] });
    await createUser(ctx, CLIENT, { identifier: 'a', roles: [] });
    await createUser(ctx, CLIENT, { identifier: 'z', provider: 'azure_saml', roles: ['admin'] });
    const all = (await exportText(ctx, CLIENT))
      .trimEnd()
      .split('\n')
      .map((text) => JSON.parse(text) as Record<string, unknown>);
    assert.deepEqual(
      all.map((user) => `${String(user.provider)}/${String(user.identifier)}`),
      ['azure_saml/z', 'google_oauth2/a', 'google_oauth2/b'],
    );
    assert.deepEqual(Object.keys(all[0]!), [
      'id',
      'identifier',
      'provider',
      'name',
      'avatar',
      'email',
      'locale',
      'roles',
      'scopes',
      'active',
      'external_id',
      'created_at',
      'updated_at',
    ]);
    const admins = await exportText(ctx, CLIENT, '?role=admin&provider=google_oauth2');
    assert.deepEqual(
      admins
        .trimEnd()
        .split('\n')
        .map((text) => (JSON.parse(text) as { identifier: string }).identifier),
      ['b'],
    );
    assert.equal(await exportText(ctx, 'empty'), '');
    problemOf(await call(ctx, 'GET', '/applications/ghost/users/export'), 404);
    problemOf(await call(ctx, 'GET', `/applications/${CLIENT}/users/export?limit=5`), 400);
  });
});

describe('export → import into an empty instance → export', () => {
  it('gives the same file, ids included, apart from the timestamps', async () => {
    const source = await buildTestApp();
    const target = await buildTestApp();
    try {
      await createApplication(source);
      await createApplication(target);
      const lines = Array.from({ length: 25 }, (_, n) =>
        line(n, {
          provider: n % 3 === 0 ? 'azure_saml' : 'google_oauth2',
          identifier: `Ünïcödé ${n} / a@b, c`,
          avatar: n % 2 === 0 ? `https://cdn.example.com/${n}.png` : null,
          scopes: [`tenant:${n}`],
          active: n % 4 !== 0,
          external_id: n % 5 === 0 ? `ext-${n}` : null,
          locale: 'pt-BR',
        }),
      );
      await runImport(source, CLIENT, ndjson(lines));
      const exported = await exportText(source, CLIENT);
      const job = await runImport(target, CLIENT, exported);
      assert.equal(job.counts.created, 25);
      const again = await exportText(target, CLIENT);
      const withoutTimes = (text: string) =>
        text.replace(/"(created_at|updated_at)":"[^"]*"/g, '"$1":"…"');
      assert.equal(withoutTimes(again), withoutTimes(exported));
      assert.equal(exported.split('\n').length, 26);
      // And importing the export back into its source changes nothing.
      const back = await runImport(source, CLIENT, exported);
      assert.equal(back.counts.unchanged, 25);
    } finally {
      await source.close();
      await target.close();
    }
  });
});
