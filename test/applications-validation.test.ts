// tessera-test: both-stores
// The boundary tables of the applications resource: the field rules of docs/api.md through POST,
// PUT and PATCH; media types; If-Match conditions; list query parameters and cursors.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  applicationBody,
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  type TestContext,
} from './helpers.js';

const ctx = useTestApp();

let counter = 0;
function nextClientId(): string {
  counter += 1;
  return `case-${counter}`;
}

/** An object whose JSON.stringify is exactly `bytes` UTF-8 bytes, padded with `filler`. */
function objectOfBytes(bytes: number, filler = 'a'): Record<string, unknown> {
  const fillerBytes = Buffer.byteLength(filler);
  const room = bytes - Buffer.byteLength('{"k":""}');
  const value = filler.repeat(Math.floor(room / fillerBytes)) + 'a'.repeat(room % fillerBytes);
  const object = { k: value };
  assert.equal(Buffer.byteLength(JSON.stringify(object)), bytes);
  return object;
}

/** Asserts a 400 whose errors all point at `pointer` (and nothing else). */
function assertRefusedAt(response: LightMyRequestResponse, pointer: string): void {
  const problem = problemOf(response, 400);
  assert.ok(problem.errors !== undefined && problem.errors.length > 0, response.body);
  for (const error of problem.errors) {
    assert.equal(error.pointer, pointer, response.body);
    assert.equal(error.parameter, undefined);
    assert.equal(typeof error.detail, 'string');
    assert.notEqual(error.detail, '');
  }
}

async function getApplication(clientId: string): Promise<LightMyRequestResponse> {
  return call(ctx, 'GET', `/applications/${clientId}`);
}

/** Creates an application and returns its client_id, ETag and body as a GET shows them. */
async function created(overrides: Record<string, unknown> = {}) {
  const clientId = nextClientId();
  await createApplication(ctx, { client_id: clientId, ...overrides });
  const response = await getApplication(clientId);
  return { clientId, etag: String(response.headers.etag), body: response.json() };
}

/** Asserts the application is exactly as it was (body and ETag). */
async function assertUnchanged(clientId: string, before: { etag: string; body: unknown }) {
  const now = await getApplication(clientId);
  assert.equal(now.statusCode, 200, now.body);
  assert.deepEqual(now.json(), before.body);
  assert.equal(now.headers.etag, before.etag);
}

const longText = (length: number) => 'x'.repeat(length);

interface FieldRules {
  /** [case, value sent, value stored (default: as sent)] */
  accepts: [string, unknown, unknown?][];
  refuses: [string, unknown][];
}

