// tessera-test: both-stores
// HTTP behaviour of the applications resource: create, read, replace, patch, delete, list,
// concurrency. The boundary tables (field rules, media types, If-Match conditions, list
// query parameters and cursors) are in applications-validation.test.ts.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  START_TIME,
  applicationBody,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  type TestContext,
  userPath,
} from './helpers.js';

const STRONG_ETAG = /^"[\x21\x23-\x7e]+"$/;
const JSON_TYPE = 'application/json; charset=utf-8';
const at = (ms: number) => new Date(ms).toISOString();

const ctx = useTestApp();

let counter = 0;
/** A client_id no other test uses (the suite shares one store). */
function freshId(): string {
  counter += 1;
  return `app-${counter}`;
}

async function read(clientId: string): Promise<LightMyRequestResponse> {
  const response = await call(ctx, 'GET', `/applications/${clientId}`);
  assert.equal(response.statusCode, 200, response.body);
  return response;
}

/** Creates an application and returns its client_id and current ETag. */
async function created(overrides: Record<string, unknown> = {}) {
  const clientId = freshId();
  await createApplication(ctx, { client_id: clientId, ...overrides });
  const response = await read(clientId);
  return { clientId, etag: String(response.headers.etag), body: response.json() };
}

/** Asserts the application is exactly as it was (body and ETag). */
async function assertUnchanged(clientId: string, before: { etag: string; body: unknown }) {
  const now = await read(clientId);
  assert.deepEqual(now.json(), before.body);
  assert.equal(now.headers.etag, before.etag);
}

describe('POST /applications', () => {
  it('creates with 201, Location, a strong ETag and every member, defaults filled in', async () => {
    ctx.clock.advance(1234);
    const clientId = freshId();
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: clientId }),
    });
    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.headers['content-type'], JSON_TYPE);
    assert.equal(response.headers.location, `/iam/api/v1/applications/${clientId}`);
    assert.match(String(response.headers.etag), STRONG_ETAG);
    const now = at(ctx.clock.now());
    assert.notEqual(now, at(START_TIME));
    assert.deepEqual(response.json(), {
      client_id: clientId,
      display_name: 'Billing',
      description: 'Invoices and payments',
      mode: 'internal',
      jwt_expiration_in_minutes: 60,
      external_token_validation: null,
      scim_provider: null,
      authorization: null,
      created_at: now,
      updated_at: now,
    });
    const followed = await ctx.app.inject({
      method: 'GET',
      url: String(response.headers.location),
      headers: { authorization: `apikey ${ctx.adminKey}` },
    });
    assert.equal(followed.statusCode, 200);
    assert.deepEqual(followed.json(), response.json());
    assert.equal(followed.headers.etag, response.headers.etag);
  });

  it('stores every member given', async () => {
    const clientId = freshId();
    const body = {
      client_id: clientId,
      display_name: 'Portal',
      description: 'Customer portal',
      mode: 'external',
      jwt_expiration_in_minutes: 15,
      external_token_validation: { google_oauth2: { issuer: 'https://accounts.google.com' } },
      scim_provider: 'okta_scim',
      authorization: { actions: { can_read: { roles: ['viewer'] } } },
    };
    const response = await call(ctx, 'POST', '/applications', { body });
    assert.equal(response.statusCode, 201, response.body);
    const now = at(ctx.clock.now());
    const expected = { ...body, created_at: now, updated_at: now };
    assert.deepEqual(response.json(), expected);
    assert.deepEqual((await read(clientId)).json(), expected);
  });

  it('refuses a duplicate client_id with 409 and keeps the original', async () => {
    const { clientId, etag, body } = await created();
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: clientId, display_name: 'Impostor' }),
    });
    problemOf(response, 409);
    await assertUnchanged(clientId, { etag, body });
  });

  it('treats client_id as case-sensitive: App and app are two applications', async () => {
    const upper = `App-${freshId()}`;
    const lower = upper.toLowerCase();
    await createApplication(ctx, { client_id: upper, display_name: 'Upper' });
    await createApplication(ctx, { client_id: lower, display_name: 'Lower' });
    assert.equal((await read(upper)).json().display_name, 'Upper');
    assert.equal((await read(lower)).json().display_name, 'Lower');
    problemOf(await call(ctx, 'GET', `/applications/${upper.toUpperCase()}`), 404);
  });

  it('creates exactly one of 40 concurrent identical requests; the rest get 409', async () => {
    const clientId = freshId();
    const responses = await Promise.all(
      Array.from({ length: 40 }, () =>
        call(ctx, 'POST', '/applications', { body: applicationBody({ client_id: clientId }) }),
      ),
    );
    const statuses = responses.map((response) => response.statusCode);
    assert.equal(statuses.filter((status) => status === 201).length, 1, String(statuses));
    assert.equal(statuses.filter((status) => status === 409).length, 39, String(statuses));
    for (const response of responses.filter((r) => r.statusCode === 409)) problemOf(response, 409);
    const winner = responses.find((response) => response.statusCode === 201)!;
    assert.equal((await read(clientId)).headers.etag, winner.headers.etag);
  });
});

