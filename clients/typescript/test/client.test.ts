// tessera-test: both-stores
// The TypeScript client against a real Tessera server listening on a loopback port: typed calls,
// problem documents as TesseraError, identifiers of any characters in paths, iteration across
// pages, and retries after 429/503.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, type TestContext } from '../../../test/helpers.js';
import {
  createTessera,
  retryAfterMs,
  type Tessera,
  TesseraError,
  type User,
  type UserCreate,
} from '../src/index.js';

let ctx: TestContext;
let baseUrl: string;
let tessera: Tessera;

before(async () => {
  ctx = await buildTestApp();
  baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  tessera = createTessera({ baseUrl, apiKey: ctx.adminKey });
});
after(() => ctx.close());

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

function user(identifier: string, email: string): UserCreate {
  return {
    provider: 'azure_saml',
    identifier,
    name: `User ${identifier}`,
    email,
    locale: 'en-GB',
    roles: ['reader'],
    scopes: ['org:acme'],
  };
}

/** The TesseraError a call rejects with. */
async function failure(call: Promise<unknown>): Promise<TesseraError> {
  const error = await call.then(
    () => assert.fail('the call succeeded'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof TesseraError, `a TesseraError, not ${String(error)}`);
  return error;
}

describe('the TypeScript client against a real server', () => {
  it('creates, reads, changes and deletes an application, with typed members', async () => {
    const created = await tessera.applications.create({
      client_id: 'client-app',
      display_name: '  Client app  ',
      description: 'Made by the TypeScript client',
      // @ts-expect-error created_at is read-only: the client's types refuse it in a request.
      created_at: '2020-01-01T00:00:00.000Z',
    });
    assert.equal(created.display_name, 'Client app');
    assert.equal(created.mode, 'internal');
    assert.match(created.created_at, /^\d{4}-\d{2}-\d{2}T/);
    const patched = await tessera.applications.patch('client-app', {
      jwt_expiration_in_minutes: 30,
    });
    assert.equal(patched.jwt_expiration_in_minutes, 30);
    const replaced = await tessera.applications.replace('client-app', {
      display_name: 'Client app',
      description: 'Replaced',
    });
    assert.equal(replaced.jwt_expiration_in_minutes, 60, 'PUT resets what it leaves out');
    assert.equal((await tessera.applications.get('client-app')).description, 'Replaced');
    await tessera.applications.delete('client-app');
    const gone = await failure(tessera.applications.get('client-app'));
    assert.equal(gone.status, 404);
  });

  it('throws problem documents as TesseraError: status, type, detail and invalid members', async () => {
    const missing = await failure(tessera.applications.get('no-such-app'));
    assert.equal(missing.status, 404);
    assert.equal(missing.type, 'https://tessera.dev/problems/not-found');
    assert.match(missing.detail, /no-such-app/);
    assert.equal(missing.problem.status, 404);

    const invalid = await failure(
      tessera.applications.create({ client_id: 'bad id', display_name: '', description: '' }),
    );
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.errors.map((error) => error.pointer).sort(), [
      '/client_id',
      '/display_name',
    ]);

    await tessera.applications.create({ client_id: 'twice', display_name: 'A', description: '' });
    const conflict = await failure(
      tessera.applications.create({ client_id: 'twice', display_name: 'A', description: '' }),
    );
    assert.equal(conflict.status, 409);

    const stale = await failure(
      tessera.applications.patch('twice', { description: 'x' }, { ifMatch: '"not-the-etag"' }),
    );
    assert.equal(stale.status, 412);
    assert.equal((await tessera.applications.get('twice')).description, '', 'nothing changed');

    const unauthorised = createTessera({ baseUrl, apiKey: 'tsr_wrong' });
    assert.equal((await failure(unauthorised.applications.get('twice'))).status, 401);
  });

  it('percent-encodes identifiers of any characters in paths', async () => {
    await tessera.applications.create({ client_id: 'people', display_name: 'P', description: '' });
    const identifiers = [
      'CN=Grace Hopper,OU=Navy',
      'a/b?c#d%e&f=g',
      'ünïcødé 日本 😀',
      '..hidden',
      'plus+sign@example.com',
    ];
    for (const [index, identifier] of identifiers.entries()) {
      await tessera.users.create('people', user(identifier, `user${index}@example.com`));
    }
    for (const identifier of identifiers) {
      const found = await tessera.users.get('people', 'azure_saml', identifier);
      assert.equal(found.identifier, identifier);
      const changed = await tessera.users.patch('people', 'azure_saml', identifier, {
        scopes: ['org:changed'],
      });
      assert.deepEqual(changed.scopes, ['org:changed']);
    }
    await tessera.users.delete('people', 'azure_saml', 'a/b?c#d%e&f=g');
    const gone = await failure(tessera.users.get('people', 'azure_saml', 'a/b?c#d%e&f=g'));
    assert.equal(gone.status, 404);
  });

  it('iterates every user across pages with for await', async () => {
    await tessera.applications.create({ client_id: 'many', display_name: 'M', description: '' });
    for (let index = 0; index < 7; index++) {
      await tessera.users.create('many', user(`user-${index}`, `u${index}+tag@example.com`));
    }
    const seen: User[] = [];
    for await (const found of tessera.users.list('many', { limit: 2 })) seen.push(found);
    assert.deepEqual(
      seen.map((found) => found.identifier),
      ['user-0', 'user-1', 'user-2', 'user-3', 'user-4', 'user-5', 'user-6'],
    );
    const pages = await collect(tessera.users.list('many', { limit: 3 }).pages());
    assert.deepEqual(
      pages.map((page) => page.items.length),
      [3, 3, 1],
    );
    const filtered = await collect(tessera.users.list('many', { email: 'u4+tag@example.com' }));
    assert.deepEqual(
      filtered.map((found) => found.identifier),
      ['user-4'],
      'a + in a query value arrives as +',
    );
    const applications = await collect(tessera.applications.list({ limit: 1 }));
    assert.ok(applications.some((application) => application.client_id === 'many'));
  });

  it('manages API keys and signing keys, and issues access tokens', async () => {
    await tessera.applications.create({ client_id: 'keys', display_name: 'K', description: '' });
    const key = await tessera.apiKeys.create({
      name: 'deploy',
      roles: ['users:read'],
      applications: ['keys'],
    });
    assert.match(key.key, /^tsr_/);
    const restricted = createTessera({ baseUrl, apiKey: key.key });
    assert.deepEqual(await collect(restricted.users.list('keys')), []);
    assert.equal(
      (
        await failure(
          restricted.applications.create({ client_id: 'nope', display_name: 'N', description: '' }),
        )
      ).status,
      403,
    );
    const rotated = await tessera.apiKeys.rotate(key.id, { previous_valid_for_seconds: 0 });
    assert.notEqual(rotated.key, key.key);
    await tessera.apiKeys.revoke(key.id);
    const listed = await collect(tessera.apiKeys.list({ include_revoked: true, limit: 1 }));
    assert.ok(listed.some((listedKey) => listedKey.id === key.id && listedKey.revoked_at !== null));

    await tessera.users.create('keys', user('token-user', 'token@example.com'));
    const token = await tessera.users.issueToken('keys', 'azure_saml', 'token-user');
    assert.equal(token.token_type, 'Bearer');
    assert.equal(token.access_token.split('.').length, 3);
    const [signing] = await tessera.signingKeys.list();
    assert.ok(signing);
    const added = await tessera.signingKeys.rotate();
    assert.equal(added.state, 'pending');
    assert.equal((await tessera.signingKeys.get(added.kid)).kid, added.kid);
    const revocation = await tessera.signingKeys.revoke(signing.kid);
    assert.equal(revocation.revoked.state, 'revoked');
    assert.notEqual(revocation.active.kid, signing.kid);
  });

  it('reads the audit trail across pages', async () => {
    await tessera.applications.create({ client_id: 'audited', display_name: 'A', description: '' });
    for (let index = 0; index < 3; index++) {
      await tessera.applications.patch('audited', { description: `change ${index}` });
    }
    const events = await collect(tessera.events.list({ client_id: 'audited', limit: 2 }));
    assert.deepEqual(
      events.map((event) => event.type),
      ['application.created', 'application.updated', 'application.updated', 'application.updated'],
    );
    const ids = events.map((event) => event.id);
    assert.deepEqual(ids, [...ids].sort(), 'in commit order');
    const rest = await collect(tessera.events.list({ client_id: 'audited' }, ids[1]));
    assert.deepEqual(
      rest.map((event) => event.id),
      ids.slice(2),
    );
  });

  it('follows the change feed as events commit (long polls), and stops when told', async () => {
    await tessera.applications.create({
      client_id: 'followed',
      display_name: 'F',
      description: '',
    });
    const [created] = await collect(tessera.events.list({ client_id: 'followed' }));
    assert.ok(created);
    const stop = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      for await (const event of tessera.events.follow(
        { client_id: 'followed' },
        { after: created.id, waitSeconds: 5, signal: stop.signal },
      )) {
        seen.push(event.type);
        if (seen.length === 2) stop.abort();
      }
    })();
    // Made while the feed waits: each answers a long poll.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await tessera.applications.patch('followed', { description: 'one' });
    await tessera.applications.delete('followed');
    await following;
    assert.deepEqual(seen, ['application.updated', 'application.deleted']);

    const empty = await tessera.events.poll({
      client_id: 'followed',
      after: '9999999999999999',
      wait: 1,
    });
    assert.deepEqual(empty.items, []);
    assert.equal(empty.next_after, '9999999999999999');

    // Aborting while a long poll waits ends the iteration at once, quietly.
    const idle = new AbortController();
    const started = Date.now();
    setTimeout(() => idle.abort(), 200);
    const none = await collect(
      tessera.events.follow(
        { client_id: 'nothing-here' },
        { waitSeconds: 30, signal: idle.signal },
      ),
    );
    assert.deepEqual(none, []);
    assert.ok(Date.now() - started < 5_000, 'the wait was cut short');
  });

  it('manages webhooks: create (secret once), read, patch, rotate the secret, replay, deliveries, delete', async () => {
    const created = await tessera.webhooks.create({
      url: 'https://hooks.example.com/tessera',
      event_types: ['user.*'],
      client_ids: null,
      description: 'CRM sync',
    });
    assert.match(created.secret, /^whsec_/);
    assert.equal(created.enabled, true);
    const read = await tessera.webhooks.get(created.id);
    assert.equal(read.description, 'CRM sync');
    assert.ok(!('secret' in read), 'the secret is shown once');
    const listed = await collect(tessera.webhooks.list({ limit: 1 }));
    assert.ok(listed.some((webhook) => webhook.id === created.id));
    const patched = await tessera.webhooks.patch(created.id, { enabled: false });
    assert.equal(patched.enabled, false);
    const rotated = await tessera.webhooks.rotateSecret(created.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    const replay = await tessera.webhooks.replay(created.id, null);
    assert.deepEqual(replay, { webhook_id: created.id, after: null });
    assert.deepEqual(
      await collect(tessera.webhooks.deliveries(created.id, { status: 'failed' })),
      [],
    );
    const stale = await failure(tessera.webhooks.delete(created.id, { ifMatch: '"stale"' }));
    assert.equal(stale.status, 412);
    await tessera.webhooks.delete(created.id);
    assert.equal((await failure(tessera.webhooks.get(created.id))).status, 404);
  });

  it('runs the token exchange dry run on an outside token', async () => {
    await tessera.applications.create({ client_id: 'mobile', display_name: 'M', description: '' });
    const report = await tessera.applications.validateExternalToken('mobile', 'not-a-jwt');
    assert.equal(report.valid, false);
    assert.equal(report.failed_check, 'format');
  });

  it('asks for authorization decisions (AuthZEN): one, a batch, the three searches, the metadata', async () => {
    const authorization = {
      actions: {
        can_read_todos: { roles: ['viewer', 'editor'] },
        can_update_todo: {
          roles: ['admin'],
          owner_roles: ['editor'],
          owner: { resource_property: 'ownerID', user_attribute: 'email' as const },
        },
      },
    };
    const created = await tessera.applications.create({
      client_id: 'todo',
      display_name: 'Todo',
      description: '',
      authorization,
    });
    assert.deepEqual(created.authorization, authorization, 'the model is typed and kept');
    for (const [identifier, roles] of [
      ['rick', ['admin']],
      ['morty', ['editor']],
      ['summer', ['viewer']],
    ] as const) {
      await tessera.users.create('todo', {
        ...user(identifier, `${identifier}@example.com`),
        roles: [...roles],
      });
    }
    const key = await tessera.apiKeys.create({
      name: 'todo-pep',
      roles: ['decisions:read'],
      applications: ['todo'],
    });
    // A key restricted to one application needs no context.client_id.
    const pep = createTessera({ baseUrl, apiKey: key.key });
    const morty = { type: 'user', id: 'azure_saml:morty' };
    const own = { type: 'todo', id: '1', properties: { ownerID: 'MORTY@example.com' } };
    const theirs = { type: 'todo', id: '2', properties: { ownerID: 'rick@example.com' } };
    assert.deepEqual(
      await pep.decisions.evaluate({
        subject: morty,
        action: { name: 'can_update_todo' },
        resource: own,
      }),
      { decision: true },
    );
    assert.deepEqual(
      await pep.decisions.evaluate({
        subject: morty,
        action: { name: 'can_update_todo' },
        resource: theirs,
      }),
      { decision: false },
      'a deny is an answer, not an error',
    );
    const batch = await pep.decisions.evaluations({
      subject: morty,
      action: { name: 'can_update_todo' },
      options: { evaluations_semantic: 'deny_on_first_deny' },
      evaluations: [
        { resource: own },
        { resource: theirs },
        { action: { name: 'can_read_todos' }, resource: theirs },
      ],
    });
    assert.deepEqual(batch.evaluations, [{ decision: true }, { decision: false }]);

    const subjects = pep.decisions.searchSubjects({
      subject: { type: 'user' },
      action: { name: 'can_read_todos' },
      resource: { type: 'todo', id: '1' },
      page: { limit: 1 },
    });
    const pages = await collect(subjects.pages());
    assert.deepEqual(
      pages.map((page) => page.results.map((result) => result.id)),
      [['azure_saml:morty'], ['azure_saml:summer']],
      'one result a page; the second page ends with an empty next_token',
    );
    assert.deepEqual(
      (await collect(subjects)).map((result) => result.id),
      ['azure_saml:morty', 'azure_saml:summer'],
      'iteration follows next_token to the empty one',
    );
    const resources = await collect(
      pep.decisions.searchResources({
        subject: { type: 'user', id: 'azure_saml:rick' },
        action: { name: 'can_update_todo' },
        resource: { type: 'user' },
      }),
    );
    assert.deepEqual(
      resources.map((resource) => resource.id),
      ['azure_saml:morty', 'azure_saml:rick', 'azure_saml:summer'],
    );
    const actions = await collect(pep.decisions.searchActions({ subject: morty, resource: own }));
    assert.deepEqual(
      actions.map((action) => action.name),
      ['can_read_todos', 'can_update_todo'],
    );

    const configuration = await pep.decisions.configuration();
    assert.equal(configuration.access_evaluation_endpoint.endsWith('/access/v1/evaluation'), true);

    // A key without decisions:read is refused with a problem document.
    const reader = createTessera({
      baseUrl,
      apiKey: await ctx.createKey({ name: 'no-decisions', roles: ['users:read'] }),
    });
    const refused = await failure(
      reader.decisions.evaluate({
        subject: morty,
        action: { name: 'can_read_todos' },
        resource: own,
        context: { client_id: 'todo' },
      }),
    );
    assert.equal(refused.status, 403);
  });

  it('reaches every operation of the document through tessera.http (SCIM here)', async () => {
    await tessera.applications.patch('people', { scim_provider: 'okta_scim' });
    const { data, response } = await tessera.http.GET(
      '/scim/v2/{client_id}/ServiceProviderConfig',
      {
        params: { path: { client_id: 'people' } },
      },
    );
    assert.equal(response.status, 200);
    assert.ok(
      data?.schemas.includes('urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'),
    );
  });
});