// Every case applies alike to POST, PUT and PATCH (null is treated separately).
const rules: Record<string, FieldRules> = {
  display_name: {
    accepts: [
      ['1 character', 'B'],
      ['200 characters', longText(200)],
      [
        '200 characters with surrounding spaces, stored trimmed',
        ` ${longText(200)}  `,
        longText(200),
      ],
      ['no-break and ideographic spaces trimmed', '\u00a0Billing\u3000', 'Billing'],
      ['inner spaces kept', ' Billing  Web ', 'Billing  Web'],
      ['200 astral characters', '😀'.repeat(200)],
      ['non-ASCII text', 'Facturação 請求'],
    ],
    refuses: [
      ['empty', ''],
      ['spaces only', '   '],
      ['201 characters', longText(201)],
      ['201 characters with surrounding spaces', ` ${longText(201)} `],
      ['201 astral characters', '😀'.repeat(201)],
      ['a tab', 'Bill\ting'],
      ['a newline', 'Bill\ning'],
      ['a trailing newline (control characters are not trimmed away)', 'Billing\n'],
      ['NUL', 'Bill\u0000ing'],
      ['DEL', 'Bill\u007fing'],
      ['NEL (U+0085)', 'Bill\u0085ing'],
      ['a lone surrogate', 'Bill\ud800ing'],
      ['a number', 42],
      ['an array', ['Billing']],
    ],
  },
  description: {
    accepts: [
      ['empty', ''],
      ['2000 characters', longText(2000)],
      ['newlines and tabs', 'line 1\n\tline 2\n'],
      ['surrounding spaces, stored as given', '  spaced  '],
    ],
    refuses: [
      ['2001 characters', longText(2001)],
      ['a carriage return', 'line 1\r\nline 2'],
      ['NUL', 'a\u0000b'],
      ['DEL', 'a\u007fb'],
      ['a vertical tab', 'a\u000bb'],
      ['NEL (U+0085)', 'a\u0085b'],
      ['a lone surrogate', 'a\udc00b'],
      ['a boolean', true],
    ],
  },
  mode: {
    accepts: [
      ['internal', 'internal'],
      ['external', 'external'],
    ],
    refuses: [
      ['External (case matters)', 'External'],
      ['an unknown mode', 'hybrid'],
      ['empty', ''],
      ['a number', 1],
    ],
  },
  jwt_expiration_in_minutes: {
    accepts: [
      ['1', 1],
      ['43200', 43200],
    ],
    refuses: [
      ['0', 0],
      ['-1', -1],
      ['43201', 43201],
      ['1.5', 1.5],
      ['"60"', '60'],
      ['true', true],
    ],
  },
  external_token_validation: {
    accepts: [
      ['an empty object', {}],
      ['exactly 32768 bytes', objectOfBytes(32768)],
      ['exactly 32768 bytes, mostly 2-byte characters', objectOfBytes(32768, 'é')],
    ],
    refuses: [
      ['32769 bytes', objectOfBytes(32769)],
      ['32769 bytes, mostly 2-byte characters', objectOfBytes(32769, 'é')],
      ['an array', [{ issuer: 'x' }]],
      ['a string', '{"issuer":"x"}'],
      ['a number', 1],
      ['a boolean', false],
    ],
  },
};

const fieldCases = Object.entries(rules).flatMap(([field, { accepts, refuses }]) => [
  ...accepts.map(([name, value, stored = value]) => ({ field, name, value, stored })),
  ...refuses.map(([name, value]) => ({ field, name, value, stored: undefined })),
]);

describe('Application field rules', () => {
  for (const { name, field, value, stored } of fieldCases) {
    const verdict = `${stored === undefined ? 'refuses' : 'accepts'} ${field}: ${name}`;

    it(`POST ${verdict}`, async () => {
      const clientId = nextClientId();
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: clientId, [field]: value }),
      });
      if (stored === undefined) {
        assertRefusedAt(response, `/${field}`);
        assert.equal((await getApplication(clientId)).statusCode, 404);
      } else {
        assert.equal(response.statusCode, 201, response.body);
        assert.deepEqual(response.json()[field], stored);
        assert.deepEqual((await getApplication(clientId)).json()[field], stored);
      }
    });

    for (const method of ['PUT', 'PATCH'] as const) {
      it(`${method} ${verdict}`, async () => {
        const clientId = nextClientId();
        await createApplication(ctx, { client_id: clientId, mode: 'external' });
        const before = await getApplication(clientId);
        const { client_id: _clientId, ...replacement } = applicationBody({ [field]: value });
        const response = await call(ctx, method, `/applications/${clientId}`, {
          body: method === 'PUT' ? replacement : { [field]: value },
        });
        const afterwards = await getApplication(clientId);
        if (stored === undefined) {
          assertRefusedAt(response, `/${field}`);
          assert.deepEqual(afterwards.json(), before.json());
          assert.equal(afterwards.headers.etag, before.headers.etag);
        } else {
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json()[field], stored);
          assert.deepEqual(afterwards.json()[field], stored);
        }
      });
    }
  }

  it('POST refuses null for members with defaults (null is only a reset in PATCH)', async () => {
    for (const field of ['mode', 'jwt_expiration_in_minutes']) {
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: nextClientId(), [field]: null }),
      });
      assertRefusedAt(response, `/${field}`);
    }
  });

  it('POST accepts external_token_validation null and stores null', async () => {
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: nextClientId(), external_token_validation: null }),
    });
    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.json().external_token_validation, null);
  });

  it('stores and returns external_token_validation exactly: nesting, types, unicode, key order', async () => {
    const given = {
      zeta: { issuer: 'https://accounts.example.com', audiences: ['a', 'b'], leeway: 1.5 },
      alpha: { nested: { deeper: { flags: [true, false, null], empty: {}, none: null } } },
      'ключ 😀': 'ünïcødé ✓ 請求',
      escapes: 'quote " backslash \\ slash / newline \n',
      numbers: [0, -1, 2.25, 1e21, -0.5],
      middle: 'm',
    };
    const clientId = nextClientId();
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({ client_id: clientId, external_token_validation: given }),
    });
    assert.equal(response.statusCode, 201, response.body);
    const expectedText = JSON.stringify(given);
    assert.equal(JSON.stringify(response.json().external_token_validation), expectedText);
    const read = await getApplication(clientId);
    assert.equal(JSON.stringify(read.json().external_token_validation), expectedText);
    assert.ok(read.body.includes(`"external_token_validation":${expectedText}`), read.body);
  });
});