describe('GET /applications/:client_id', () => {
  it('returns 200 with the resource and the ETag it was created with', async () => {
    const clientId = freshId();
    const creation = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: clientId }),
    });
    const response = await read(clientId);
    assert.equal(response.headers['content-type'], JSON_TYPE);
    assert.deepEqual(response.json(), creation.json());
    assert.equal(response.headers.etag, creation.headers.etag);
  });

  it('returns a 404 problem for an unknown application', async () => {
    const problem = problemOf(await call(ctx, 'GET', '/applications/no-such-app'), 404);
    assert.equal(problem.instance, '/iam/api/v1/applications/no-such-app');
  });

  it('answers If-None-Match with the current ETag with 304, the ETag and no body', async () => {
    const { clientId, etag } = await created();
    for (const header of [etag, '*', `"other", ${etag}`, `W/${etag}`]) {
      const response = await call(ctx, 'GET', `/applications/${clientId}`, {
        headers: { 'if-none-match': header },
      });
      assert.equal(response.statusCode, 304, header);
      assert.equal(response.body, '');
      assert.equal(response.headers.etag, etag);
    }
  });

  it('answers If-None-Match with a stale ETag with 200 and the current resource', async () => {
    const { clientId, etag } = await created();
    const changed = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { display_name: 'Renamed' },
    });
    const response = await call(ctx, 'GET', `/applications/${clientId}`, {
      headers: { 'if-none-match': etag },
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().display_name, 'Renamed');
    assert.equal(response.headers.etag, changed.headers.etag);
  });
});

