// tessera-test: both-stores
// Authorization decisions over OpenID AuthZEN 1.0: the evaluation, evaluations and
// search endpoints, their authentication and restriction, the PDP metadata, and decisions that
// follow the users' current records. The interop "Todo" scenario is authzen-todo.test.ts.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  type TestContext,
  call,
  createApplication,
  createUser,
  problemOf,
  useTestApp,
  userPath,
} from './helpers.js';

const BILLING = 'billing-web';
const AUTHORIZATION = {
  actions: {
    can_read_invoices: { roles: ['viewer', 'accountant'] },
    can_refund_invoice: {
      roles: ['accountant'],
      owner_roles: ['viewer'],
      owner: { resource_property: 'customer', user_attribute: 'email' },
    },
    can_close_account: {
      owner_roles: ['viewer'],
      owner: { resource_property: 'owner_id', user_attribute: 'id' },
    },
  },
};

interface Ask {
  key?: string | null;
  scheme?: string;
  headers?: Record<string, string>;
  rawBody?: string;
  contentType?: string;
}

/** POSTs an AuthZEN request (default key: the admin key, sent as Bearer). */
function ask(
  ctx: TestContext,
  path: string,
  body: unknown,
  options: Ask = {},
): Promise<LightMyRequestResponse> {
  const key = options.key === undefined ? ctx.adminKey : options.key;
  return call(ctx, 'POST', `//access/v1/${path}`, {
    key: null,
    ...(options.rawBody === undefined ? { body } : { rawBody: options.rawBody }),
    ...(options.contentType === undefined ? {} : { contentType: options.contentType }),
    headers: {
      ...(key === null ? {} : { authorization: `${options.scheme ?? 'Bearer'} ${key}` }),
      ...options.headers,
    },
  });
}

const user = (id: string) => ({ type: 'user', id });
const action = (name: string) => ({ name });
const invoice = (properties?: Record<string, unknown>) => ({
  type: 'invoice',
  id: 'inv-1',
  ...(properties === undefined ? {} : { properties }),
});
const inBilling = { client_id: BILLING };

async function decide(ctx: TestContext, body: Record<string, unknown>, options: Ask = {}) {
  const response = await ask(ctx, 'evaluation', { context: inBilling, ...body }, options);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ decision: boolean }>().decision;
}

const ctx = useTestApp({}, async (ctx) => {
  await createApplication(ctx, { client_id: BILLING, authorization: AUTHORIZATION });
  await createApplication(ctx, { client_id: 'plain' });
  await createUser(ctx, BILLING, {
    identifier: 'ada',
    email: 'Ada@Example.com',
    roles: ['viewer'],
  });
  await createUser(ctx, BILLING, {
    identifier: 'grace',
    email: 'grace@example.com',
    roles: ['accountant'],
  });
  await createUser(ctx, BILLING, {
    identifier: 'linus',
    email: 'linus@example.com',
    roles: ['accountant'],
    active: false,
  });
  await createUser(ctx, 'plain', { identifier: 'ada', roles: ['admin', 'reports:read'] });
});

async function userId(clientId: string, identifier: string): Promise<string> {
  const response = await call(ctx, 'GET', userPath(clientId, 'google_oauth2', identifier));
  return response.json<{ id: string }>().id;
}