describe('Application client_id rules (POST /applications)', () => {
  const acceptedIds: [string, string][] = [
    ['1 character', 'a'],
    ['128 characters', 'a'.repeat(128)],
    ['digits only', '0123456789'],
    ['upper and lower case', 'AbCxYz'],
    ['a dot', 'billing.web'],
    ['an underscore', 'billing_web'],
    ['a tilde', 'billing~web'],
    ['a hyphen', 'billing-web'],
    ['only punctuation', '-._~'],
    ['three dots', '...'],
    ['a leading dot', '.a'],
    ['a lone hyphen', '-'],
    ['a lone tilde', '~'],
  ];
  for (const [name, clientId] of acceptedIds) {
    it(`accepts a client_id of ${name} and serves it at its path`, async () => {
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: clientId }),
      });
      assert.equal(response.statusCode, 201, response.body);
      assert.equal(response.json().client_id, clientId);
      assert.equal(response.headers.location, `/iam/api/v1/applications/${clientId}`);
      const read = await getApplication(clientId);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().client_id, clientId);
    });
  }

  const refusedIds: [string, unknown][] = [
    ['an empty client_id', ''],
    ['a 129-character client_id', 'a'.repeat(129)],
    ['"."', '.'],
    ['".."', '..'],
    ['a space', 'billing web'],
    ['a slash', 'billing/web'],
    ['a percent sign', 'billing%20web'],
    ['a plus sign', 'billing+web'],
    ['a non-ASCII letter', 'facturé'],
    ['a colon', 'billing:web'],
    ['a trailing newline', 'billing\n'],
    ['a number', 42],
    ['null', null],
  ];
  for (const [name, clientId] of refusedIds) {
    it(`refuses ${name} with pointer /client_id`, async () => {
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: clientId }),
      });
      assertRefusedAt(response, '/client_id');
    });
  }

  it('refuses an invalid client_id in the path with parameter client_id', async () => {
    for (const path of ['a'.repeat(129), 'billing+web', 'factur%C3%A9']) {
      const problem = problemOf(await call(ctx, 'GET', `/applications/${path}`), 400);
      assert.deepEqual(
        problem.errors?.map((error) => error.parameter),
        ['client_id'],
      );
    }
  });
});

