// tessera-test: both-stores
// Console sign-in through an OpenID provider, against a real one (panva's oidc-provider on
// 127.0.0.1, test/oidc-provider.ts): the whole authorization code flow over HTTP, the browser
// played by fetch with manual redirects and a cookie jar per site.

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { type TestContext, buildTestApp, call, createApplication } from './helpers.js';
import { type TestProvider, startTestProvider } from './oidc-provider.js';
import type { ConsoleOidcSettings } from '../src/modules/console/console-oidc.service.js';
import { ROLES } from '../src/roles.js';

const CLIENT_ID = 'tessera-console';
const CLIENT_SECRET = 'a client secret of the console, 32+ characters long';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A browser in miniature: one cookie jar per origin, redirects followed by hand. */
class Browser {
  readonly jars = new Map<string, Map<string, string>>();

  async get(url: string): Promise<Response> {
    const jar = this.jarOf(url);
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const separator = pair!.indexOf('=');
      const name = pair!.slice(0, separator);
      const value = pair!.slice(separator + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  }

  /** Follows redirects from `url` until one leads to a URL starting with `stop`; returns it. */
  async followUntil(url: string, stop: string): Promise<string> {
    let next = url;
    for (let hop = 0; hop < 12; hop++) {
      const response = await this.get(next);
      const location = response.headers.get('location');
      if (location === null) {
        throw new Error(`stopped at ${next}: ${response.status} ${await response.text()}`);
      }
      const target = new URL(location, next).href;
      if (target.startsWith(stop)) return target;
      next = target;
    }
    throw new Error('no end within 12 redirects');
  }

  cookie(url: string, name: string): string | undefined {
    return this.jarOf(url).get(name);
  }

  private jarOf(url: string): Map<string, string> {
    const origin = new URL(url).origin;
    if (!this.jars.has(origin)) this.jars.set(origin, new Map());
    return this.jars.get(origin)!;
  }
}

describe('console sign-in through an OpenID provider', () => {
  let provider: TestProvider;
  let ctx: TestContext;
  let base: string;
  let callbackUri: string;
  let settings: ConsoleOidcSettings;
  /** Every callback URL and code the tests saw: none may appear in a log line. */
  const seen = new Set<string>();

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    callbackUri = `${base}/console/oidc/callback`;
    provider = await startTestProvider({
      webClients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: callbackUri }],
    });
    const accounts: [string, Record<string, unknown>][] = [
      ['ada', { name: 'Ada Lovelace', roles: [...ROLES], applications: ['*'] }],
      [
        'bob',
        {
          email: 'bob@example.test',
          roles: ['users:read', 'console-user', 'admin'],
          applications: ['shop-web'],
        },
      ],
      ['gil', { name: 'Gil', roles: ['tessera-auditors'], applications: '*' }],
      ['eve', { name: 'Eve', applications: ['*'] }],
      ['zed', { name: 'Zed', roles: ['admin', 'superuser'], applications: ['*'] }],
      ['nan', { name: 'Nan', roles: ['users:read'] }],
    ];
    for (const [id, claims] of accounts) provider.accounts.set(id, { sub: `sub-${id}`, ...claims });
    settings = {
      issuer: provider.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: callbackUri,
      providerName: 'Example SSO',
      scopes: ['openid', 'profile', 'email'],
      rolesClaim: 'roles',
      roleMap: new Map([['tessera-auditors', ['events:read', 'keys:read'] as const]]),
      applicationsClaim: 'applications',
      allowHttp: true,
    };
    ctx = await buildTestApp({ consoleOidc: settings });
    await createApplication(ctx, { client_id: 'shop-web' });
    await ctx.app.listen({ port, host: '127.0.0.1' });
  });

  after(async () => {
    const text = ctx.logs.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of [CLIENT_SECRET, ...seen]) {
      assert.ok(!text.includes(secret), 'a client secret, code or state appears in the logs');
    }
    assert.doesNotMatch(text, /eyJ[A-Za-z0-9_-]{10,}\.eyJ/, 'a JWT appears in the logs');
    await ctx.close();
    await provider.close();
  });

  /** Clicks "Sign in with …" and logs in at the provider as `account`; the callback URL. */
  async function reachCallback(browser: Browser, account: string): Promise<string> {
    provider.nextAccount = account;
    const start = await browser.get(`${base}/console/oidc/start`);
    assert.equal(start.status, 303);
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(authorize.origin, provider.issuer);
    const callback = await browser.followUntil(authorize.href, callbackUri);
    const parameters = new URL(callback).searchParams;
    for (const name of ['code', 'state']) seen.add(parameters.get(name)!);
    return callback;
  }

  /** The whole sign-in; the callback's response and its URL. */
  async function signIn(browser: Browser, account: string) {
    const callback = await reachCallback(browser, account);
    return { callback, response: await browser.get(callback) };
  }

  function sessionCookie(browser: Browser): string | undefined {
    return browser.cookie(base, 'tessera_console');
  }

  it('offers "Sign in with <provider>" beside the API key form', async () => {
    const page = await (await new Browser().get(`${base}/console/sign-in`)).text();
    assert.match(
      page,
      /<a class="button" href="\/console\/oidc\/start">Sign in with Example SSO<\/a>/,
    );
    assert.match(page, /name="key"/);
  });

  it('sends the browser to the provider with PKCE (S256), a state and a nonce, bound to it by a cookie', async () => {
    const browser = new Browser();
    const start = await browser.get(`${base}/console/oidc/start`);
    const authorize = new URL(start.headers.get('location')!);
    const query = authorize.searchParams;
    assert.equal(authorize.pathname, '/auth');
    assert.equal(query.get('client_id'), CLIENT_ID);
    assert.equal(query.get('redirect_uri'), callbackUri);
    assert.equal(query.get('response_type'), 'code');
    assert.equal(query.get('code_challenge_method'), 'S256');
    assert.match(query.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
    assert.match(query.get('state')!, /^[A-Za-z0-9_-]{43}$/);
    assert.match(query.get('nonce')!, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(query.get('scope')!.split(' ').sort(), ['email', 'openid', 'profile']);
    const cookie = start.headers
      .getSetCookie()
      .find((line) => line.startsWith('tessera_console_oidc='))!;
    assert.match(cookie, /; Path=\/console\/oidc/);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Lax/);
    assert.match(cookie, /; Max-Age=600/);
  });

  it('signs an operator in: the mapped roles open their pages, the session cookie is HttpOnly and Strict', async () => {
    const browser = new Browser();
    const { response } = await signIn(browser, 'ada');
    assert.equal(response.status, 200);
    const page = await response.text();
    // A page whose own refresh goes on (a redirect would not carry the Strict cookie).
    assert.match(page, /<meta http-equiv="refresh" content="0; url=\/console" \/>/);
    assert.match(page, /Welcome, Ada Lovelace/);
    const cookie = response.headers
      .getSetCookie()
      .find((line) => line.startsWith('tessera_console='))!;
    assert.match(cookie, /; Path=\/console/);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Strict/);
    // The sign-in cookie is spent.
    assert.equal(browser.cookie(base, 'tessera_console_oidc'), undefined);

    const landing = await browser.get(`${base}/console`);
    assert.equal(landing.status, 303);
    assert.equal(landing.headers.get('location'), '/console/applications');
    const applications = await browser.get(`${base}/console/applications`);
    assert.equal(applications.status, 200);
    const text = await applications.text();
    assert.match(text, /Signed in as\s*<a[^>]*><strong>Ada Lovelace<\/strong>/);
    for (const label of ['API keys', 'Events', 'Webhooks', 'Signing keys']) {
      assert.match(text, new RegExp(`>${label}</a`));
    }
  });

  it('limits the session to the mapped roles and applications', async () => {
    const browser = new Browser();
    const { response } = await signIn(browser, 'bob');
    assert.equal(response.status, 200);
    // users:read on shop-web only: it lands on that application's users.
    const landing = await browser.get(`${base}/console`);
    assert.equal(landing.headers.get('location'), '/console/applications/shop-web/users');
    assert.equal((await browser.get(`${base}/console/applications/shop-web/users`)).status, 200);
    const page = await (await browser.get(`${base}/console/account`)).text();
    assert.match(page, /<h1>You <span class="subtle">bob@example\.test<\/span><\/h1>/);
    assert.match(page, /<li class="chip">users:read<\/li>/);
    assert.doesNotMatch(page, /console-user|>admin</);
    assert.match(page, /<dt>Applications<\/dt>\s*<dd>shop-web<\/dd>/);
    assert.match(page, /<dd class="mono">sub-bob<\/dd>/);
    // Values of the claim that are not Tessera roles ("admin") give nothing.
    for (const path of [
      '/console/api-keys',
      '/console/applications',
      '/console/events',
      '/console/applications/other-app/users',
      '/console/applications/shop-web/users/new',
    ]) {
      assert.equal((await browser.get(`${base}${path}`)).status, 403, path);
    }
  });

  it('maps a value of the roles claim (a group) to roles through the role map, and "*" to every application', async () => {
    const browser = new Browser();
    await signIn(browser, 'gil');
    const landing = await browser.get(`${base}/console`);
    assert.equal(landing.headers.get('location'), '/console/api-keys');
    assert.equal((await browser.get(`${base}/console/events`)).status, 200);
    assert.equal((await browser.get(`${base}/console/applications`)).status, 403);
  });

  it('records what an operator changes with the operator as the actor', async () => {
    const browser = new Browser();
    await signIn(browser, 'ada');
    const page = await (await browser.get(`${base}/console/api-keys`)).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const sessionValue = sessionCookie(browser)!;
    const created = await fetch(`${base}/console/api-keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: `tessera_console=${sessionValue}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: base,
      },
      body: new URLSearchParams({ _csrf: csrf, name: 'made by ada', roles: 'users:read' }),
    });
    assert.ok(created.status < 400, `creating a key answered ${created.status}`);
    const events = (await call(ctx, 'GET', '/events?type=api_key.created&limit=1000')).json<{
      items: {
        actor: { type: string; id: string };
        changes: { member: string; after: unknown }[];
      }[];
    }>().items;
    const made = events.find((event) =>
      event.changes.some((change) => change.member === 'name' && change.after === 'made by ada'),
    );
    assert.deepEqual(made?.actor, { type: 'operator', id: 'sub-ada' });
  });

  it('ends the session at sign-out', async () => {
    const browser = new Browser();
    await signIn(browser, 'ada');
    const page = await (await browser.get(`${base}/console/account`)).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const sessionValue = sessionCookie(browser)!;
    const out = await fetch(`${base}/console/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: `tessera_console=${sessionValue}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: base,
      },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    assert.equal(out.status, 303);
    const after = await fetch(`${base}/console/account`, {
      redirect: 'manual',
      headers: { cookie: `tessera_console=${sessionValue}` },
    });
    assert.equal(after.status, 303);
    assert.match(after.headers.get('location')!, /^\/console\/sign-in/);
  });

  /** A refused callback: its status and page, and no session for the browser. */
  async function assertRefused(
    browser: Browser,
    response: Response,
    status: number,
    words: RegExp,
  ) {
    assert.equal(response.status, status);
    const page = await response.text();
    assert.match(page, /<h1>Sign-in failed<\/h1>/);
    assert.match(page, words);
    assert.match(page, /Nobody was signed in/);
    assert.equal(sessionCookie(browser), undefined);
    assert.equal(
      (await browser.get(`${base}/console`)).headers.get('location'),
      '/console/sign-in',
    );
  }

  it('refuses a callback whose state was tampered with', async () => {
    const browser = new Browser();
    const callback = new URL(await reachCallback(browser, 'ada'));
    callback.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    await assertRefused(
      browser,
      await browser.get(callback.href),
      400,
      /not one this console is waiting for/,
    );
  });

  it('refuses a callback without a state', async () => {
    const browser = new Browser();
    const callback = new URL(await reachCallback(browser, 'ada'));
    callback.searchParams.delete('state');
    await assertRefused(
      browser,
      await browser.get(callback.href),
      400,
      /not one this console is waiting for/,
    );
  });

  it('accepts a callback once: the same answer replayed, with its cookie, signs nobody in', async () => {
    const browser = new Browser();
    const callback = await reachCallback(browser, 'ada');
    const binding = browser.cookie(base, 'tessera_console_oidc')!;
    assert.equal((await browser.get(callback)).status, 200);
    // Whoever holds the callback URL and the browser's sign-in cookie replays them.
    const replayer = new Browser();
    replayer.jars.set(base, new Map([['tessera_console_oidc', binding]]));
    await assertRefused(
      replayer,
      await replayer.get(callback),
      400,
      /already used, has expired, or was never asked for/,
    );
  });

  it('finishes on another instance of the same database a sign-in begun on one, once', async () => {
    const other = await buildTestApp({ store: ctx.store, consoleOidc: settings });
    try {
      const otherPort = await freePort();
      await other.app.listen({ port: otherPort, host: '127.0.0.1' });
      const otherBase = `http://127.0.0.1:${otherPort}`;
      const browser = new Browser();
      const callback = new URL(await reachCallback(browser, 'ada'));
      // The load balancer sends the provider's answer to the other instance.
      const elsewhere = `${otherBase}${callback.pathname}${callback.search}`;
      browser.jars.set(otherBase, new Map(browser.jars.get(base)));
      const response = await browser.get(elsewhere);
      assert.equal(response.status, 200);
      assert.equal((await browser.get(`${otherBase}/console/applications`)).status, 200);
      // Taken there, it is gone here too.
      browser.jars.get(base)!.delete('tessera_console');
      const replay = await browser.get(callback.href);
      assert.equal(replay.status, 400);
    } finally {
      await other.app.close();
    }
  });

  it('refuses a callback in a browser other than the one that began the sign-in (login CSRF)', async () => {
    const victim = new Browser();
    const callback = await reachCallback(new Browser(), 'zed');
    await assertRefused(victim, await victim.get(callback), 400, /begun in another browser/);
  });

  it('refuses a callback that comes more than 10 minutes after the sign-in began', async () => {
    const browser = new Browser();
    const callback = await reachCallback(browser, 'ada');
    ctx.clock.advance(10 * 60_000 + 1);
    await assertRefused(browser, await browser.get(callback), 400, /took too long/);
  });

  it('refuses an ID token with another nonce', async () => {
    const browser = new Browser();
    const callback = await reachCallback(browser, 'ada');
    provider.idTokenChanges = { claims: { nonce: 'a-nonce-this-console-never-sent' } };
    try {
      await assertRefused(browser, await browser.get(callback), 401, /nonce/);
    } finally {
      provider.idTokenChanges = null;
    }
  });

  it('refuses an ID token issued for another audience', async () => {
    const browser = new Browser();
    const callback = await reachCallback(browser, 'ada');
    provider.idTokenChanges = { claims: { aud: 'some-other-client', azp: undefined } };
    try {
      await assertRefused(browser, await browser.get(callback), 401, /aud/);
    } finally {
      provider.idTokenChanges = null;
    }
  });

  it('refuses an ID token from another issuer, an expired one, and one signed by a key not in the JWKS', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const stranger = { ...(await exportJWK(privateKey)), kid: 'rsa-1' };
    const now = Math.floor(Date.now() / 1000);
    const cases: [Record<string, unknown>, RegExp, typeof stranger | undefined][] = [
      [{ iss: 'https://idp.example.test' }, /iss/, undefined],
      [{ iat: now - 7200, exp: now - 3600 }, /exp|timestamp/, undefined],
      [{}, /signature/, stranger],
    ];
    for (const [claims, words, signingKey] of cases) {
      const browser = new Browser();
      const callback = await reachCallback(browser, 'ada');
      provider.idTokenChanges = { claims, ...(signingKey ? { signingKey } : {}) };
      try {
        await assertRefused(browser, await browser.get(callback), 401, words);
      } finally {
        provider.idTokenChanges = null;
      }
    }
  });

  it('shows the provider’s error (the person cancelled) and signs nobody in', async () => {
    const browser = new Browser();
    const callback = new URL(await reachCallback(browser, 'ada'));
    const error = new URL(callbackUri);
    error.searchParams.set('error', 'access_denied');
    error.searchParams.set('error_description', 'End-User aborted interaction');
    error.searchParams.set('state', callback.searchParams.get('state')!);
    error.searchParams.set('iss', provider.issuer);
    await assertRefused(
      browser,
      await browser.get(error.href),
      401,
      /Example SSO did not sign you in \(access_denied: End-User aborted interaction\)/,
    );
  });

  it('refuses an account whose ID token lacks the roles claim, or the applications claim', async () => {
    let browser = new Browser();
    await assertRefused(
      browser,
      (await signIn(browser, 'eve')).response,
      403,
      /has no &quot;roles&quot; claim|has no "roles" claim/,
    );
    browser = new Browser();
    await assertRefused(
      browser,
      (await signIn(browser, 'nan')).response,
      403,
      /has no &quot;applications&quot; claim|has no "applications" claim/,
    );
  });

  it('refuses an account whose roles claim holds no Tessera role', async () => {
    const browser = new Browser();
    await assertRefused(
      browser,
      (await signIn(browser, 'zed')).response,
      403,
      /carries no Tessera role/,
    );
  });

  it('marks the cookies Secure when the console is not on a plain-HTTP loopback address', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/console/oidc/start',
      headers: { host: 'iam.example.com' },
    });
    assert.equal(response.statusCode, 303);
    assert.match(String(response.headers['set-cookie']), /tessera_console_oidc=[^;]+;.*; Secure/);
  });

  it('keeps API-key sign-in', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: {
        host: '127.0.0.1:8080',
        origin: 'http://127.0.0.1:8080',
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: new URLSearchParams({ key: ctx.adminKey }).toString(),
    });
    assert.equal(response.statusCode, 303);
    assert.match(String(response.headers['set-cookie']), /tessera_console=/);
  });
});

describe('console sign-in through an OpenID provider that cannot be reached', () => {
  it('says so on a page and signs nobody in; Tessera serves all the same', async () => {
    const port = await freePort();
    const ctx = await buildTestApp({
      consoleOidc: {
        issuer: `http://127.0.0.1:${port}`,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        redirectUri: 'http://127.0.0.1:8080/console/oidc/callback',
        providerName: 'Example SSO',
        scopes: ['openid'],
        rolesClaim: 'roles',
        roleMap: new Map(),
        applicationsClaim: null,
        allowHttp: true,
      },
    });
    try {
      const signIn = await ctx.app.inject({ method: 'GET', url: '/console/sign-in' });
      assert.equal(signIn.statusCode, 200);
      assert.match(signIn.body, /Sign in with Example SSO/);
      const start = await ctx.app.inject({ method: 'GET', url: '/console/oidc/start' });
      assert.equal(start.statusCode, 502);
      assert.match(start.body, /Example SSO \(http:\/\/127\.0\.0\.1:\d+\) could not be reached/);
      assert.equal(start.headers['set-cookie'], undefined);
    } finally {
      await ctx.close();
    }
  });
});