describe('retries', () => {
  it('sends a request again after a 503 with Retry-After, body and all, and waits as told', async () => {
    const statuses: number[] = [];
    let refused = 0;
    const flaky = createTessera({
      baseUrl,
      apiKey: ctx.adminKey,
      // Tessera's own 503 as a restarting instance sends it, for the first attempt only.
      fetch: async (request) => {
        if (refused++ === 0) {
          statuses.push(503);
          return new Response(
            JSON.stringify({
              type: 'about:blank',
              title: 'Service unavailable',
              status: 503,
              detail: 'restarting',
            }),
            {
              status: 503,
              headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
            },
          );
        }
        const response = await fetch(request);
        statuses.push(response.status);
        return response;
      },
    });
    const started = Date.now();
    const created = await flaky.applications.create({
      client_id: 'after-retry',
      display_name: 'Retried',
      description: 'sent twice, made once',
    });
    const waited = Date.now() - started;
    assert.deepEqual(statuses, [503, 201]);
    assert.equal(created.description, 'sent twice, made once');
    assert.ok(waited >= 950, `waited ${waited} ms for Retry-After: 1`);
  });

  it('gives up on a 429 whose Retry-After is longer than it may wait, without waiting', async () => {
    const limited = await buildTestApp({ rateLimitPerMinute: 2 });
    try {
      const url = await limited.app.listen({ port: 0, host: '127.0.0.1' });
      const client = createTessera({
        baseUrl: url,
        apiKey: limited.adminKey,
        maxRetryDelayMs: 5_000,
      });
      await client.applications.get('x').catch(() => undefined);
      await client.applications.get('x').catch(() => undefined);
      const started = Date.now();
      const error = await failure(client.applications.get('x'));
      assert.equal(error.status, 429);
      assert.ok(Number(error.response.headers.get('retry-after')) > 5);
      assert.ok(Date.now() - started < 2_000, 'no wait for a Retry-After it would not honour');
    } finally {
      await limited.close();
    }
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-25T08:00:00Z');
    assert.equal(retryAfterMs('3', now), 3000);
    assert.equal(retryAfterMs('Wed, 25 Nov 2026 08:00:05 GMT', now), 5000);
    assert.equal(retryAfterMs('Wed, 25 Nov 2026 07:00:00 GMT', now), 0);
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs(null, now), undefined);
  });
});