describe('Application request bodies', () => {
  it('requires client_id, display_name and description on POST', async () => {
    for (const field of ['client_id', 'display_name', 'description']) {
      const body = applicationBody({ client_id: nextClientId() });
      delete body[field];
      assertRefusedAt(await call(ctx, 'POST', '/applications', { body }), `/${field}`);
    }
  });

  it('requires display_name and description on PUT', async () => {
    const clientId = nextClientId();
    await createApplication(ctx, { client_id: clientId });
    for (const field of ['display_name', 'description']) {
      const body = applicationBody();
      delete body[field];
      assertRefusedAt(await call(ctx, 'PUT', `/applications/${clientId}`, { body }), `/${field}`);
    }
  });

  for (const method of ['POST', 'PUT', 'PATCH'] as const) {
    it(`${method} refuses an unknown member with a pointer to it`, async () => {
      const clientId = nextClientId();
      if (method !== 'POST') await createApplication(ctx, { client_id: clientId });
      const path = method === 'POST' ? '/applications' : `/applications/${clientId}`;
      for (const [member, pointer] of [
        ['clientId', '/clientId'],
        ['jwt_expiration', '/jwt_expiration'],
        ['a/b~c', '/a~1b~0c'],
      ] as const) {
        const body = method === 'PATCH' ? { [member]: 1 } : applicationBody({ [member]: 1 });
        if (method === 'PUT') delete body.client_id;
        if (method === 'POST') body.client_id = clientId;
        assertRefusedAt(await call(ctx, method, path, { body }), pointer);
      }
      if (method === 'POST') assert.equal((await getApplication(clientId)).statusCode, 404);
    });
  }

  it('reports every invalid member at once, each with its own pointer', async () => {
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({
        client_id: nextClientId(),
        display_name: '  ',
        mode: 'hybrid',
        jwt_expiration_in_minutes: '60',
        extra: true,
      }),
    });
    const problem = problemOf(response, 400);
    assert.deepEqual([...new Set(problem.errors?.map((error) => error.pointer))].sort(), [
      '/display_name',
      '/extra',
      '/jwt_expiration_in_minutes',
      '/mode',
    ]);
    assert.equal(problem.instance, '/iam/api/v1/applications');
  });

  it('refuses a body that is not a JSON object', async () => {
    for (const rawBody of ['[]', '"billing"', '42', 'null']) {
      problemOf(await call(ctx, 'POST', '/applications', { rawBody }), 400);
    }
  });

  it('refuses malformed JSON with 400', async () => {
    const response = await call(ctx, 'POST', '/applications', {
      rawBody: '{"client_id": "x",',
    });
    problemOf(response, 400);
  });

  it('accepts and ignores created_at and updated_at in a POST body', async () => {
    const clientId = nextClientId();
    const response = await call(ctx, 'POST', '/applications', {
      body: applicationBody({
        client_id: clientId,
        created_at: '2000-01-01T00:00:00.000Z',
        updated_at: '2000-01-01T00:00:00.000Z',
      }),
    });
    assert.equal(response.statusCode, 201, response.body);
    const expected = new Date(ctx.clock.now()).toISOString();
    assert.equal(response.json().created_at, expected);
    assert.equal(response.json().updated_at, expected);
  });
});

describe('Application PATCH size rule', () => {
  it('refuses a merge whose result exceeds 32 KiB, changing nothing', async () => {
    const { clientId, etag, body } = await created({
      external_token_validation: { a: 'x'.repeat(32_000) },
    });
    const response = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { external_token_validation: { b: 'y'.repeat(1_000) } },
    });
    assertRefusedAt(response, '/external_token_validation');
    await assertUnchanged(clientId, { etag, body });
  });
});

describe('Application request media types', () => {
  const refusedTypes: [method: 'POST' | 'PUT' | 'PATCH', contentType: string | null][] = [
    ['POST', 'application/merge-patch+json'],
    ['POST', 'text/plain'],
    ['POST', 'application/json; charset=iso-8859-1'],
    ['POST', null],
    ['PUT', 'application/merge-patch+json'],
    ['PUT', 'application/x-www-form-urlencoded'],
    ['PATCH', 'text/plain'],
    ['PATCH', 'application/merge-patch+json; charset=latin1'],
  ];
  for (const [method, contentType] of refusedTypes) {
    it(`${method} refuses a body sent as ${contentType ?? '(no Content-Type)'} with 415`, async () => {
      if (method === 'POST') {
        const clientId = nextClientId();
        const body = applicationBody({ client_id: clientId });
        problemOf(await call(ctx, 'POST', '/applications', { body, contentType }), 415);
        assert.equal((await getApplication(clientId)).statusCode, 404);
        return;
      }
      const { clientId, etag, body } = await created();
      const response = await call(ctx, method, `/applications/${clientId}`, {
        body: { display_name: 'Changed', description: 'Changed' },
        contentType,
      });
      problemOf(response, 415);
      await assertUnchanged(clientId, { etag, body });
    });
  }

  for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
    it(`POST accepts ${contentType}`, async () => {
      const response = await call(ctx, 'POST', '/applications', {
        body: applicationBody({ client_id: nextClientId() }),
        contentType,
      });
      assert.equal(response.statusCode, 201, response.body);
    });
  }
});

