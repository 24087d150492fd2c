// tessera-test: both-stores
// HTTP rules that hold for every route: unknown routes and methods, body limits and media
// types, malformed and hostile JSON, request ids, and the store becoming unavailable.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import {
  applicationBody,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  problemOf,
  type TestContext,
  userBody,
} from './helpers.js';

describe('HTTP protocol rules', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  describe('unknown routes', () => {
    for (const path of [
      '/iam/api/v1/nope',
      '/iam/api/v2/applications',
      '/nope',
      '/iam/api/v1/applications/a/b',
    ]) {
      it(`answers 404 for ${path}, with or without a key`, async () => {
        for (const key of [null, ctx.adminKey]) {
          const response = await call(ctx, 'GET', `/${path}`, { key });
          const problem = problemOf(response, 404);
          assert.equal(problem.instance, path);
          assert.equal(problem.type, 'https://tessera.dev/problems/not-found');
        }
      });
    }
  });

  describe('trailing slashes', () => {
    // One rule for every API path: a trailing slash names no resource. /applications/ once
    // reached the one-application route with an empty id (400), /applications/a1/ nothing (404).
    const cases: [string, string][] = [
      ['GET', '/applications/'],
      ['POST', '/applications/'],
      ['GET', '/applications/billing-web/'],
      ['PUT', '/applications/billing-web/'],
      ['GET', '/applications/billing-web/users/'],
      ['GET', '/applications/billing-web/users/google_oauth2/'],
      ['GET', '/applications/billing-web/users/google_oauth2/ada/'],
      ['GET', '/api-keys/'],
    ];
    for (const [method, path] of cases) {
      it(`answers 404 for ${method} ${path}, naming the path without the slash`, async () => {
        for (const key of [null, ctx.adminKey]) {
          const response = await call(ctx, method, path, {
            key,
            ...(method === 'GET' ? {} : { body: applicationBody({ client_id: 'slash' }) }),
          });
          const problem = problemOf(response, 404);
          assert.equal(problem.type, 'https://tessera.dev/problems/not-found');
          assert.ok(
            problem.detail.endsWith(`no trailing slash (use /iam/api/v1${path.slice(0, -1)}).`),
            problem.detail,
          );
        }
      });
    }

    it('changes nothing: a POST to /applications/ creates no application', async () => {
      await call(ctx, 'POST', '/applications/', { body: applicationBody({ client_id: 'slash' }) });
      assert.equal((await call(ctx, 'GET', '/applications/slash')).statusCode, 404);
      assert.equal((await call(ctx, 'GET', '/applications/billing-web')).statusCode, 200);
    });
  });

  describe('methods not allowed on a known path', () => {
    const cases: [string, string, string][] = [
      ['DELETE', '/applications', 'GET, HEAD, POST'],
      ['PUT', '/applications', 'GET, HEAD, POST'],
      ['POST', '/applications/billing-web', 'DELETE, GET, HEAD, PATCH, PUT'],
      ['DELETE', '/applications/billing-web/users', 'GET, HEAD, POST'],
      [
        'POST',
        '/applications/billing-web/users/google_oauth2/x%2Fy',
        'DELETE, GET, HEAD, PATCH, PUT',
      ],
      ['PATCH', '/api-keys/some-id', 'DELETE, GET, HEAD'],
      ['OPTIONS', '/api-keys', 'GET, HEAD, POST'],
    ];
    for (const [method, path, allow] of cases) {
      it(`answers 405 with Allow: ${allow} for ${method} ${path}`, async () => {
        const response = await call(ctx, method, path);
        problemOf(response, 405);
        assert.equal(response.headers.allow, allow);
      });
    }

    it('answers 405 on the operational endpoints too', async () => {
      const response = await call(ctx, 'POST', '//healthz', { key: null });
      problemOf(response, 405);
      assert.equal(response.headers.allow, 'GET, HEAD');
    });
  });

  describe('request bodies', () => {
    it("answers 413 for a body over the route's limit, changing nothing", async () => {
      // An application takes 128 KiB (its token validation and authorization, 32 KiB each).
      const padding = 'x'.repeat(128 * 1024);
      const response = await call(ctx, 'POST', '/applications', {
        rawBody: JSON.stringify(applicationBody({ client_id: 'too-large', description: padding })),
      });
      const problem = problemOf(response, 413);
      assert.match(problem.detail, /128 KiB/);
      assert.equal((await call(ctx, 'GET', '/applications/too-large')).statusCode, 404);
    });

    it('reads an application body of exactly 128 KiB (and judges it on its content)', async () => {
      const body = JSON.stringify(applicationBody({ client_id: 'exact', description: '' }));
      const padded = body.slice(0, -1) + ' '.repeat(128 * 1024 - Buffer.byteLength(body)) + '}';
      assert.equal(Buffer.byteLength(padded), 128 * 1024);
      const response = await call(ctx, 'POST', '/applications', { rawBody: padded });
      assert.equal(response.statusCode, 201);
    });

    it('takes a user with every list at its longest, and refuses one over 64 KiB', async () => {
      const longest = userBody({
        identifier: 'longest',
        name: 'N'.repeat(200),
        roles: Array.from(
          { length: 100 },
          (_, n) => `${String(n).padStart(3, '0')}${'r'.repeat(61)}`,
        ),
        scopes: Array.from(
          { length: 100 },
          (_, n) => `org:${String(n).padStart(3, '0')}${'s'.repeat(121)}`,
        ),
      });
      const created = await call(ctx, 'POST', '/applications/billing-web/users', {
        body: longest,
      });
      assert.equal(created.statusCode, 201, created.body);
      const padded = JSON.stringify({ ...longest, identifier: 'padded' }).slice(0, -1);
      const tooLarge = `${padded}${' '.repeat(64 * 1024 - Buffer.byteLength(padded))}}`;
      const response = await call(ctx, 'POST', '/applications/billing-web/users', {
        rawBody: tooLarge,
      });
      assert.match(problemOf(response, 413).detail, /64 KiB/);
      const missing = await call(
        ctx,
        'GET',
        '/applications/billing-web/users/google_oauth2/padded',
      );
      assert.equal(missing.statusCode, 404);
    });

    const unsupported = [
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
      'application/jsonp',
      'application/json-patch+json',
      'application/json; charset=latin1',
    ];
    for (const contentType of unsupported) {
      it(`answers 415 for Content-Type: ${contentType}`, async () => {
        const response = await call(ctx, 'POST', '/applications', {
          body: applicationBody({ client_id: 'never' }),
          contentType,
        });
        problemOf(response, 415);
        assert.equal((await call(ctx, 'GET', '/applications/never')).statusCode, 404);
      });
    }

    it('answers 415 for merge-patch on POST and PUT, and takes it on PATCH', async () => {
      const contentType = 'application/merge-patch+json';
      problemOf(
        await call(ctx, 'POST', '/applications', { body: applicationBody(), contentType }),
        415,
      );
      problemOf(
        await call(ctx, 'PUT', '/applications/billing-web', {
          body: applicationBody(),
          contentType,
        }),
        415,
      );
      const patched = await call(ctx, 'PATCH', '/applications/billing-web', {
        body: { description: 'patched' },
        contentType,
      });
      assert.equal(patched.statusCode, 200);
    });

    for (const contentType of [
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json;charset="UTF-8"',
    ]) {
      it(`accepts Content-Type: ${contentType}`, async () => {
        const clientId = `ct-${contentType.length}-${contentType.charCodeAt(0)}`;
        const response = await call(ctx, 'POST', '/applications', {
          body: applicationBody({ client_id: clientId }),
          contentType,
        });
        assert.equal(response.statusCode, 201);
      });
    }

    const malformed: [string, string][] = [
      ['an empty body', ''],
      ['truncated JSON', '{"client_id":'],
      ['trailing garbage', '{"client_id":"x"} extra'],
      ['a bare string', '"x"'],
      ['single quotes', "{'client_id':'x'}"],
      ['NaN', '{"jwt_expiration_in_minutes": NaN}'],
    ];
    for (const [name, rawBody] of malformed) {
      it(`answers 400 for ${name}`, async () => {
        const response = await call(ctx, 'POST', '/applications', { rawBody });
        problemOf(response, 400);
      });
    }

    it('answers 400, without crashing, for JSON nested thousands deep', async () => {
      for (const rawBody of [
        '['.repeat(50_000) + ']'.repeat(50_000),
        '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000),
      ]) {
        const problem = problemOf(await call(ctx, 'POST', '/applications', { rawBody }), 400);
        assert.match(problem.detail, /nested deeper/);
      }
      assert.equal((await call(ctx, 'GET', '//healthz', { key: null })).statusCode, 200);
    });

    it('counts nesting outside strings only', async () => {
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: 'brackets', description: '[[[[{{{{'.repeat(100) }),
      });
      assert.equal(response.statusCode, 201);
    });

    it('refuses prototype-poisoning members with 400', async () => {
      for (const rawBody of [
        '{"client_id":"p1","display_name":"P","description":"","external_token_validation":{"__proto__":{"polluted":true}}}',
        '{"client_id":"p2","display_name":"P","description":"","external_token_validation":{"constructor":{"prototype":{"polluted":true}}}}',
      ]) {
        problemOf(await call(ctx, 'POST', '/applications', { rawBody }), 400);
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    it('refuses numbers JavaScript cannot represent instead of storing null', async () => {
      for (const number of ['1e400', '-1e400', '9'.repeat(400), `1${'0'.repeat(300)}e9`]) {
        const response = await call(ctx, 'POST', '/applications', {
          rawBody: `{"client_id":"inf","display_name":"I","description":"","external_token_validation":{"e":${number}}}`,
        });
        problemOf(response, 400);
      }
      const lookalike = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: 'e400', description: 'Invoice 1e400 and 1E999' }),
      });
      assert.equal(lookalike.statusCode, 201, 'inside a string, such text is just text');
    });

    it('refuses a body that is not valid UTF-8', async () => {
      const body = Buffer.concat([
        Buffer.from('{"client_id":"utf","display_name":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('","description":""}'),
      ]);
      const problem = problemOf(await call(ctx, 'POST', '/applications', { rawBody: body }), 400);
      assert.match(problem.detail, /UTF-8/);
    });

    it('ignores a stray Content-Encoding on a request without a body', async () => {
      const response = await call(ctx, 'GET', '/applications/billing-web', {
        headers: { 'content-encoding': 'gzip' },
      });
      assert.equal(response.statusCode, 200);
    });

    it('refuses compressed bodies with 415 and accepts Content-Encoding: identity', async () => {
      const compressed = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: 'gz' }),
        headers: { 'content-encoding': 'gzip' },
      });
      problemOf(compressed, 415);
      const identity = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: 'identity' }),
        headers: { 'content-encoding': 'identity' },
      });
      assert.equal(identity.statusCode, 201);
    });

    it('reports at most 100 invalid members', async () => {
      const body: Record<string, unknown> = applicationBody({ client_id: 'many' });
      for (let n = 0; n < 500; n++) body[`unknown_${n}`] = n;
      const problem = problemOf(await call(ctx, 'POST', '/applications', { body }), 400);
      assert.equal(problem.errors?.length, 100);
    });

    it('reports only the first error of a body of more than 1,000 values', async () => {
      // 85,000 empty scopes: listing every error cost 0.4–1.2 s of CPU for one request. A user's
      // body is now refused over 64 KiB; 15,000 (45 KiB) are still far more than 1,000.
      const body = userBody({ scopes: Array.from({ length: 15_000 }, () => '') });
      const problem = problemOf(
        await call(ctx, 'POST', '/applications/billing-web/users', { body }),
        400,
      );
      assert.deepEqual(problem.errors, [
        { pointer: '/scopes', detail: 'must have at most 100 items' },
      ]);
      const five: Record<string, unknown> = applicationBody({ client_id: 'five-thousand' });
      for (let n = 0; n < 5000; n++) five[`unknown_${n}`] = n;
      const first = problemOf(await call(ctx, 'POST', '/applications', { body: five }), 400);
      assert.deepEqual(first.errors, [{ pointer: '/unknown_0', detail: 'is not a known field' }]);
    });

    it('answers 400 for a POST without a body', async () => {
      const problem = problemOf(await call(ctx, 'POST', '/applications', {}), 400);
      assert.equal(problem.errors?.[0]?.pointer, '');
    });
  });

  describe('query strings', () => {
    for (const limit of ['0x10', '1e2', '+5', '%205', '010', '10.0', '']) {
      it(`refuses limit=${limit}`, async () => {
        const problem = problemOf(await call(ctx, 'GET', `/applications?limit=${limit}`), 400);
        assert.deepEqual(problem.errors, [{ parameter: 'limit', detail: 'must be an integer' }]);
      });
    }

    for (const value of ['1', 'TRUE', 'yes']) {
      it(`refuses include_total=${value}`, async () => {
        const problem = problemOf(
          await call(ctx, 'GET', `/applications?include_total=${value}`),
          400,
        );
        assert.equal(problem.errors?.[0]?.parameter, 'include_total');
      });
    }

    it('refuses a parameter given twice, saying so', async () => {
      const problem = problemOf(await call(ctx, 'GET', '/applications?limit=10&limit=20'), 400);
      assert.deepEqual(problem.errors, [{ parameter: 'limit', detail: 'must be given only once' }]);
    });

    it('explains a bare + in the email filter', async () => {
      const problem = problemOf(
        await call(ctx, 'GET', '/applications/billing-web/users?email=a+b@example.com'),
        400,
      );
      assert.match(problem.errors?.[0]?.detail ?? '', /%2B/);
      const encoded = await call(
        ctx,
        'GET',
        '/applications/billing-web/users?email=a%2Bb@example.com',
      );
      assert.equal(encoded.statusCode, 200);
    });
  });

  describe('URLs', () => {
    it('answers 400 for invalid percent-encoding', async () => {
      const response = await call(ctx, 'GET', '/applications/billing-web/users/google_oauth2/%FF');
      problemOf(response, 400);
    });

    it('answers HEAD like GET, without a body', async () => {
      const response = await ctx.app.inject({
        method: 'HEAD',
        url: '/iam/api/v1/applications/billing-web',
        headers: { authorization: `apikey ${ctx.adminKey}` },
      });
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, '');
      assert.match(String(response.headers.etag), /^"[^"]+"$/);
    });
  });

  it('answers 404, not 405, for a missing file under /docs', async () => {
    const response = await call(ctx, 'GET', '//docs/static/no-such-file.js.map', { key: null });
    problemOf(response, 404);
  });

  describe('representations', () => {
    it('tells browsers not to sniff content types', async () => {
      const response = await call(ctx, 'GET', '/applications/billing-web');
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
    });

    it('sends JSON as application/json; charset=utf-8 and problems as application/problem+json', async () => {
      const ok = await call(ctx, 'GET', '/applications/billing-web');
      assert.equal(ok.headers['content-type'], 'application/json; charset=utf-8');
      const missing = await call(ctx, 'GET', '/applications/missing');
      assert.equal(missing.headers['content-type'], 'application/problem+json');
    });
  });

  describe('logs', () => {
    it('never contain a key, even one pasted into a query string', async () => {
      const key = await ctx.createKey({ roles: ['applications:read'] });
      await call(ctx, 'GET', `/applications?apikey=${key}`, { key });
      await call(ctx, 'GET', `/nope?key=${key}`, { key });
      await call(ctx, 'GET', '/applications', { key: `${key}x` });
      const text = ctx.logs.map((line) => JSON.stringify(line)).join('\n');
      assert.ok(ctx.logs.length > 0, 'debug logging was on');
      assert.ok(!text.includes(key), 'no log line holds the key');
      assert.ok(!text.includes(ctx.adminKey), 'no log line holds the admin key');
    });
  });

  describe('request ids', () => {
    it('echoes a well-formed X-Request-Id and generates one otherwise', async () => {
      const given = await call(ctx, 'GET', '/applications', {
        headers: { 'x-request-id': 'trace-42.a:b' },
      });
      assert.equal(given.headers['x-request-id'], 'trace-42.a:b');
      const hostile = await call(ctx, 'GET', '/applications', {
        headers: { 'x-request-id': 'x'.repeat(200) },
      });
      assert.match(String(hostile.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      const none = await call(ctx, 'GET', '/applications');
      assert.match(String(none.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    });
  });
});

describe('when the database cannot take writes', () => {
  let directory: string;
  let ctx: TestContext;
  let blocker: Database.Database;

  before(async () => {
    directory = mkdtempSync(join(tmpdir(), 'tessera-busy-'));
    const path = join(directory, 'tessera.db');
    ctx = await buildTestApp({ store: openSqliteStore({ path, busyTimeoutMs: 50 }) });
    await createApplication(ctx);
    // Another process holding the write lock: the situation an operator creates with a
    // long-running `tessera` command or a backup tool writing to the same file.
    blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');
  });

  after(async () => {
    if (blocker.inTransaction) blocker.exec('ROLLBACK');
    blocker.close();
    await ctx.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('answers writes with 503 and Retry-After, changing nothing', async () => {
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: 'later' }),
    });
    const problem = problemOf(response, 503);
    assert.equal(response.headers['retry-after'], '2');
    assert.doesNotMatch(problem.detail, /SQLITE|sqlite|\.db/);
  });

  it('keeps serving reads', async () => {
    assert.equal((await call(ctx, 'GET', '/applications/billing-web')).statusCode, 200);
    assert.equal((await call(ctx, 'GET', '/applications/later')).statusCode, 404);
  });

  it('accepts writes again once the lock is gone, without a restart', async () => {
    blocker.exec('ROLLBACK');
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: 'later' }),
    });
    assert.equal(response.statusCode, 201);
  });
});