describe('POST /access/v1/evaluation', () => {
  it('allows holders of an action’s roles, on any resource', async () => {
    for (const [identifier, expected] of [
      ['ada', true],
      ['grace', true],
    ] as const) {
      assert.equal(
        await decide(ctx, {
          subject: user(`google_oauth2:${identifier}`),
          action: action('can_read_invoices'),
          resource: invoice(),
        }),
        expected,
      );
    }
    assert.equal(
      await decide(ctx, {
        subject: user('google_oauth2:ada'),
        action: action('can_refund_invoice'),
        resource: invoice(),
      }),
      false,
    );
  });

  it('answers a deny as 200 {"decision": false}, JSON, and nothing else', async () => {
    const response = await ask(ctx, 'evaluation', {
      subject: user('google_oauth2:nobody'),
      action: action('can_read_invoices'),
      resource: invoice(),
      context: inBilling,
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(response.body, '{"decision":false}');
  });

  it('lets owner roles act only on what they own (e-mail ignoring case, ids exactly)', async () => {
    const refund = (properties: Record<string, unknown> | undefined) =>
      decide(ctx, {
        subject: user('google_oauth2:ada'),
        action: action('can_refund_invoice'),
        resource: invoice(properties),
      });
    assert.equal(await refund({ customer: 'ada@example.com' }), true);
    assert.equal(await refund({ customer: 'ADA@EXAMPLE.COM' }), true);
    assert.equal(await refund({ customer: 'grace@example.com' }), false);
    assert.equal(await refund({ customer: ['ada@example.com'] }), false);
    assert.equal(await refund({ customer: null }), false);
    assert.equal(await refund({}), false);
    assert.equal(await refund(undefined), false);
    const adaId = await userId(BILLING, 'ada');
    const close = (owner: string) =>
      decide(ctx, {
        subject: user('google_oauth2:ada'),
        action: action('can_close_account'),
        resource: { type: 'account', id: 'a-1', properties: { owner_id: owner } },
      });
    assert.equal(await close(adaId), true);
    assert.equal(await close(adaId.toUpperCase()), adaId === adaId.toUpperCase());
    // Grace holds no owner role: owning is not enough.
    assert.equal(
      await decide(ctx, {
        subject: user('google_oauth2:grace'),
        action: action('can_close_account'),
        resource: {
          type: 'account',
          id: 'a-1',
          properties: { owner_id: await userId(BILLING, 'grace') },
        },
      }),
      false,
    );
  });

  it('names a user by <provider>:<identifier> or by its id', async () => {
    const id = await userId(BILLING, 'ada');
    for (const subject of [user('google_oauth2:ada'), user(id)]) {
      assert.equal(
        await decide(ctx, { subject, action: action('can_read_invoices'), resource: invoice() }),
        true,
      );
    }
  });

  it('denies unknown and inactive users, other subject types, unlisted actions, unknown applications', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ subject: user('google_oauth2:nobody') }, 'an unknown user'],
      [{ subject: user('google_oauth2:linus') }, 'an inactive user holding the role'],
      [{ subject: { type: 'group', id: 'google_oauth2:grace' } }, 'another subject type'],
      [
        { subject: user('google_oauth2:grace'), action: action('can_delete_everything') },
        'an action not listed',
      ],
      [{ context: { client_id: 'no-such-app' } }, 'an unknown application'],
      [{ subject: user(`google_oauth2:${'x'.repeat(2000)}`) }, 'a subject id no user can have'],
    ];
    for (const [overrides, label] of cases) {
      assert.equal(
        await decide(ctx, {
          subject: user('google_oauth2:grace'),
          action: action('can_read_invoices'),
          resource: invoice(),
          ...overrides,
        }),
        false,
        label,
      );
    }
  });

  it('without an authorization, allows an action named like a role the user holds', async () => {
    const ask = (name: string) =>
      decide(ctx, {
        subject: user('google_oauth2:ada'),
        action: action(name),
        resource: { type: 'report', id: 'r' },
        context: { client_id: 'plain' },
      });
    assert.equal(await ask('admin'), true);
    assert.equal(await ask('reports:read'), true);
    assert.equal(await ask('reports:write'), false);
    assert.equal(await ask('Admin'), false);
  });

  it('follows the user’s current record: a role removed or a deactivation counts at once', async () => {
    const question = {
      subject: user('google_oauth2:grace'),
      action: action('can_read_invoices'),
      resource: invoice(),
    };
    const path = userPath(BILLING, 'google_oauth2', 'grace');
    assert.equal(await decide(ctx, question), true);
    await call(ctx, 'PATCH', path, { body: { roles: [] } });
    assert.equal(await decide(ctx, question), false);
    await call(ctx, 'PATCH', path, { body: { roles: ['accountant'] } });
    assert.equal(await decide(ctx, question), true);
    await call(ctx, 'PATCH', path, { body: { active: false } });
    assert.equal(await decide(ctx, question), false);
    await call(ctx, 'PATCH', path, { body: { active: true } });
    assert.equal(await decide(ctx, question), true);
    // And the application's model: an action taken away.
    await call(ctx, 'PATCH', `/applications/${BILLING}`, {
      body: { authorization: { actions: { can_read_invoices: null } } },
    });
    assert.equal(await decide(ctx, question), false);
    await call(ctx, 'PATCH', `/applications/${BILLING}`, {
      body: { authorization: AUTHORIZATION },
    });
    assert.equal(await decide(ctx, question), true);
  });

  it('ignores members it does not know, anywhere', async () => {
    assert.equal(
      await decide(ctx, {
        subject: { ...user('google_oauth2:grace'), properties: { department: 'Sales' }, extra: 1 },
        action: { name: 'can_read_invoices', properties: { method: 'GET' }, verb: 'read' },
        resource: { ...invoice(), tags: ['a'] },
        context: { client_id: BILLING, time: '1985-10-26T01:22-07:00', ip: { v4: '1.2.3.4' } },
        options: { whatever: true },
        evaluations: 'not read here',
      }),
      true,
    );
  });

  it('refuses a malformed request with 400 and the members at fault', async () => {
    const base = {
      subject: user('google_oauth2:grace'),
      action: action('can_read_invoices'),
      resource: invoice(),
      context: inBilling,
    };
    const cases: [unknown, string][] = [
      [{ ...base, subject: undefined }, '/subject'],
      [{ ...base, action: {} }, '/action/name'],
      [{ ...base, resource: { type: 'invoice' } }, '/resource/id'],
      [{ ...base, subject: { type: 'user', id: 7 } }, '/subject/id'],
      [{ ...base, resource: { ...invoice(), properties: [] } }, '/resource/properties'],
      [{ ...base, context: { client_id: 'not/valid' } }, '/context/client_id'],
      [{ ...base, context: 'billing' }, '/context'],
      [[base], ''],
    ];
    for (const [body, pointer] of cases) {
      const problem = problemOf(await ask(ctx, 'evaluation', body), 400);
      assert.equal(problem.errors?.[0]?.pointer, pointer, JSON.stringify(body));
    }
    const notJson = await ask(ctx, 'evaluation', null, { rawBody: '{"subject":' });
    problemOf(notJson, 400);
    const text = await ask(ctx, 'evaluation', null, { rawBody: 'x', contentType: 'text/plain' });
    problemOf(text, 415);
  });

  it('needs the application named when the key may act on several', async () => {
    const body = {
      subject: user('google_oauth2:grace'),
      action: action('can_read_invoices'),
      resource: invoice(),
    };
    const problem = problemOf(await ask(ctx, 'evaluation', body), 400);
    assert.equal(problem.errors?.[0]?.pointer, '/context/client_id');
    assert.match(problem.errors![0]!.detail, /every application/);
    const two = await ctx.createKey({
      roles: ['decisions:read'],
      applications: [BILLING, 'plain'],
    });
    const several = problemOf(await ask(ctx, 'evaluation', body, { key: two }), 400);
    assert.match(several.errors![0]!.detail, /several applications/);
    // A key restricted to one application decides there without being told.
    const one = await ctx.createKey({ roles: ['decisions:read'], applications: [BILLING] });
    const response = await ask(ctx, 'evaluation', body, { key: one });
    assert.deepEqual(response.json(), { decision: true });
  });

  it('echoes X-Request-ID exactly as sent, on answers and on errors', async () => {
    const body = {
      subject: user('google_oauth2:grace'),
      action: action('can_read_invoices'),
      resource: invoice(),
      context: inBilling,
    };
    for (const id of [
      'bfe9eb29-ab87-4ca3-be83-a1d5d8305716',
      'trace 42 / span "7"',
      'x'.repeat(300),
    ]) {
      const allowed = await ask(ctx, 'evaluation', body, { headers: { 'x-request-id': id } });
      assert.equal(allowed.headers['x-request-id'], id);
      const refused = await ask(ctx, 'evaluation', body, {
        key: `tsr_${'Z'.repeat(43)}`,
        headers: { 'x-request-id': id },
      });
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.headers['x-request-id'], id);
      const malformed = await ask(ctx, 'evaluation', {}, { headers: { 'x-request-id': id } });
      assert.equal(malformed.statusCode, 400);
      assert.equal(malformed.headers['x-request-id'], id);
    }
    const unnamed = await ask(ctx, 'evaluation', body);
    assert.match(String(unnamed.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});

describe('authentication and restriction of /access/v1', () => {
  const body = {
    subject: user('google_oauth2:grace'),
    action: action('can_read_invoices'),
    resource: invoice(),
    context: inBilling,
  };
  const paths = ['evaluation', 'evaluations', 'search/subject', 'search/resource', 'search/action'];

  it('answers 401 with WWW-Authenticate: Bearer without a valid key', async () => {
    for (const path of paths) {
      for (const options of [
        { key: null },
        { key: `tsr_${'A'.repeat(43)}` },
        { scheme: 'Basic' },
        { scheme: '' },
      ] satisfies Ask[]) {
        const response = await ask(ctx, path, body, options);
        problemOf(response, 401);
        assert.equal(
          response.headers['www-authenticate'],
          'Bearer',
          `${path} ${JSON.stringify(options)}`,
        );
      }
    }
  });

  it('takes the key as Bearer or apikey, and needs decisions:read', async () => {
    const deciding = await ctx.createKey({ roles: ['decisions:read'] });
    for (const scheme of ['Bearer', 'bearer', 'apikey', 'ApiKey']) {
      assert.equal((await ask(ctx, 'evaluation', body, { key: deciding, scheme })).statusCode, 200);
    }
    const reader = await ctx.createKey({ roles: ['users:read', 'applications:read'] });
    for (const path of paths) {
      const problem = problemOf(await ask(ctx, path, body, { key: reader }), 403);
      assert.match(problem.detail, /decisions:read/);
    }
  });

  it('keeps a restricted key to its applications, before anything is looked up', async () => {
    const restricted = await ctx.createKey({ roles: ['decisions:read'], applications: ['plain'] });
    for (const clientId of [BILLING, 'no-such-app']) {
      for (const path of paths) {
        const response = await ask(
          ctx,
          path,
          { ...body, context: { client_id: clientId } },
          { key: restricted },
        );
        problemOf(response, 403);
      }
    }
    const batch = await ask(
      ctx,
      'evaluations',
      { ...body, context: { client_id: 'plain' }, evaluations: [{}, { context: inBilling }] },
      { key: restricted },
    );
    problemOf(batch, 403);
  });
});

describe('POST /access/v1/evaluations', () => {
  const grace = user('google_oauth2:grace');
  const ada = user('google_oauth2:ada');

  async function batch(body: Record<string, unknown>) {
    const response = await ask(ctx, 'evaluations', { context: inBilling, ...body });
    assert.equal(response.statusCode, 200, response.body);
    return response.json<{ evaluations?: { decision: boolean }[]; decision?: boolean }>();
  }
  const decisions = (answer: { evaluations?: { decision: boolean }[] }) =>
    answer.evaluations?.map((item) => item.decision);

  it('answers every question in order, items taking what they leave out from the top level', async () => {
    const answer = await batch({
      subject: ada,
      action: action('can_read_invoices'),
      evaluations: [
        { resource: invoice() },
        {
          action: action('can_refund_invoice'),
          resource: invoice({ customer: 'ada@example.com' }),
        },
        {
          action: action('can_refund_invoice'),
          resource: invoice({ customer: 'bob@example.com' }),
        },
        { subject: grace, action: action('can_refund_invoice'), resource: invoice() },
        { subject: user('google_oauth2:linus'), resource: invoice() },
      ],
    });
    assert.deepEqual(answer, {
      evaluations: [
        { decision: true },
        { decision: true },
        { decision: false },
        { decision: true },
        { decision: false },
      ],
    });
  });

  it('stops at the first deny or permit when asked, returning up to and including it', async () => {
    const evaluations = [
      { action: action('can_read_invoices') },
      { action: action('can_refund_invoice') },
      { action: action('can_read_invoices') },
    ];
    const common = { subject: ada, resource: invoice(), evaluations };
    assert.deepEqual(decisions(await batch(common)), [true, false, true]);
    assert.deepEqual(
      decisions(await batch({ ...common, options: { evaluations_semantic: 'execute_all' } })),
      [true, false, true],
    );
    assert.deepEqual(
      decisions(
        await batch({ ...common, options: { evaluations_semantic: 'deny_on_first_deny' } }),
      ),
      [true, false],
    );
    assert.deepEqual(
      decisions(
        await batch({
          ...common,
          evaluations: evaluations.slice(1),
          options: { evaluations_semantic: 'permit_on_first_permit' },
        }),
      ),
      [false, true],
    );
    assert.deepEqual(
      decisions(
        await batch({
          ...common,
          evaluations: [{ action: action('can_refund_invoice') }],
          options: { evaluations_semantic: 'permit_on_first_permit', other_option: 1 },
        }),
      ),
      [false],
    );
    const unknown = await ask(ctx, 'evaluations', {
      ...common,
      context: inBilling,
      options: { evaluations_semantic: 'first_come' },
    });
    assert.equal(problemOf(unknown, 400).errors?.[0]?.pointer, '/options/evaluations_semantic');
  });

  it('answers a request without evaluations (or with none) as one evaluation', async () => {
    for (const evaluations of [undefined, []]) {
      assert.deepEqual(
        await batch({
          subject: grace,
          action: action('can_read_invoices'),
          resource: invoice(),
          ...(evaluations === undefined ? {} : { evaluations }),
        }),
        { decision: true },
      );
    }
    const problem = problemOf(
      await ask(ctx, 'evaluations', { subject: grace, context: inBilling }),
      400,
    );
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/action', '/resource'],
    );
  });

  it('refuses items missing a member that the top level does not give', async () => {
    const problem = problemOf(
      await ask(ctx, 'evaluations', {
        context: inBilling,
        subject: grace,
        evaluations: [{ resource: invoice() }, { action: action('x'), resource: invoice() }, {}],
      }),
      400,
    );
    assert.deepEqual(
      problem.errors?.map((error) => error.pointer),
      ['/evaluations/0/action', '/evaluations/2/action', '/evaluations/2/resource'],
    );
  });

  it('takes each item’s application from its own context, which replaces the top level’s', async () => {
    const answer = await batch({
      subject: ada,
      resource: invoice(),
      evaluations: [
        { action: action('can_read_invoices') },
        { action: action('admin'), context: { client_id: 'plain' } },
        { action: action('admin') },
      ],
    });
    assert.deepEqual(decisions(answer), [true, true, false]);
    const problem = problemOf(
      await ask(ctx, 'evaluations', {
        subject: ada,
        resource: invoice(),
        action: action('admin'),
        context: inBilling,
        evaluations: [{}, { context: { time: 'now' } }],
      }),
      400,
    );
    assert.equal(problem.errors?.[0]?.pointer, '/evaluations/1/context/client_id');
  });

  it('answers up to 1,000 questions, refusing more', async () => {
    const many = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        subject: user(`google_oauth2:${['ada', 'grace', 'linus', `u${index}`][index % 4]}`),
      }));
    const answer = await batch({
      action: action('can_read_invoices'),
      resource: invoice(),
      evaluations: many(1000),
    });
    assert.equal(answer.evaluations?.length, 1000);
    assert.deepEqual(decisions(answer)?.slice(0, 8), [
      true,
      true,
      false,
      false,
      true,
      true,
      false,
      false,
    ]);
    const problem = problemOf(
      await ask(ctx, 'evaluations', {
        context: inBilling,
        action: action('can_read_invoices'),
        resource: invoice(),
        evaluations: many(1001),
      }),
      400,
    );
    assert.equal(problem.errors?.[0]?.pointer, '/evaluations');
  });
});