describe('If-Match on PUT, PATCH and DELETE /applications/:client_id', () => {
  const requests = {
    PUT: { body: { display_name: 'Conditional', description: 'd' } },
    PATCH: { body: { display_name: 'Conditional' } },
    DELETE: {},
  } as const;
  const conditions: [string, (current: string, stale: string) => string, boolean][] = [
    ['the current ETag', (current) => current, true],
    ['*', () => '*', true],
    ['a list holding the current ETag', (current, stale) => `${stale}, ${current}`, true],
    ['a stale ETag', (_current, stale) => stale, false],
    ['the current ETag, weak (strong comparison)', (current) => `W/${current}`, false],
    ['the current ETag without quotes (malformed)', (current) => current.slice(1, -1), false],
    ['garbage', () => 'not an etag', false],
  ];

  for (const [method, options] of Object.entries(requests)) {
    for (const [name, header, matches] of conditions) {
      it(`${method} with If-Match ${name} → ${matches ? 'applied' : '412, nothing changed'}`, async () => {
        const { clientId, etag: stale } = await created();
        await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { description: 'v2' } });
        const current = await getApplication(clientId);
        const etag = String(current.headers.etag);
        assert.notEqual(etag, stale);
        const response = await call(ctx, method, `/applications/${clientId}`, {
          ...options,
          headers: { 'if-match': header(etag, stale) },
        });
        if (!matches) {
          problemOf(response, 412);
          await assertUnchanged(clientId, { etag, body: current.json() });
        } else if (method === 'DELETE') {
          assert.equal(response.statusCode, 204, response.body);
          assert.equal((await getApplication(clientId)).statusCode, 404);
        } else {
          assert.equal(response.statusCode, 200, response.body);
          assert.equal(response.json().display_name, 'Conditional');
        }
      });
    }
  }

  it('answers 404, not 412, for a conditional request on a missing application', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
      const response = await call(ctx, method, `/applications/${nextClientId()}`, {
        ...requests[method],
        headers: { 'if-match': '"whatever"' },
      });
      problemOf(response, 404);
    }
  });
});