describe('PUT /applications/:client_id', () => {
  const rich = {
    mode: 'external',
    jwt_expiration_in_minutes: 120,
    external_token_validation: { google_oauth2: { issuer: 'https://accounts.google.com' } },
    authorization: { actions: { can_read: { roles: ['viewer'] } } },
  };

  it('replaces the resource and resets omitted optional fields to their defaults', async () => {
    const { clientId, body: original } = await created(rich);
    ctx.clock.advance(60_000);
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: { display_name: 'New name', description: '' },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['content-type'], JSON_TYPE);
    const expected = {
      client_id: clientId,
      display_name: 'New name',
      description: '',
      mode: 'internal',
      jwt_expiration_in_minutes: 60,
      external_token_validation: null,
      scim_provider: null,
      authorization: null,
      created_at: original.created_at,
      updated_at: at(ctx.clock.now()),
    };
    assert.deepEqual(response.json(), expected);
    assert.match(String(response.headers.etag), STRONG_ETAG);
    const now = await read(clientId);
    assert.deepEqual(now.json(), expected);
    assert.equal(now.headers.etag, response.headers.etag);
  });

  it('accepts a client_id equal to the path and refuses a different one', async () => {
    const { clientId, etag, body } = await created();
    for (const other of [`${clientId}-x`, clientId.toUpperCase()]) {
      const refused = await call(ctx, 'PUT', `/applications/${clientId}`, {
        body: applicationBody({ client_id: other, display_name: 'Changed' }),
      });
      const problem = problemOf(refused, 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.pointer),
        ['/client_id'],
      );
      await assertUnchanged(clientId, { etag, body });
    }
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: applicationBody({ client_id: clientId, display_name: 'Changed' }),
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().display_name, 'Changed');
  });

  it('takes a GET body back unchanged: 200, same updated_at and ETag', async () => {
    const { clientId, etag, body } = await created(rich);
    ctx.clock.advance(60_000);
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, { body });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), body);
    assert.equal(response.headers.etag, etag);
    await assertUnchanged(clientId, { etag, body });
  });

  it('ignores created_at and updated_at in the body', async () => {
    const { clientId, body } = await created();
    ctx.clock.advance(5_000);
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: { ...body, display_name: 'Other', created_at: 'whenever', updated_at: 17 },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().created_at, body.created_at);
    assert.equal(response.json().updated_at, at(ctx.clock.now()));
  });

  it('moves updated_at to now and changes the ETag when something changes', async () => {
    const { clientId, etag, body } = await created();
    ctx.clock.advance(90_000);
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: { ...body, jwt_expiration_in_minutes: 61 },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().created_at, body.created_at);
    assert.equal(response.json().updated_at, at(ctx.clock.now()));
    assert.notEqual(response.json().updated_at, body.updated_at);
    assert.match(String(response.headers.etag), STRONG_ETAG);
    assert.notEqual(response.headers.etag, etag);
  });

  it('returns 404 for a missing application and does not create it', async () => {
    const clientId = freshId();
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: applicationBody({ client_id: clientId }),
    });
    problemOf(response, 404);
    problemOf(await call(ctx, 'GET', `/applications/${clientId}`), 404);
  });

  it('changes nothing when the body is invalid', async () => {
    const { clientId, etag, body } = await created(rich);
    ctx.clock.advance(1_000);
    const response = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: { display_name: 'Valid', description: 'Valid', jwt_expiration_in_minutes: 0 },
    });
    const problem = problemOf(response, 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/jwt_expiration_in_minutes'],
    );
    await assertUnchanged(clientId, { etag, body });
  });
});

