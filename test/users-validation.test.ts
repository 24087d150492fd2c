// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  buildTestApp,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  type TestContext,
  userBody,
  userPath,
} from './helpers.js';

const CLIENT = 'billing-web';
const PROVIDER = 'google_oauth2';
const USERS = `/applications/${CLIENT}/users`;
/** The user every PUT and PATCH case targets. */
const TARGET = 'validation-target';

/** An accepted value and, when it differs, the value stored and returned. */
interface Accepted {
  value: unknown;
  stored?: unknown;
  label?: string;
}

/** A refused value and the pointer its error names (default: the member itself). */
interface Refused {
  value: unknown;
  pointer?: string;
  label?: string;
}

function describeValue(value: unknown, label?: string): string {
  if (label !== undefined) return label;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

/** The distinct pointers (or parameters) an error response names. */
function pointersOf(problem: { errors?: { pointer?: string; parameter?: string }[] }) {
  return [...new Set(problem.errors?.map((error) => error.pointer ?? error.parameter))];
}

/** A syntactically valid address of exactly `length` characters, DNS labels ≤ 63. */
function emailOfLength(length: number): string {
  const local = 'a'.repeat(64);
  let domain = 'example.com';
  while (local.length + 1 + domain.length < length) {
    const room = length - (local.length + 1 + domain.length) - 1;
    domain = `${'b'.repeat(Math.min(63, room))}.${domain}`;
  }
  return `${local}@${domain}`;
}

const many = (count: number, make: (index: number) => string) =>
  Array.from({ length: count }, (_, index) => make(index));

const CONTROL_CHARACTERS = ['\u0000', '\t', '\n', '\r', '\u001f', '\u007f', '\u0085', '\u009f'];

const EMAIL_254 = emailOfLength(254);
const EMAIL_255 = emailOfLength(255);
const URL_PREFIX = 'https://example.com/';

/** The rules of a user (docs/api.md, Users) for the members a PUT or PATCH can change. */
const memberRules: Record<string, { accepted: Accepted[]; refused: Refused[] }> = {
  name: {
    accepted: [
      { value: 'A' },
      { value: '  Ada Lovelace  ', stored: 'Ada Lovelace' },
      { value: '\u00a0Ada\u3000', stored: 'Ada', label: 'non-breaking and ideographic spaces' },
      { value: 'Ada  Lovelace', label: 'inner spaces kept' },
      { value: 'x'.repeat(200), label: '200 characters' },
      { value: ` ${'x'.repeat(200)} `, stored: 'x'.repeat(200), label: '200 after trimming' },
      { value: '🎉'.repeat(200), label: '200 astral characters' },
    ],
    refused: [
      { value: '' },
      { value: '   ', label: 'only spaces' },
      { value: 'x'.repeat(201), label: '201 characters' },
      { value: ` ${'x'.repeat(201)} `, label: '201 after trimming' },
      ...CONTROL_CHARACTERS.map((c) => ({ value: `Ada${c}Lovelace`, label: JSON.stringify(c) })),
      { value: '\tAda', label: 'a leading tab (never trimmed away)' },
      { value: 42 },
      { value: null },
    ],
  },
  avatar: {
    accepted: [
      { value: 'http://example.com/a.png' },
      { value: 'https://cdn.example.com:8443/u/1.png?size=64#top' },
      { value: `${URL_PREFIX}${'a'.repeat(2048 - URL_PREFIX.length)}`, label: '2048 characters' },
      { value: null },
    ],
    refused: [
      { value: 'ftp://example.com/a.png' },
      { value: '/avatars/1.png', label: 'relative' },
      { value: 'example.com/a.png' },
      { value: 'https://' },
      { value: 'http:/example.com/a.png' },
      { value: 'https://example.com/a b.png', label: 'with a space' },
      { value: ' https://example.com/a.png', label: 'leading space' },
      { value: 'https://example.com/a\tb', label: 'with a tab' },
      { value: `${URL_PREFIX}${'a'.repeat(2049 - URL_PREFIX.length)}`, label: '2049 characters' },
      { value: 'javascript:alert(1)' },
      { value: 'data:image/png;base64,AAAA' },
      { value: '' },
      { value: 7 },
    ],
  },
  email: {
    accepted: [
      { value: 'ada@example.com' },
      { value: 'Ada.Lovelace+tag@Example.COM' },
      { value: "o'brien@sub.example.co.uk" },
      { value: EMAIL_254, label: `${EMAIL_254.length} characters` },
    ],
    refused: [
      { value: EMAIL_255, label: `${EMAIL_255.length} characters` },
      { value: '' },
      { value: 'plain' },
      { value: 'ada@localhost', label: 'domain without a dot' },
      { value: '@example.com' },
      { value: 'ada@' },
      { value: 'ada@@example.com' },
      { value: 'a b@example.com' },
      { value: 'a..b@example.com' },
      { value: '.ada@example.com' },
      { value: 'ada.@example.com' },
      { value: 'ada@example.com ', label: 'trailing space' },
      { value: 'ädä@example.com', label: 'non-ASCII local part' },
      { value: 'ada@-example.com' },
      { value: 'Ada <ada@example.com>' },
      { value: ['ada@example.com'] },
      { value: null },
    ],
  },
  locale: {
    accepted: [
      ...[
        'en',
        'pt-BR',
        'zh-Hant-TW',
        'es-419',
        'sr-Latn-RS',
        'de-CH-1996',
        'en-US-x-twain',
        'i-klingon',
        'EN-gb',
      ].map((value) => ({ value })),
      { value: 'en-x-aaaaaaaa-bbbbbbbb-cccccccc-ddd', label: '35 characters' },
    ],
    refused: [
      { value: 'en_US' },
      { value: 'e' },
      { value: 'en-' },
      { value: '-en' },
      { value: 'en--US' },
      { value: 'en US' },
      { value: '' },
      { value: 'en-x-aaaaaaaa-bbbbbbbb-cccccccc-dddd', label: '36 characters' },
      { value: null },
    ],
  },
  roles: {
    accepted: [
      { value: [] },
      { value: ['a'] },
      { value: ['r'.repeat(64)], label: 'a 64-character role' },
      { value: ['Admin.Billing_read:all-x', 'viewer'] },
      { value: many(100, (i) => `role-${i}`), label: '100 roles' },
    ],
    refused: [
      { value: ['r'.repeat(65)], pointer: '/roles/0', label: 'a 65-character role' },
      { value: ['ok', 'a b'], pointer: '/roles/1' },
      { value: ['ok', 'role/x'], pointer: '/roles/1' },
      { value: ['ok', 'admin,root'], pointer: '/roles/1' },
      { value: ['é'], pointer: '/roles/0' },
      { value: [''], pointer: '/roles/0' },
      { value: [1], pointer: '/roles/0' },
      { value: many(101, (i) => `role-${i}`), label: '101 roles' },
      { value: ['admin', 'viewer', 'admin'], label: 'duplicates' },
      { value: 'admin', label: 'a string instead of an array' },
      { value: null },
    ],
  },
  scopes: {
    accepted: [
      { value: [] },
      { value: ['org:acme'] },
      { value: ['a:b:c'] },
      { value: ['org:ácmé', 'region:eu-west-1'] },
      { value: [`org:${'v'.repeat(124)}`], label: 'a 128-character scope' },
      { value: many(100, (i) => `org:${i}`), label: '100 scopes' },
    ],
    refused: [
      { value: ['org'], pointer: '/scopes/0' },
      { value: [':x'], pointer: '/scopes/0' },
      { value: ['org:acme', 'x:'], pointer: '/scopes/1' },
      { value: ['a b:c'], pointer: '/scopes/0' },
      { value: ['x:a b'], pointer: '/scopes/0' },
      { value: ['x:a\tb'], pointer: '/scopes/0' },
      { value: [`org:${'v'.repeat(125)}`], pointer: '/scopes/0', label: 'a 129-character scope' },
      { value: many(101, (i) => `org:${i}`), label: '101 scopes' },
      { value: ['org:acme', 'org:acme'], label: 'duplicates' },
      { value: 'org:acme', label: 'a string instead of an array' },
      { value: null },
    ],
  },
};

describe('user member rules (docs/api.md, Users)', () => {
  let ctx: TestContext;
  let counter = 0;
  const targetPath = userPath(CLIENT, PROVIDER, TARGET);
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createUser(ctx, CLIENT, { identifier: TARGET });
  });
  after(() => ctx.close());

  const send = {
    POST: (member: string, value: unknown) =>
      call(ctx, 'POST', USERS, {
        body: userBody({ identifier: `member-${++counter}`, [member]: value }),
      }),
    PUT: (member: string, value: unknown) =>
      call(ctx, 'PUT', targetPath, { body: userBody({ identifier: TARGET, [member]: value }) }),
    PATCH: (member: string, value: unknown) =>
      call(ctx, 'PATCH', targetPath, { body: { [member]: value } }),
  };
  const success = { POST: 201, PUT: 200, PATCH: 200 };

  for (const [member, { accepted, refused }] of Object.entries(memberRules)) {
    describe(member, () => {
      for (const method of ['POST', 'PUT', 'PATCH'] as const) {
        for (const { value, stored, label } of accepted) {
          it(`${method} accepts ${describeValue(value, label)}`, async () => {
            const response = await send[method](member, value);
            assert.equal(response.statusCode, success[method], response.body);
            const expected = stored === undefined ? value : stored;
            assert.deepEqual(response.json()[member], expected);
            if (method !== 'POST') {
              assert.deepEqual((await call(ctx, 'GET', targetPath)).json()[member], expected);
            }
          });
        }
        for (const { value, pointer, label } of refused) {
          it(`${method} refuses ${describeValue(value, label)}`, async () => {
            const previous = await call(ctx, 'GET', targetPath);
            const problem = problemOf(await send[method](member, value), 400);
            assert.deepEqual(pointersOf(problem), [pointer ?? `/${member}`]);
            const afterwards = await call(ctx, 'GET', targetPath);
            assert.equal(afterwards.headers.etag, previous.headers.etag);
          });
        }
      }
    });
  }
});