describe('coverage of the API', () => {
  interface Operation {
    id: string;
    method: string;
    pattern: RegExp;
  }
  const document = JSON.parse(
    readFileSync(new URL('../openapi.json', import.meta.url), 'utf8'),
  ) as { paths: Record<string, Record<string, { operationId?: string }>> };
  const operations: Operation[] = Object.entries(document.paths)
    .filter(
      ([path]) =>
        path.startsWith('/iam/api/v1/') ||
        path.startsWith('/access/v1/') ||
        path === '/.well-known/authzen-configuration',
    )
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        id: operation.operationId!,
        method: method.toUpperCase(),
        pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      })),
    );

  it('has a call for every operation under /iam/api/v1, and for the AuthZEN endpoints', async () => {
    const called = new Set<string>();
    const recording = createTessera({
      baseUrl: 'http://tessera.invalid',
      apiKey: 'tsr_recording',
      retries: 0,
      fetch: async (request) => {
        const { pathname } = new URL(request.url);
        const matching = operations.filter(
          (operation) => operation.method === request.method && operation.pattern.test(pathname),
        );
        // A literal segment wins over a parameter (POST /signing-keys/rotate).
        const operation = matching.sort(
          (a, b) => b.pattern.source.length - a.pattern.source.length,
        )[0];
        assert.ok(operation, `${request.method} ${pathname} is an operation of the document`);
        called.add(operation.id);
        return Response.json({
          items: [],
          next_cursor: null,
          next_after: null,
          page: { next_token: '', count: 0 },
          results: [],
        });
      },
    });
    const all = async <T>(items: AsyncIterable<T>) => collect(items);
    const user = ['app', 'google_oauth2', 'ada'] as const;
    const subject = { type: 'user', id: 'google_oauth2:ada' };
    const action = { name: 'can_read' };
    const resource = { type: 'document', id: 'd1' };
    const calls: (() => Promise<unknown>)[] = [
      () => recording.applications.create({ client_id: 'app', display_name: 'A', description: '' }),
      () => all(recording.applications.list()),
      () => recording.applications.get('app'),
      () => recording.applications.replace('app', { display_name: 'A', description: '' }),
      () => recording.applications.patch('app', { description: 'x' }),
      () => recording.applications.delete('app'),
      () => recording.applications.validateExternalToken('app', 'token'),
      () =>
        recording.users.create('app', {
          provider: 'google_oauth2',
          identifier: 'ada',
          name: 'Ada',
          email: 'ada@example.com',
          locale: 'en',
          roles: [],
          scopes: [],
        }),
      () => all(recording.users.list('app')),
      () => recording.users.get(...user),
      () =>
        recording.users.replace(...user, {
          name: 'Ada',
          email: 'ada@example.com',
          locale: 'en',
          roles: [],
          scopes: [],
        }),
      () => recording.users.patch(...user, { name: 'Ada' }),
      () => recording.users.delete(...user),
      () => recording.users.issueToken(...user),
      () => recording.users.import('app', '{}\n', { format: 'auth0', providerMap: { a: 'a_b' } }),
      () => all(recording.users.export('app', { role: 'admin' })),
      () => recording.imports.get('id'),
      () => all(recording.imports.errors('id')),
      () => recording.imports.cancel('id'),
      () => recording.apiKeys.create({ name: 'k', roles: ['users:read'] }),
      () => all(recording.apiKeys.list()),
      () => recording.apiKeys.get('id'),
      () => recording.apiKeys.rotate('id'),
      () => recording.apiKeys.revoke('id'),
      () => recording.signingKeys.list(),
      () => recording.signingKeys.get('kid'),
      () => recording.signingKeys.rotate(),
      () => recording.signingKeys.revoke('kid'),
      () => recording.events.poll({ wait: 1 }),
      () => recording.webhooks.create({ url: 'https://example.com/hooks', event_types: ['*'] }),
      () => all(recording.webhooks.list()),
      () => recording.webhooks.get('id'),
      () => recording.webhooks.patch('id', { enabled: false }),
      () => recording.webhooks.delete('id'),
      () => recording.webhooks.rotateSecret('id'),
      () => recording.webhooks.replay('id', null),
      () => all(recording.webhooks.deliveries('id')),
      () => recording.decisions.evaluate({ subject, action, resource }),
      () => recording.decisions.evaluations({ subject, evaluations: [{ action, resource }] }),
      () =>
        all(recording.decisions.searchSubjects({ subject: { type: 'user' }, action, resource })),
      () => all(recording.decisions.searchResources({ subject, action, resource })),
      () => all(recording.decisions.searchActions({ subject, resource })),
      () => recording.decisions.configuration(),
    ];
    for (const call of calls) await call();
    const missing = operations.map((operation) => operation.id).filter((id) => !called.has(id));
    assert.deepEqual(missing, [], 'every operation has a method of the client (and a line above)');
  });
});