describe('PATCH /applications/:client_id', () => {
  const patch = (clientId: string, body: unknown, options: { contentType?: string } = {}) =>
    call(ctx, 'PATCH', `/applications/${clientId}`, { body, ...options });

  it('changes only the members given', async () => {
    const { clientId, body } = await created({ jwt_expiration_in_minutes: 30 });
    ctx.clock.advance(2_000);
    const response = await patch(clientId, { mode: 'external' });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['content-type'], JSON_TYPE);
    assert.deepEqual(response.json(), {
      ...body,
      mode: 'external',
      updated_at: at(ctx.clock.now()),
    });
    assert.deepEqual((await read(clientId)).json(), response.json());
  });

  it('resets members with defaults when given null', async () => {
    const { clientId, body } = await created({
      mode: 'external',
      jwt_expiration_in_minutes: 5,
      external_token_validation: { a: 1 },
      scim_provider: 'entra_scim',
      authorization: { actions: { can_read: { roles: ['viewer'] } } },
    });
    const response = await patch(clientId, {
      mode: null,
      jwt_expiration_in_minutes: null,
      external_token_validation: null,
      scim_provider: null,
      authorization: null,
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), {
      ...body,
      mode: 'internal',
      jwt_expiration_in_minutes: 60,
      external_token_validation: null,
      scim_provider: null,
      authorization: null,
      updated_at: at(ctx.clock.now()),
    });
  });

  it('refuses null for display_name and description, changing nothing', async () => {
    const { clientId, etag, body } = await created();
    for (const field of ['display_name', 'description']) {
      const problem = problemOf(await patch(clientId, { [field]: null, mode: 'external' }), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.pointer),
        [`/${field}`],
      );
      await assertUnchanged(clientId, { etag, body });
    }
  });

  it('merges external_token_validation recursively; a nested null removes that key', async () => {
    const { clientId } = await created({
      external_token_validation: {
        google_oauth2: { issuer: 'https://g', audience: 'aud', keys: { k1: 1 } },
        azure_saml: { tenant: 't', hosts: ['a', 'b'] },
        legacy: { x: 1 },
      },
    });
    const response = await patch(clientId, {
      external_token_validation: {
        google_oauth2: { audience: null, keys: { k2: 2 } },
        azure_saml: { hosts: ['c'] },
        legacy: null,
        okta_oidc: { issuer: 'https://o', unset: null },
      },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json().external_token_validation, {
      google_oauth2: { issuer: 'https://g', keys: { k1: 1, k2: 2 } },
      azure_saml: { tenant: 't', hosts: ['c'] },
      okta_oidc: { issuer: 'https://o' },
    });
    assert.deepEqual((await read(clientId)).json().external_token_validation, {
      google_oauth2: { issuer: 'https://g', keys: { k1: 1, k2: 2 } },
      azure_saml: { tenant: 't', hosts: ['c'] },
      okta_oidc: { issuer: 'https://o' },
    });
  });

  it('merges into an unset external_token_validation, dropping nulls', async () => {
    const { clientId } = await created();
    const response = await patch(clientId, {
      external_token_validation: { a: { b: null, c: 1 } },
    });
    assert.deepEqual(response.json().external_token_validation, { a: { c: 1 } });
  });

  it('accepts application/json as well as application/merge-patch+json', async () => {
    const { clientId } = await created();
    const response = await patch(
      clientId,
      { description: 'Plain JSON' },
      {
        contentType: 'application/json',
      },
    );
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().description, 'Plain JSON');
  });

  it('leaves updated_at and the ETag alone when nothing changes', async () => {
    const { clientId, etag, body } = await created({ external_token_validation: { a: { b: 1 } } });
    ctx.clock.advance(3_000);
    for (const noop of [
      {},
      { mode: 'internal', display_name: ' Billing ' },
      { client_id: clientId, created_at: 'x', updated_at: 'y' },
      { external_token_validation: { a: { b: 1 }, c: null } },
    ]) {
      const response = await patch(clientId, noop);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), body);
      assert.equal(response.headers.etag, etag);
    }
    await assertUnchanged(clientId, { etag, body });
  });

  it('refuses a client_id different from the path', async () => {
    const { clientId, etag, body } = await created();
    const problem = problemOf(await patch(clientId, { client_id: 'other', mode: 'external' }), 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/client_id'],
    );
    await assertUnchanged(clientId, { etag, body });
  });

  it('returns 404 for a missing application', async () => {
    problemOf(await patch(freshId(), { mode: 'external' }), 404);
  });

  it('lets exactly one of 20 concurrent writes with the same If-Match win; the rest get 412', async () => {
    const { clientId, etag } = await created();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        index % 2 === 0
          ? call(ctx, 'PATCH', `/applications/${clientId}`, {
              body: { display_name: `Writer ${index}` },
              headers: { 'if-match': etag },
            })
          : call(ctx, 'PUT', `/applications/${clientId}`, {
              body: { display_name: `Writer ${index}`, description: 'd' },
              headers: { 'if-match': etag },
            }),
      ),
    );
    const statuses = responses.map((response) => response.statusCode);
    assert.equal(statuses.filter((status) => status === 200).length, 1, String(statuses));
    assert.equal(statuses.filter((status) => status === 412).length, 19, String(statuses));
    const winner = responses.find((response) => response.statusCode === 200)!;
    const now = await read(clientId);
    assert.equal(now.json().display_name, winner.json().display_name);
    assert.equal(now.headers.etag, winner.headers.etag);
  });
});