/** The identity members, which only a create can set. */
const identityRules: Record<string, { accepted: Accepted[]; refused: Refused[] }> = {
  provider: {
    accepted: [
      ...['google_oauth2', 'azure_saml', 'a_b', 'a-b_c-d', '0_9', 'a__b', 'okta-eu_oidc'].map(
        (value) => ({ value }),
      ),
      { value: `${'a'.repeat(31)}_${'b'.repeat(32)}`, label: '64 characters' },
    ],
    refused: [
      { value: 'a_', label: '2 characters' },
      { value: `${'a'.repeat(32)}_${'b'.repeat(32)}`, label: '65 characters' },
      ...['google', '_x', 'x_', '_', 'Google_x', 'goo gle_x', 'google_oauth.2', 'gööglé_x', ''].map(
        (value) => ({ value }),
      ),
      { value: 42 },
      { value: null },
    ],
  },
  identifier: {
    accepted: [
      { value: 'x', label: '1 character' },
      { value: 'x'.repeat(256), label: '256 characters' },
      { value: '🎉'.repeat(256), label: '256 astral characters' },
      ...['...', '.x', 'x.', '\u200bzero-width', '\ufffd', '\ue000', 'a/b', '100%'].map(
        (value) => ({ value }),
      ),
    ],
    refused: [
      { value: '' },
      { value: 'x'.repeat(257), label: '257 characters' },
      { value: '🎉'.repeat(257), label: '257 astral characters' },
      { value: '.' },
      { value: '..' },
      ...CONTROL_CHARACTERS.map((c) => ({ value: `a${c}b`, label: JSON.stringify(c) })),
      { value: 108234823498234 },
      { value: null },
    ],
  },
};