describe('Application query parameters', () => {
  /** Asserts a 400 whose errors all name the query parameter `parameter`. */
  function assertParameterRefused(response: LightMyRequestResponse, parameter: string): void {
    const problem = problemOf(response, 400);
    assert.ok(problem.errors !== undefined && problem.errors.length > 0, response.body);
    for (const error of problem.errors) {
      assert.equal(error.parameter, parameter, response.body);
      assert.equal(error.pointer, undefined);
    }
    assert.equal(problem.instance, '/iam/api/v1/applications');
  }

  let list: TestContext;
  let firstCursor: string;
  before(async () => {
    list = await buildTestApp();
    for (const clientId of ['l1', 'l2', 'l3', 'l4']) {
      await createApplication(list, { client_id: clientId });
    }
    firstCursor = (await call(list, 'GET', '/applications?limit=2')).json().next_cursor;
  });
  after(() => list.close());
  const listWith = (query: string) => call(list, 'GET', `/applications?${query}`);

  it('GET /applications/:client_id refuses unknown query parameters', async () => {
    const { clientId } = await created();
    const problem = problemOf(await call(ctx, 'GET', `/applications/${clientId}?x=1`), 400);
    assert.deepEqual(
      problem.errors?.map((error) => error.parameter),
      ['x'],
    );
  });

  for (const [limit, count] of [
    ['1', 1],
    ['1000', 4],
  ] as const) {
    it(`accepts limit=${limit}`, async () => {
      const response = await listWith(`limit=${limit}`);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.json().items.length, count);
    });
  }

  for (const limit of ['0', '1001', 'abc', '1.5', '-1', '', '1e2x']) {
    it(`refuses limit=${limit} with parameter limit`, async () => {
      assertParameterRefused(await listWith(`limit=${limit}`), 'limit');
    });
  }

  it('refuses include_total other than true or false', async () => {
    assertParameterRefused(await listWith('include_total=yes'), 'include_total');
  });

  it('refuses unknown query parameters', async () => {
    assertParameterRefused(await listWith('client_id=l1'), 'client_id');
  });

  it('accepts the cursor it issued', async () => {
    const response = await listWith(`limit=2&cursor=${encodeURIComponent(firstCursor)}`);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(
      response.json().items.map((item: { client_id: string }) => item.client_id),
      ['l3', 'l4'],
    );
  });

  const tampered: [string, (cursor: string) => string][] = [
    ['its first character changed', (c) => (c[0] === 'A' ? 'B' : 'A') + c.slice(1)],
    ['a character of its MAC changed', (c) => flipAt(c, c.indexOf('.') + 3)],
    ['its last character removed', (c) => c.slice(0, -1)],
    ['its MAC removed', (c) => c.slice(0, c.indexOf('.'))],
    ['its MAC emptied', (c) => c.slice(0, c.indexOf('.') + 1)],
    ['an extra part appended', (c) => `${c}.x`],
    [
      'its payload swapped for another position',
      (c) => b64(JSON.stringify('l3')) + c.slice(c.indexOf('.')),
    ],
    ['a random string in its place', () => 'dGVzc2VyYQ'],
    ['an empty string in its place', () => ''],
  ];
  for (const [name, alter] of tampered) {
    it(`refuses a cursor with ${name} (parameter cursor)`, async () => {
      const cursor = alter(firstCursor);
      assert.notEqual(cursor, firstCursor);
      assertParameterRefused(await listWith(`cursor=${encodeURIComponent(cursor)}`), 'cursor');
    });
  }

  it('refuses every single-character alteration of a cursor', async () => {
    const accepted: string[] = [];
    for (let index = 0; index < firstCursor.length; index++) {
      const cursor = flipAt(firstCursor, index);
      const response = await listWith(`cursor=${encodeURIComponent(cursor)}`);
      if (response.statusCode !== 400)
        accepted.push(`${index}: ${cursor} → ${response.statusCode}`);
    }
    assert.deepEqual(accepted, [], `altered cursors accepted:\n${accepted.join('\n')}`);
  });

  it('refuses a cursor issued by the API-keys list', async () => {
    await list.createKey({ name: 'second' });
    const keys = await call(list, 'GET', '/api-keys?limit=1');
    assert.equal(keys.statusCode, 200, keys.body);
    const cursor = keys.json().next_cursor;
    assert.equal(typeof cursor, 'string');
    assertParameterRefused(await listWith(`cursor=${encodeURIComponent(cursor)}`), 'cursor');
  });

  it('refuses a cursor issued by a users list', async () => {
    await createUser(list, 'l1', { identifier: 'u1' });
    await createUser(list, 'l1', { identifier: 'u2', email: 'u2@example.com' });
    const users = await call(list, 'GET', '/applications/l1/users?limit=1');
    assert.equal(users.statusCode, 200, users.body);
    const cursor = users.json().next_cursor;
    assert.equal(typeof cursor, 'string');
    assertParameterRefused(await listWith(`cursor=${encodeURIComponent(cursor)}`), 'cursor');
  });
});

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function b64(text: string): string {
  return Buffer.from(text).toString('base64url');
}

/** The cursor with the character at `index` replaced by its neighbour in the base64url alphabet. */
function flipAt(cursor: string, index: number): string {
  const position = BASE64URL.indexOf(cursor[index]!);
  const replacement = position === -1 ? 'A' : BASE64URL[position ^ 1]!;
  return cursor.slice(0, index) + replacement + cursor.slice(index + 1);
}