describe('DELETE /applications/:client_id', () => {
  it('answers 204 with no body; the application is then gone', async () => {
    const { clientId } = await created();
    const response = await call(ctx, 'DELETE', `/applications/${clientId}`);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    problemOf(await call(ctx, 'GET', `/applications/${clientId}`), 404);
    problemOf(await call(ctx, 'DELETE', `/applications/${clientId}`), 404);
  });

  it('deletes the application’s users, and only its users', async () => {
    const { clientId } = await created();
    const { clientId: otherId } = await created();
    await createUser(ctx, clientId, { identifier: 'u1' });
    await createUser(ctx, clientId, { identifier: 'u2', email: 'u2@example.com' });
    await createUser(ctx, otherId, { identifier: 'u1' });
    assert.equal((await call(ctx, 'DELETE', `/applications/${clientId}`)).statusCode, 204);

    problemOf(await call(ctx, 'GET', `/applications/${clientId}/users`), 404);
    problemOf(await call(ctx, 'GET', userPath(clientId, 'google_oauth2', 'u1')), 404);
    const other = await call(ctx, 'GET', userPath(otherId, 'google_oauth2', 'u1'));
    assert.equal(other.statusCode, 200, other.body);

    await createApplication(ctx, { client_id: clientId });
    const users = await call(ctx, 'GET', `/applications/${clientId}/users?include_total=true`);
    assert.equal(users.statusCode, 200, users.body);
    assert.deepEqual(users.json(), { items: [], next_cursor: null, total: 0 });
    problemOf(await call(ctx, 'GET', userPath(clientId, 'google_oauth2', 'u1')), 404);
  });

  it('gives a re-created application a new ETag', async () => {
    const { clientId, etag } = await created();
    await call(ctx, 'DELETE', `/applications/${clientId}`);
    await createApplication(ctx, { client_id: clientId });
    assert.notEqual((await read(clientId)).headers.etag, etag);
    const stale = await call(ctx, 'DELETE', `/applications/${clientId}`, {
      headers: { 'if-match': etag },
    });
    problemOf(stale, 412);
    await read(clientId);
  });
});