describe('user identity rules on create (docs/api.md, Users)', () => {
  let ctx: TestContext;
  let counter = 0;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
  });
  after(() => ctx.close());

  for (const [member, { accepted, refused }] of Object.entries(identityRules)) {
    describe(member, () => {
      for (const { value, label } of accepted) {
        it(`accepts ${describeValue(value, label)}, readable at its path`, async () => {
          const body = userBody({ identifier: `identity-${++counter}`, [member]: value });
          const response = await call(ctx, 'POST', USERS, { body });
          assert.equal(response.statusCode, 201, response.body);
          assert.equal(response.json()[member], value);
          const path = userPath(CLIENT, String(body.provider), String(body.identifier));
          assert.equal((await call(ctx, 'GET', path)).json()[member], value);
        });
      }
      for (const { value, label } of refused) {
        it(`refuses ${describeValue(value, label)}`, async () => {
          const body = userBody({ identifier: `identity-${++counter}`, [member]: value });
          const problem = problemOf(await call(ctx, 'POST', USERS, { body }), 400);
          assert.deepEqual(pointersOf(problem), [`/${member}`]);
        });
      }
    });
  }
});

describe('lone UTF-16 surrogates in user bodies', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await createUser(ctx, CLIENT, { identifier: TARGET });
  });

  /** JSON text with a placeholder string replaced by a raw `\udXXX` escape. */
  function withSurrogate(body: Record<string, unknown>, escape: string): string {
    const text = JSON.stringify(body).replace('LONE', escape);
    assert.ok(text.includes(escape));
    return text;
  }

  for (const escape of ['\\ud800', '\\udc00', 'x\\udbff']) {
    it(`refuses ${escape} in identifier on create`, async () => {
      const rawBody = withSurrogate(userBody({ identifier: 'LONE' }), escape);
      const problem = problemOf(await call(ctx, 'POST', USERS, { rawBody }), 400);
      assert.deepEqual(pointersOf(problem), ['/identifier']);
    });

    it(`refuses ${escape} in name (create and PATCH) and in a scope`, async () => {
      const create = withSurrogate(userBody({ identifier: 'lone-name', name: 'Ada LONE' }), escape);
      assert.deepEqual(
        pointersOf(problemOf(await call(ctx, 'POST', USERS, { rawBody: create }), 400)),
        ['/name'],
      );
      const patch = withSurrogate({ name: 'Ada LONE' }, escape);
      const path = userPath(CLIENT, PROVIDER, TARGET);
      assert.deepEqual(
        pointersOf(problemOf(await call(ctx, 'PATCH', path, { rawBody: patch }), 400)),
        ['/name'],
      );
      const scope = withSurrogate({ scopes: ['org:acme', 'org:LONE'] }, escape);
      assert.deepEqual(
        pointersOf(problemOf(await call(ctx, 'PATCH', path, { rawBody: scope }), 400)),
        ['/scopes/1'],
      );
    });
  }
});