describe('the search endpoints', () => {
  type Page = { page: { next_token: string; count: number }; results: Record<string, string>[] };

  async function search(path: string, body: Record<string, unknown>): Promise<Page> {
    const response = await ask(ctx, `search/${path}`, { context: inBilling, ...body });
    assert.equal(response.statusCode, 200, response.body);
    return response.json<Page>();
  }

  /** Every result, following next_token until it is empty. */
  async function everyResult(path: string, body: Record<string, unknown>, limit: number) {
    const results: Record<string, string>[] = [];
    let token: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await search(path, { ...body, page: { limit, ...(token ? { token } : {}) } });
      assert.ok(page.page.count <= limit);
      assert.equal(page.page.count, page.results.length);
      results.push(...page.results);
      if (page.page.next_token === '') return results;
      token = page.page.next_token;
    }
    throw new Error('next_token never ended');
  }

  it('lists the active users an action on a resource is allowed to, page by page', async () => {
    for (const identifier of ['bob', 'carol', 'dan']) {
      await createUser(ctx, BILLING, {
        identifier: `viewer-${identifier}`,
        email: `${identifier}@example.com`,
        roles: ['viewer'],
      });
    }
    const body = {
      subject: { type: 'user' },
      action: action('can_read_invoices'),
      resource: invoice(),
    };
    const expected = ['ada', 'grace', 'viewer-bob', 'viewer-carol', 'viewer-dan'].map((id) => ({
      type: 'user',
      id: `google_oauth2:${id}`,
    }));
    assert.deepEqual(await everyResult('subject', body, 2), expected);
    assert.deepEqual(await everyResult('subject', body, 100), expected);
    const once = await search('subject', body);
    assert.equal(once.page.next_token, '');
    // Owners join the holders of the roles that act anywhere.
    assert.deepEqual(
      await everyResult(
        'subject',
        {
          ...body,
          action: action('can_refund_invoice'),
          resource: invoice({ customer: 'BOB@example.com' }),
        },
        1,
      ),
      ['grace', 'viewer-bob'].map((id) => ({ type: 'user', id: `google_oauth2:${id}` })),
    );
    assert.deepEqual((await search('subject', { ...body, action: action('nothing') })).results, []);
    assert.deepEqual(
      (await search('subject', { ...body, subject: { type: 'group' } })).results,
      [],
    );
  });

  it('binds a page token to its search: a changed request or an altered token is refused', async () => {
    const body = {
      subject: { type: 'user' },
      action: action('can_read_invoices'),
      resource: invoice(),
    };
    const first = await search('subject', { ...body, page: { limit: 1 } });
    const token = first.page.next_token;
    assert.notEqual(token, '');
    // The same search with its members in another order is the same search.
    const reordered = await search('subject', {
      resource: invoice(),
      page: { token, limit: 1 },
      action: action('can_read_invoices'),
      subject: { type: 'user' },
    });
    assert.equal(reordered.results[0]?.id, 'google_oauth2:grace');
    const changes: Record<string, unknown>[] = [
      { ...body, page: { token, limit: 2 } },
      { ...body, page: { token } },
      { ...body, action: action('can_refund_invoice'), page: { token, limit: 1 } },
      { ...body, resource: invoice({ a: 1 }), page: { token, limit: 1 } },
      { ...body, page: { token: `${token}x`, limit: 1 } },
      { ...body, page: { token: 'not-a-token', limit: 1 } },
    ];
    for (const change of changes) {
      const response = await ask(ctx, 'search/subject', { context: inBilling, ...change });
      assert.equal(problemOf(response, 400).errors?.[0]?.pointer, '/page/token');
    }
    const other = await ask(ctx, 'search/action', {
      context: inBilling,
      subject: user('google_oauth2:ada'),
      resource: invoice(),
      page: { token, limit: 1 },
    });
    problemOf(other, 400);
  });

  it('pages at most 1,000 at a time, and counts nothing for limit 0', async () => {
    const body = {
      subject: { type: 'user' },
      action: action('can_read_invoices'),
      resource: invoice(),
    };
    assert.deepEqual(await search('subject', { ...body, page: { limit: 0 } }), {
      page: { next_token: '', count: 0 },
      results: [],
    });
    assert.equal(
      (await search('subject', { ...body, page: { limit: 100000 } })).page.next_token,
      '',
    );
    const negative = await ask(ctx, 'search/subject', {
      ...body,
      context: inBilling,
      page: { limit: -1 },
    });
    assert.equal(problemOf(negative, 400).errors?.[0]?.pointer, '/page/limit');
  });

  it('lists the actions a user may take on a resource, in byte order', async () => {
    const actions = (subject: unknown, resource: unknown, context = inBilling) =>
      search('action', { subject, resource, context }).then((page) =>
        page.results.map((result) => result.name),
      );
    assert.deepEqual(await actions(user('google_oauth2:ada'), invoice()), ['can_read_invoices']);
    assert.deepEqual(
      await actions(user('google_oauth2:ada'), invoice({ customer: 'ada@example.com' })),
      ['can_read_invoices', 'can_refund_invoice'],
    );
    assert.deepEqual(await actions(user('google_oauth2:grace'), invoice()), [
      'can_read_invoices',
      'can_refund_invoice',
    ]);
    assert.deepEqual(await actions(user('google_oauth2:linus'), invoice()), []);
    assert.deepEqual(await actions(user('google_oauth2:nobody'), invoice()), []);
    assert.deepEqual(
      await actions(user('google_oauth2:ada'), { type: 'report', id: 'r' }, { client_id: 'plain' }),
      ['admin', 'reports:read'],
    );
    const paged = await everyResult(
      'action',
      { subject: user('google_oauth2:grace'), resource: invoice() },
      1,
    );
    assert.deepEqual(paged, [{ name: 'can_read_invoices' }, { name: 'can_refund_invoice' }]);
  });

  it('lists the users (resources of type user) a user may act on anywhere', async () => {
    const body = (subject: string, name: string, type = 'user') => ({
      subject: user(subject),
      action: action(name),
      resource: { type },
    });
    const all = await everyResult('resource', body('google_oauth2:grace', 'can_read_invoices'), 2);
    assert.ok(all.length >= 6, JSON.stringify(all));
    assert.deepEqual(all[0], { type: 'user', id: 'google_oauth2:ada' });
    assert.ok(
      all.some((entity) => entity.id === 'google_oauth2:linus'),
      'inactive users are resources too',
    );
    // Only as an owner, or not at all: nothing Tessera can list.
    assert.deepEqual(
      (await search('resource', body('google_oauth2:ada', 'can_refund_invoice'))).results,
      [],
    );
    assert.deepEqual(
      (await search('resource', body('google_oauth2:linus', 'can_read_invoices'))).results,
      [],
    );
    assert.deepEqual(
      (await search('resource', body('google_oauth2:grace', 'can_read_invoices', 'invoice')))
        .results,
      [],
    );
  });
});

describe('GET /.well-known/authzen-configuration', () => {
  it('names this PDP and every endpoint, without a key, cacheable', async () => {
    const response = await call(ctx, 'GET', '//.well-known/authzen-configuration', { key: null });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.match(String(response.headers['cache-control']), /^public, max-age=\d+$/);
    const base = 'https://iam.example.test';
    assert.deepEqual(response.json(), {
      policy_decision_point: base,
      access_evaluation_endpoint: `${base}/access/v1/evaluation`,
      access_evaluations_endpoint: `${base}/access/v1/evaluations`,
      search_subject_endpoint: `${base}/access/v1/search/subject`,
      search_resource_endpoint: `${base}/access/v1/search/resource`,
      search_action_endpoint: `${base}/access/v1/search/action`,
    });
  });
});