describe('GET /applications', () => {
  const authorization = (context: TestContext) => ({ authorization: `apikey ${context.adminKey}` });

  /** Builds an app holding exactly the given applications, created in the given order. */
  async function appWith(clientIds: string[]): Promise<TestContext> {
    const context = await buildTestApp();
    for (const clientId of clientIds) await createApplication(context, { client_id: clientId });
    return context;
  }

  /** Follows `Link: rel="next"` verbatim from the first page; returns every page. */
  async function walk(context: TestContext, firstQuery: string) {
    const pages: LightMyRequestResponse[] = [];
    let url: string | undefined = `/iam/api/v1/applications${firstQuery}`;
    while (url !== undefined) {
      const response: LightMyRequestResponse = await context.app.inject({
        method: 'GET',
        url,
        headers: authorization(context),
      });
      assert.equal(response.statusCode, 200, response.body);
      pages.push(response);
      const link = response.headers.link;
      if (link === undefined) {
        assert.equal(response.json().next_cursor, null);
        url = undefined;
      } else {
        const match = /^<([^>]+)>; rel="next"$/.exec(String(link));
        assert.ok(match !== null, `unexpected Link ${String(link)}`);
        assert.notEqual(response.json().next_cursor, null);
        url = match[1];
      }
      assert.ok(pages.length <= 50, 'pagination does not end');
    }
    return pages;
  }

  const byteOrder = (ids: string[]) =>
    [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const idsOf = (response: LightMyRequestResponse): string[] =>
    response.json().items.map((item: { client_id: string }) => item.client_id);

  describe('order', () => {
    const mixed = ['z', 'a', 'A', 'Z', '_', '-', '~', '.a', '0', '9', 'a-b', 'a.b', 'a_b'];
    mixed.push('a~b', 'aB', 'ab', 'B');
    const expected = ['-', '.a', '0', '9', 'A', 'B', 'Z', '_', 'a', 'a-b', 'a.b', 'aB', 'a_b'];
    expected.push('ab', 'a~b', 'z', '~');
    let list: TestContext;
    before(async () => {
      list = await appWith(mixed);
    });
    after(() => list.close());

    it('orders applications by client_id in byte order', async () => {
      assert.deepEqual(byteOrder(mixed), expected);
      const response = await call(list, 'GET', '/applications?limit=1000');
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['content-type'], JSON_TYPE);
      assert.deepEqual(idsOf(response), expected);
      assert.equal(response.json().next_cursor, null);
      assert.equal(response.headers.link, undefined);
      assert.deepEqual(
        response.json().items[0],
        (await call(list, 'GET', '/applications/-')).json(),
      );
    });

    it('keeps byte order across pages', async () => {
      const pages = await walk(list, '?limit=2');
      assert.equal(pages.length, Math.ceil(expected.length / 2));
      assert.deepEqual(pages.flatMap(idsOf), expected);
    });

    it('shows a restricted key only its applications, and counts only those', async () => {
      const key = await list.createKey({
        roles: ['applications:read'],
        applications: ['z', 'A', 'nope'],
      });
      const response = await call(list, 'GET', '/applications?include_total=true', { key });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(idsOf(response), ['A', 'z']);
      assert.equal(response.json().total, 2);
    });
  });

  describe('pagination', () => {
    const ids = ['p4', 'p1', 'p7', 'p3', 'p6', 'p2', 'p5'];
    let list: TestContext;
    before(async () => {
      list = await appWith(ids);
    });
    after(() => list.close());

    it('visits every application exactly once, in order, following Link verbatim', async () => {
      const pages = await walk(list, '?limit=3&include_total=true');
      assert.deepEqual(
        pages.map((page) => idsOf(page).length),
        [3, 3, 1],
      );
      assert.deepEqual(pages.flatMap(idsOf), byteOrder(ids));
      for (const page of pages) assert.equal(page.json().total, 7);
      const link = String(pages[0]!.headers.link);
      assert.ok(link.startsWith('</iam/api/v1/applications?'), link);
      const query = new URLSearchParams(/\?([^>]*)>/.exec(link)![1]);
      assert.equal(query.get('limit'), '3');
      assert.equal(query.get('include_total'), 'true');
      assert.equal(query.get('cursor'), pages[0]!.json().next_cursor);
    });

    it('gives the same next page for next_cursor as for the Link', async () => {
      const first = await call(list, 'GET', '/applications?limit=3');
      const cursor = encodeURIComponent(first.json().next_cursor);
      const second = await call(list, 'GET', `/applications?limit=3&cursor=${cursor}`);
      assert.deepEqual(idsOf(second), ['p4', 'p5', 'p6']);
      assert.equal('total' in second.json(), false);
    });

    it('ends with next_cursor null and no Link when the page holds the rest exactly', async () => {
      const all = await call(list, 'GET', '/applications?limit=7');
      assert.deepEqual(idsOf(all), byteOrder(ids));
      assert.equal(all.json().next_cursor, null);
      assert.equal(all.headers.link, undefined);
      const almost = await call(list, 'GET', '/applications?limit=6');
      assert.equal(idsOf(almost).length, 6);
      assert.notEqual(almost.json().next_cursor, null);
      assert.notEqual(almost.headers.link, undefined);
    });

    it('continues after the last row seen even when that row has been deleted', async () => {
      const context = await appWith(['k1', 'k2', 'k3', 'k4']);
      try {
        const first = await call(context, 'GET', '/applications?limit=2');
        assert.equal((await call(context, 'DELETE', '/applications/k2')).statusCode, 204);
        const cursor = encodeURIComponent(first.json().next_cursor);
        const second = await call(context, 'GET', `/applications?limit=2&cursor=${cursor}`);
        assert.deepEqual(idsOf(second), ['k3', 'k4']);
      } finally {
        await context.close();
      }
    });
  });

  it('returns an empty page, with total 0, when there are no applications', async () => {
    const context = await buildTestApp();
    try {
      const response = await call(context, 'GET', '/applications?include_total=true');
      assert.deepEqual(response.json(), { items: [], next_cursor: null, total: 0 });
      assert.equal(response.headers.link, undefined);
    } finally {
      await context.close();
    }
  });

  it('returns 100 items by default', async () => {
    const context = await buildTestApp();
    try {
      await Promise.all(
        Array.from({ length: 101 }, (_, index) =>
          createApplication(context, { client_id: `d${String(index).padStart(3, '0')}` }),
        ),
      );
      const response = await call(context, 'GET', '/applications');
      assert.equal(idsOf(response).length, 100);
      assert.equal(idsOf(response).at(-1), 'd099');
      const rest = await call(
        context,
        'GET',
        `/applications?cursor=${encodeURIComponent(response.json().next_cursor)}`,
      );
      assert.deepEqual(idsOf(rest), ['d100']);
    } finally {
      await context.close();
    }
  });
});