describe('user body shape', () => {
  let ctx: TestContext;
  const targetPath = userPath(CLIENT, PROVIDER, TARGET);
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createUser(ctx, CLIENT, { identifier: TARGET });
  });
  after(() => ctx.close());

  for (const member of ['identifier', 'provider', 'name', 'email', 'locale', 'roles', 'scopes']) {
    it(`POST without ${member} → 400 at /${member}`, async () => {
      const { [member]: _omitted, ...body } = userBody({ identifier: 'missing-member' });
      const problem = problemOf(await call(ctx, 'POST', USERS, { body }), 400);
      assert.deepEqual(pointersOf(problem), [`/${member}`]);
    });
  }

  for (const member of ['name', 'email', 'locale', 'roles', 'scopes']) {
    it(`PUT without ${member} → 400 at /${member}`, async () => {
      const { [member]: _omitted, ...body } = userBody({ identifier: TARGET });
      const problem = problemOf(await call(ctx, 'PUT', targetPath, { body }), 400);
      assert.deepEqual(pointersOf(problem), [`/${member}`]);
    });
  }

  it('refuses unknown members on POST, PUT and PATCH with a pointer to each', async () => {
    const post = await call(ctx, 'POST', USERS, {
      body: userBody({ identifier: 'unknown-member', nickname: 'Ada', 'a/b': 1 }),
    });
    assert.deepEqual(pointersOf(problemOf(post, 400)).sort(), ['/a~1b', '/nickname']);
    const put = await call(ctx, 'PUT', targetPath, {
      body: userBody({ identifier: TARGET, password: 'x' }),
    });
    assert.deepEqual(pointersOf(problemOf(put, 400)), ['/password']);
    const patch = await call(ctx, 'PATCH', targetPath, { body: { admin: true } });
    assert.deepEqual(pointersOf(problemOf(patch, 400)), ['/admin']);
  });

  for (const [label, rawBody] of [
    ['an array', '[]'],
    ['a string', '"ada"'],
    ['null', 'null'],
    ['malformed JSON', '{"name": '],
  ] as const) {
    it(`refuses ${label} as the body with 400`, async () => {
      problemOf(await call(ctx, 'POST', USERS, { rawBody }), 400);
      problemOf(await call(ctx, 'PATCH', targetPath, { rawBody }), 400);
    });
  }

  it('accepts created_at and updated_at in a create body and ignores them', async () => {
    const response = await call(ctx, 'POST', USERS, {
      body: userBody({
        identifier: 'timestamps-ignored',
        created_at: '1999-01-01T00:00:00.000Z',
        updated_at: 'not even a date',
      }),
    });
    assert.equal(response.statusCode, 201);
    assert.equal(response.json().created_at, '2026-01-01T00:00:00.000Z');
    assert.equal(response.json().updated_at, '2026-01-01T00:00:00.000Z');
  });

  it('accepts an application client_id equal to the path on create, refuses another', async () => {
    const same = await call(ctx, 'POST', USERS, {
      body: userBody({ identifier: 'with-client-id', client_id: CLIENT }),
    });
    assert.equal(same.statusCode, 201);
    const other = await call(ctx, 'POST', USERS, {
      body: userBody({ identifier: 'other-client-id', client_id: 'crm' }),
    });
    assert.deepEqual(pointersOf(problemOf(other, 400)), ['/client_id']);
  });

  it('refuses merge-patch on POST and PUT with 415, and text/plain on PATCH', async () => {
    const mergePatch = 'application/merge-patch+json';
    problemOf(await call(ctx, 'POST', USERS, { body: userBody(), contentType: mergePatch }), 415);
    problemOf(
      await call(ctx, 'PUT', targetPath, {
        body: userBody({ identifier: TARGET }),
        contentType: mergePatch,
      }),
      415,
    );
    problemOf(
      await call(ctx, 'PATCH', targetPath, { body: { name: 'X' }, contentType: 'text/plain' }),
      415,
    );
  });
});