describe('errors before a request is parsed (real sockets)', () => {
  let ctx: TestContext;
  let port = 0;
  before(async () => {
    ctx = await buildTestApp();
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    port = (ctx.app.server.address() as { port: number }).port;
  });
  after(() => ctx.close());

  function rawExchange(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  /** The first answer on a connection, without waiting for the connection to close. */
  function firstAnswer(
    request: string,
  ): Promise<{ head: string; body: string; closed: Promise<void> }> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      const closed = new Promise<void>((done) => socket.on('close', () => done()));
      let answer = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        answer = Buffer.concat([answer, chunk]);
        const end = answer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = answer.subarray(0, end).toString();
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (answer.length - end - 4 < length) return;
        resolve({ head, body: answer.subarray(end + 4, end + 4 + length).toString(), closed });
      });
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), 5_000).unref();
    });
  }

  describe("bodies over their route's limit", () => {
    const usersPath = '/iam/api/v1/applications/billing-web/users';
    before(() => createApplication(ctx));

    it('refuses a Content-Length over the limit before the body arrives, and closes', async () => {
      const { head, body, closed } = await firstAnswer(
        `POST ${usersPath} HTTP/1.1\r\nHost: x\r\nAuthorization: apikey ${ctx.adminKey}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{"identifier":',
      );
      assert.match(head, /^HTTP\/1\.1 413 /);
      assert.match(head, /\r\nconnection: close\r\n/i);
      const problem = JSON.parse(body) as { type: string; detail: string };
      assert.equal(problem.type, 'https://tessera.dev/problems/payload-too-large');
      assert.match(problem.detail, /64 KiB/);
      await closed;
    });

    it('stops reading a chunked body once it passes the limit, creating nothing', async () => {
      const start = JSON.stringify(userBody({ identifier: 'chunked' })).slice(0, -1);
      const padding = `,"note":"${'x'.repeat(70 * 1024)}"}`;
      const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
      // The body never ends (no last chunk): only the limit can answer it.
      const { head, closed } = await firstAnswer(
        `POST ${usersPath} HTTP/1.1\r\nHost: x\r\nAuthorization: apikey ${ctx.adminKey}\r\n` +
          'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
          chunk(start) +
          chunk(padding),
      );
      assert.match(head, /^HTTP\/1\.1 413 /);
      await closed;
      const users = await call(ctx, 'GET', '/applications/billing-web/users');
      assert.deepEqual(
        (users.json() as { items: { identifier: string }[] }).items.map((user) => user.identifier),
        [],
      );
    });

    it('answers a request no route serves before its body arrives, and closes', async () => {
      const { head, closed } = await firstAnswer(
        'POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          'Content-Length: 10000000\r\n\r\n[',
      );
      assert.match(head, /^HTTP\/1\.1 404 /);
      assert.match(head, /\r\nconnection: close\r\n/i);
      await closed;
    });

    it('answers a large body without a key before it arrives, and closes', async () => {
      const { head, closed } = await firstAnswer(
        `POST ${usersPath} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          'Content-Length: 10000000\r\n\r\n{',
      );
      assert.match(head, /^HTTP\/1\.1 401 /);
      assert.match(head, /\r\nconnection: close\r\n/i);
      await closed;
    });

    it('keeps the connection of a small refused body, for the next request', async () => {
      const body = JSON.stringify(userBody({ identifier: 'no-key' }));
      const { head } = await firstAnswer(
        `POST ${usersPath} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      assert.match(head, /^HTTP\/1\.1 401 /);
      assert.doesNotMatch(head, /\r\nconnection: close\r\n/i);
    });
  });

  it('answers headers over 16 KiB with a 431 problem', async () => {
    const answer = await rawExchange(
      `GET /iam/api/v1/applications HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 431 /);
    assert.match(answer, /\r\nContent-Type: application\/problem\+json\r\n/);
    const body = JSON.parse(answer.split('\r\n\r\n')[1]!);
    assert.equal(body.status, 431);
    assert.equal(body.instance, '/iam/api/v1/applications');
  });

  it('answers an HTTP/1.1 request without Host with a 400 problem', async () => {
    const answer = await rawExchange('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /\r\ncontent-type: application\/problem\+json\r\n/i);
    assert.match(answer, /Host header/);
  });

  it('answers CONNECT with a 405 problem instead of dropping the connection', async () => {
    const answer = await rawExchange(
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    );
    assert.match(answer, /^HTTP\/1\.1 405 /);
    assert.equal(JSON.parse(answer.split('\r\n\r\n')[1]!).status, 405);
  });

  it('answers a bare HTTP/0.9 request line with 505, not 200', async () => {
    const answer = await rawExchange('GET /healthz\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 505 /);
    assert.match(answer, /HTTP\/0\.9 is not supported/);
  });

  it('answers unparseable HTTP with a 400 problem', async () => {
    const answer = await rawExchange('NOT HTTP AT ALL\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.equal(
      JSON.parse(answer.split('\r\n\r\n')[1]!).type,
      'https://tessera.dev/problems/malformed-request',
    );
  });
});