interface RawResponse {
  status: number;
  contentType: string | undefined;
  body: string;
}

/**
 * Sends a request over a real socket with the path exactly as given. inject() cannot: it
 * resolves dot segments, including percent-encoded ones (%2E%2E), before the app sees them.
 */
function sendRaw(ctx: TestContext, method: string, path: string, body?: unknown) {
  const { port } = ctx.app.server.address() as AddressInfo;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<RawResponse>((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          authorization: `apikey ${ctx.adminKey}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: response.headers['content-type'],
            body: text,
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

describe('user path parameters', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  });

  for (const segment of ['%2E%2E', '%2e%2E', '..', '%2E', '.']) {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      it(`${method} with identifier segment ${segment} → 400 naming parameter "identifier"`, async () => {
        const path = `/iam/api/v1${USERS}/${PROVIDER}/${segment}`;
        const body = method === 'PUT' ? userBody() : method === 'PATCH' ? { name: 'X' } : undefined;
        const response = await sendRaw(ctx, method, path, body);
        assert.equal(response.status, 400);
        assert.equal(response.contentType, 'application/problem+json');
        const problem = JSON.parse(response.body) as {
          instance: string;
          errors: { parameter?: string }[];
        };
        assert.equal(problem.instance, path);
        assert.deepEqual(
          [...new Set(problem.errors.map((error) => error.parameter))],
          ['identifier'],
        );
      });
    }
  }

  const badIdentifiers = [
    ['a control character (%00)', 'x%00y'],
    ['a tab (%09)', 'x%09y'],
    ['257 characters', 'x'.repeat(257)],
  ];
  for (const [label, segment] of badIdentifiers) {
    it(`refuses an identifier in the path with ${label} → 400 parameter "identifier"`, async () => {
      const problem = problemOf(await call(ctx, 'GET', `${USERS}/${PROVIDER}/${segment}`), 400);
      assert.deepEqual(
        [...new Set(problem.errors?.map((error) => error.parameter))],
        ['identifier'],
      );
    });
  }

  for (const provider of ['BAD_x', 'google', '_oauth', 'google_', 'goo gle_x', 'ab']) {
    it(`refuses provider ${JSON.stringify(provider)} in the path → 400 parameter "provider"`, async () => {
      for (const method of ['GET', 'DELETE']) {
        const problem = problemOf(await call(ctx, method, userPath(CLIENT, provider, 'x')), 400);
        assert.deepEqual(
          [...new Set(problem.errors?.map((error) => error.parameter))],
          ['provider'],
        );
      }
    });
  }

  it('answers 404 for a user that does not exist', async () => {
    const path = userPath(CLIENT, PROVIDER, 'nobody');
    assert.equal(problemOf(await call(ctx, 'GET', path), 404).instance, `/iam/api/v1${path}`);
    problemOf(await call(ctx, 'PUT', path, { body: userBody({ identifier: 'nobody' }) }), 404);
    problemOf(await call(ctx, 'PATCH', path, { body: { name: 'X' } }), 404);
    problemOf(await call(ctx, 'DELETE', path), 404);
    // PUT does not create (no upsert).
    problemOf(await call(ctx, 'GET', path), 404);
  });

  it('answers 404 on every user route of a missing application', async () => {
    const path = userPath('ghost', PROVIDER, 'x');
    problemOf(await call(ctx, 'GET', '/applications/ghost/users'), 404);
    problemOf(await call(ctx, 'POST', '/applications/ghost/users', { body: userBody() }), 404);
    problemOf(await call(ctx, 'GET', path), 404);
    problemOf(await call(ctx, 'PUT', path, { body: userBody({ identifier: 'x' }) }), 404);
    problemOf(await call(ctx, 'PATCH', path, { body: { name: 'X' } }), 404);
    problemOf(await call(ctx, 'DELETE', path), 404);
  });
});
