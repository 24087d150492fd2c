// tessera-test: both-stores
// The admin console over HTTP (inject): sessions, CSRF, the pages' main tasks, field errors
// from the API's problem documents, and what a key's roles hide. The browser suite
// (console-browser.test.ts) drives the same pages in Chromium.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ConsoleClient } from './console-client.js';
import { WebhookReceiver } from './webhook-receiver.js';
import { type TestContext, buildTestApp, call, createApplication, createUser } from './helpers.js';

describe('admin console', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
  });
  after(() => ctx.close());

  async function signedIn(key = ctx.adminKey): Promise<ConsoleClient> {
    const client = new ConsoleClient(ctx);
    const response = await client.signIn(key);
    assert.equal(response.statusCode, 303, response.body);
    await client.get('/console/applications');
    return client;
  }

  describe('sessions', () => {
    it('sends a browser without a session to sign in, under a strict CSP', async () => {
      const response = await ctx.app.inject({ method: 'GET', url: '/console/applications' });
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/console/sign-in');
      const page = await ctx.app.inject({ method: 'GET', url: '/console/sign-in' });
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-security-policy']), /default-src 'self'/);
      assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
      assert.equal(page.headers['x-frame-options'], 'DENY');
      assert.doesNotMatch(page.body, /<script>|<style>| style="| on[a-z]+="/);
    });

    it('refuses a wrong key next to the field, and sets no cookie', async () => {
      const client = new ConsoleClient(ctx);
      const response = await client.signIn('tsr_not-a-key-at-all-0000000000000000000000000');
      assert.equal(response.statusCode, 401);
      assert.equal(response.headers['set-cookie'], undefined);
      assert.match(response.body, /aria-describedby="field-key-error"/);
      assert.match(response.body, /id="field-key-error">API key does not work/);
    });

    it('signs in with an HttpOnly, SameSite=Strict cookie, Secure unless on plain-HTTP loopback', async () => {
      const loopback = await new ConsoleClient(ctx).signIn(ctx.adminKey);
      const cookie = String(loopback.headers['set-cookie']);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      assert.match(cookie, /Path=\/console/);
      assert.doesNotMatch(cookie, /Secure/);
      const remote = await new ConsoleClient(ctx, 'iam.example.com').signIn(ctx.adminKey);
      assert.equal(remote.statusCode, 303);
      assert.match(String(remote.headers['set-cookie']), /Secure/);
    });

    it('keeps neither the key nor the session id in the store', async () => {
      const client = await signedIn();
      const sessionId = client.cookie!.split('=')[1]!;
      const { createHash } = await import('node:crypto');
      const digest = createHash('sha256').update(sessionId).digest('hex');
      const record = await ctx.store.consoleSessions.findConsoleSession(digest);
      assert.ok(record, 'the session is found by the digest of its id');
      assert.doesNotMatch(JSON.stringify(record), new RegExp(`${sessionId}|${ctx.adminKey}`));
    });

    it('ends a session after 30 minutes idle', async () => {
      const client = await signedIn();
      ctx.clock.advance(29 * 60_000);
      assert.equal((await client.get('/console/applications')).statusCode, 200);
      ctx.clock.advance(30 * 60_000);
      const response = await client.get('/console/applications');
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/console/sign-in?ended=1');
    });

    it('ends a busy session 8 hours after sign-in', async () => {
      const client = await signedIn();
      for (let step = 0; step < 19; step++) {
        ctx.clock.advance(25 * 60_000);
        assert.equal((await client.get('/console/applications')).statusCode, 200);
      }
      ctx.clock.advance(5 * 60_000 - 1);
      assert.equal((await client.get('/console/applications')).statusCode, 200);
      ctx.clock.advance(1);
      assert.equal((await client.get('/console/applications')).statusCode, 303);
    });

    it('ends every session of a key when the key is revoked', async () => {
      const key = await ctx.createKey({ name: 'short-lived' });
      const client = await signedIn(key);
      const record = (await ctx.services.authenticator.authenticate(key))!;
      assert.equal((await call(ctx, 'DELETE', `/api-keys/${record.id}`)).statusCode, 204);
      assert.equal((await client.get('/console/applications')).statusCode, 303);
    });

    it('signs out: the old cookie no longer opens a page', async () => {
      const client = await signedIn();
      const cookie = client.cookie;
      const response = await client.post('/console/sign-out', {});
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/console/sign-in?signed-out=1');
      client.cookie = cookie;
      assert.equal((await client.get('/console/applications')).statusCode, 303);
    });

    it('refuses a POST without the CSRF token, or from another origin, and changes nothing', async () => {
      const client = await signedIn();
      const fields = { client_id: 'csrf-victim', display_name: 'Victim', description: '' };
      const withoutToken = await client.post('/console/applications', fields, { csrf: false });
      assert.equal(withoutToken.statusCode, 403);
      assert.match(withoutToken.body, /CSRF token/);
      const crossSite = await client.post('/console/applications', fields, {
        origin: 'http://evil.example',
      });
      assert.equal(crossSite.statusCode, 403);
      assert.equal((await call(ctx, 'GET', '/applications/csrf-victim')).statusCode, 404);
    });
  });

  describe('applications', () => {
    it('creates, edits and deletes an application through its forms', async () => {
      const client = await signedIn();
      const created = await client.post('/console/applications', {
        client_id: 'console-app',
        display_name: 'Console app',
        description: 'Made in the console',
        mode: 'internal',
        jwt_expiration_in_minutes: '30',
        scim_provider: '',
        external_token_validation: '',
      });
      assert.equal(created.statusCode, 303, created.body);
      assert.equal(created.headers.location, '/console/applications/console-app?notice=created');
      const page = await client.get(created.headers.location!);
      assert.match(page.body, /The application was created/);
      const etag = /name="etag" value="([^"]+)"/.exec(page.body)![1]!;
      const saved = await client.post('/console/applications/console-app', {
        etag,
        display_name: 'Console app',
        description: 'Edited',
        mode: 'external',
        jwt_expiration_in_minutes: '45',
        scim_provider: '',
        external_token_validation: '{"google_oauth2":{"issuer":"https://accounts.google.com"}}',
      });
      assert.equal(saved.statusCode, 303, saved.body);
      const api = await call(ctx, 'GET', '/applications/console-app');
      assert.equal(api.json().mode, 'external');
      assert.equal(api.json().jwt_expiration_in_minutes, 45);
      assert.deepEqual(api.json().external_token_validation, {
        google_oauth2: { issuer: 'https://accounts.google.com' },
      });

      const stale = await client.post('/console/applications/console-app', {
        etag,
        display_name: 'Stale',
        description: '',
      });
      assert.equal(stale.statusCode, 412);
      assert.match(stale.body, /changed this meanwhile/);

      const wrongConfirm = await client.post('/console/applications/console-app/delete', {
        confirm: 'console-ap',
      });
      assert.equal(wrongConfirm.statusCode, 400);
      assert.match(wrongConfirm.body, /id="field-confirm-error"/);
      assert.equal((await call(ctx, 'GET', '/applications/console-app')).statusCode, 200);
      const deleted = await client.post('/console/applications/console-app/delete', {
        confirm: 'console-app',
      });
      assert.equal(deleted.statusCode, 303);
      assert.equal((await call(ctx, 'GET', '/applications/console-app')).statusCode, 404);
    });

    it('shows the API problem document’s field errors next to their fields, and creates nothing', async () => {
      const client = await signedIn();
      const response = await client.post('/console/applications', {
        client_id: 'bad app',
        display_name: '   ',
        description: '',
        mode: 'internal',
        jwt_expiration_in_minutes: '1.5',
        external_token_validation: '{"unclosed": ',
      });
      assert.equal(response.statusCode, 400);
      assert.match(
        response.body,
        /id="field-external_token_validation"\s+name="external_token_validation"\s+aria-describedby="field-external_token_validation-hint field-external_token_validation-error"\s+aria-invalid="true"/,
      );
      assert.match(response.body, /External token validation \(JSON\) must be valid JSON/);
      const schemaErrors = await client.post('/console/applications', {
        client_id: 'bad app',
        display_name: '   ',
        description: '',
        mode: 'internal',
        jwt_expiration_in_minutes: '1.5',
        external_token_validation: '[1, 2]',
      });
      assert.equal(schemaErrors.statusCode, 400);
      for (const name of [
        'client_id',
        'display_name',
        'jwt_expiration_in_minutes',
        'external_token_validation',
      ]) {
        assert.match(schemaErrors.body, new RegExp(`id="field-${name}-error"`), name);
      }
      assert.match(schemaErrors.body, /Access-token lifetime \(minutes\) must be an integer/);
      assert.match(schemaErrors.body, /value="bad app"/, 'what was typed stays in the form');
      assert.equal(
        (await call(ctx, 'GET', '/applications?limit=1000'))
          .json()
          .items.some((application: { client_id: string }) => application.client_id === 'bad app'),
        false,
      );
    });

    it('runs the token dry run and shows which check failed, creating nothing', async () => {
      const client = await signedIn();
      await client.post('/console/applications', {
        client_id: 'dry-run',
        display_name: 'Dry run',
        description: '',
      });
      const empty = await client.post('/console/applications/dry-run/dry-run', { token: '' });
      assert.equal(empty.statusCode, 400);
      assert.match(empty.body, /id="field-token-error">ID token must be at least 1 character long/);
      const garbage = await client.post('/console/applications/dry-run/dry-run', {
        token: 'not.a.jwt',
      });
      assert.equal(garbage.statusCode, 200);
      assert.match(garbage.body, /Failed check: /);
      const users = await call(ctx, 'GET', '/applications/dry-run/users');
      assert.deepEqual(users.json().items, []);
    });

    it('searches by client_id prefix, in keyset pages of 25', async () => {
      for (let n = 0; n < 30; n++) {
        await call(ctx, 'POST', '/applications', {
          body: {
            client_id: `search-${String(n).padStart(2, '0')}`,
            display_name: `S ${n}`,
            description: '',
          },
        });
      }
      await call(ctx, 'POST', '/applications', {
        body: { client_id: 'searchless', display_name: 'Other', description: '' },
      });
      const client = await signedIn();
      const first = await client.get('/console/applications?prefix=search-');
      const shown = (body: string) =>
        [...body.matchAll(/<td>\s*<a href="\/console\/applications\/([^"/]+)"/g)].map((m) => m[1]);
      assert.equal(shown(first.body).length, 25);
      assert.equal(shown(first.body)[0], 'search-00');
      const next = /href="([^"]+)" rel="next"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
      const second = await client.get(next);
      assert.deepEqual(shown(second.body), [
        'search-25',
        'search-26',
        'search-27',
        'search-28',
        'search-29',
      ]);
      assert.doesNotMatch(second.body, /rel="next"/);
      const invalid = await client.get('/console/applications?prefix=%2F');
      assert.equal(invalid.statusCode, 400);
      assert.match(invalid.body, /id="field-prefix-error"/);
    });
  });

  describe('users', () => {
    before(async () => {
      await call(ctx, 'POST', '/applications', {
        body: { client_id: 'people', display_name: 'People', description: '' },
      });
      for (let n = 0; n < 60; n++) {
        await call(ctx, 'POST', '/applications/people/users', {
          body: {
            provider: n % 3 === 0 ? 'azure_saml' : 'google_oauth2',
            identifier: `user-${String(n).padStart(3, '0')}`,
            name: `User ${n}`,
            email: `user${n}@example.com`,
            locale: 'en',
            roles: n % 2 === 0 ? ['even'] : [],
            scopes: [],
          },
        });
      }
    });

    it('filters and pages through users', async () => {
      const client = await signedIn();
      const rows = (body: string) =>
        [...body.matchAll(/<a href="[^"]+">(user-\d+)<\/a>/g)].map((m) => m[1]);
      const first = await client.get('/console/applications/people/users');
      assert.equal(rows(first.body).length, 50);
      const next = /href="([^"]+)" rel="next"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
      assert.equal(rows((await client.get(next)).body).length, 10);
      const filtered = await client.get(
        '/console/applications/people/users?provider=azure_saml&role=even',
      );
      assert.deepEqual(
        rows(filtered.body),
        Array.from({ length: 60 }, (_, n) => n)
          .filter((n) => n % 6 === 0)
          .map((n) => `user-${String(n).padStart(3, '0')}`),
      );
      const invalid = await client.get('/console/applications/people/users?email=not-an-email');
      assert.equal(invalid.statusCode, 400);
      assert.match(invalid.body, /id="field-email-error">E-mail must be a valid e-mail address/);
    });

    it('exports the users the filters match as NDJSON, from a link on the page', async () => {
      const client = await signedIn();
      const page = await client.get(
        '/console/applications/people/users?provider=azure_saml&role=even',
      );
      const href = /href="([^"]+)" download>Export these users/
        .exec(page.body)![1]!
        .replaceAll('&amp;', '&');
      assert.equal(href, '/console/applications/people/users/export?provider=azure_saml&role=even');
      const exported = await client.get(href);
      assert.equal(exported.statusCode, 200);
      assert.equal(exported.headers['content-type'], 'application/x-ndjson; charset=utf-8');
      assert.equal(
        exported.headers['content-disposition'],
        'attachment; filename="people-users.ndjson"',
      );
      assert.deepEqual(
        exported.body
          .trimEnd()
          .split('\n')
          .map((line) => (JSON.parse(line) as { identifier: string }).identifier),
        Array.from({ length: 60 }, (_, n) => n)
          .filter((n) => n % 6 === 0)
          .map((n) => `user-${String(n).padStart(3, '0')}`),
      );
      const invalid = await client.get('/console/applications/people/users/export?email=nope');
      assert.equal(invalid.statusCode, 303);
      assert.equal(invalid.headers.location, '/console/applications/people/users?email=nope');
    });

    it('creates a user, changes roles and scopes as chips, deactivates and deletes it', async () => {
      const client = await signedIn();
      const created = await client.post('/console/applications/people/users', {
        provider: 'google_oauth2',
        identifier: 'CN=Ada, OU=R&D',
        name: 'Ada',
        email: 'ada@example.com',
        locale: 'en-GB',
        avatar: '',
        roles_new: 'admin billing:read',
        scopes_new: 'org:acme',
      });
      assert.equal(created.statusCode, 303, created.body);
      const location = created.headers.location!.split('?')[0]!;
      const page = await client.get(location);
      assert.match(page.body, /value="admin"\s+checked/);
      const etag = /name="etag" value="([^"]+)"/.exec(page.body)![1]!;
      const saved = await client.post(location, {
        etag,
        name: 'Ada King',
        email: 'ada@example.com',
        locale: 'en-GB',
        avatar: '',
        roles: ['billing:read'],
        roles_new: 'auditor',
        scopes: ['org:acme'],
        scopes_new: '',
      });
      assert.equal(saved.statusCode, 303, saved.body);
      const user = await call(
        ctx,
        'GET',
        '/applications/people/users/google_oauth2/CN%3DAda%2C%20OU%3DR%26D',
      );
      assert.deepEqual(user.json().roles, ['billing:read', 'auditor']);
      assert.equal(user.json().name, 'Ada King');

      const badScope = await client.post(location, {
        etag: /name="etag" value="([^"]+)"/.exec((await client.get(location)).body)![1]!,
        name: 'Ada King',
        email: 'ada@example.com',
        locale: 'en-GB',
        scopes_new: 'no-colon',
      });
      assert.equal(badScope.statusCode, 400);
      assert.match(
        badScope.body,
        /id="field-scopes-error">Scopes: must be &lt;dimension&gt;:&lt;value&gt;/,
      );

      assert.equal((await client.post(`${location}/active`, { active: 'false' })).statusCode, 303);
      const inactive = await call(
        ctx,
        'GET',
        '/applications/people/users/google_oauth2/CN%3DAda%2C%20OU%3DR%26D',
      );
      assert.equal(inactive.json().active, false);
      assert.equal((await client.post(`${location}/delete`, { confirm: 'yes' })).statusCode, 303);
      const gone = await call(
        ctx,
        'GET',
        '/applications/people/users/google_oauth2/CN%3DAda%2C%20OU%3DR%26D',
      );
      assert.equal(gone.statusCode, 404);
    });
  });

  describe('keys', () => {
    it('creates a key whose secret is shown once and works, then revokes it', async () => {
      const client = await signedIn();
      const created = await client.post('/console/api-keys', {
        name: 'console made',
        roles: ['users:read'],
        applications: 'people',
        expires_at: '',
      });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.headers['cache-control'], 'no-store');
      const secret = /id="secret"\s+class="mono"\s+value="(tsr_[^"]+)"/.exec(created.body)![1]!;
      assert.equal(
        (await call(ctx, 'GET', '/applications/people/users', { key: secret })).statusCode,
        200,
      );
      const list = await client.get('/console/api-keys');
      assert.doesNotMatch(list.body, new RegExp(secret));
      const id = (await ctx.services.authenticator.authenticate(secret))!.id;
      assert.equal(
        (await client.post(`/console/api-keys/${id}/revoke`, { confirm: 'yes' })).statusCode,
        303,
      );
      assert.equal(
        (await call(ctx, 'GET', '/applications/people/users', { key: secret })).statusCode,
        401,
      );
    });

    it('refuses roles beyond the signed-in key’s own, next to the form', async () => {
      const key = await ctx.createKey({ roles: ['keys:read', 'keys:write'] });
      const client = await signedIn(key);
      const page = await client.get('/console/api-keys');
      assert.doesNotMatch(page.body, /value="users:write"/, 'roles the key lacks are not offered');
      const response = await client.post('/console/api-keys', {
        name: 'escalation',
        roles: ['users:write'],
        applications: '',
      });
      assert.equal(response.statusCode, 403);
    });

    it('rotates a key: a new secret shown once; lists and rotates signing keys', async () => {
      const client = await signedIn();
      const key = await ctx.createKey({ name: 'to rotate', roles: ['users:read'] });
      const id = (await ctx.services.authenticator.authenticate(key))!.id;
      await client.get('/console/api-keys');
      const rotated = await client.post(`/console/api-keys/${id}/rotate`, {});
      assert.equal(rotated.statusCode, 200);
      const secret = /value="(tsr_[^"]+)"/.exec(rotated.body)![1]!;
      assert.notEqual(secret, key);
      assert.ok(await ctx.services.authenticator.authenticate(secret));
      const before = await client.get('/console/signing-keys');
      const rows = (body: string) => (body.match(/<td class="mono">/g) ?? []).length;
      assert.equal((await client.post('/console/signing-keys/rotate', {})).statusCode, 303);
      assert.equal(rows((await client.get('/console/signing-keys')).body), rows(before.body) + 1);
    });
  });

  describe('events', () => {
    it('lists the changes made in the console, by its key, with the API’s filters', async () => {
      const client = await signedIn();
      const created = await client.post('/console/applications', {
        client_id: 'audited',
        display_name: 'Audited',
        description: '',
      });
      assert.equal(created.statusCode, 303, created.body);
      const page = await client.get('/console/events?client_id=audited');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /class="chip">application\.created</);
      assert.match(page.body, /id="event-head"/, 'the newest page follows new events live');
      const none = await client.get('/console/events?client_id=audited&type=user.*');
      assert.doesNotMatch(none.body, /class="chip">application\.created</);
      const invalid = await client.get('/console/events?type=not%20a%20type');
      assert.equal(invalid.statusCode, 400);
      assert.match(invalid.body, /id="field-type-error"/);
    });

    it('answers a live request with the events committed after the last one shown', async () => {
      const client = await signedIn();
      const page = await client.get('/console/events?client_id=audited');
      const live = /hx-get="([^"]+)"/.exec(page.body)![1]!.replaceAll('&amp;', '&');
      const answer = client.get(live);
      await call(ctx, 'PATCH', '/applications/audited', { body: { description: 'Now changed' } });
      const response = await answer;
      assert.equal(response.statusCode, 200);
      assert.match(response.body, /class="chip">application\.updated</);
      assert.match(response.body, /<tbody\s+id="event-head"/, 'and the next live request');
      assert.ok(
        response.body.indexOf('id="event-head"') < response.body.indexOf('application.updated'),
        'new events go on top, under the next live request',
      );
      assert.doesNotMatch(response.body, /class="chip">application\.created</);
    });
    /** The event rows of a page: [time link, type, by, application, resource] as text. */
    function eventRows(body: string) {
      const table = /<table id="events">([\s\S]*?)<\/table>/.exec(body)?.[1] ?? '';
      return [...table.matchAll(/<tr>\s*(<td[\s\S]*?)<\/tr>/g)].map((row) =>
        [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) =>
          cell[1]!
            .replace(/<br \/>/g, ' ')
            .replace(/<[^>]+>/g, '')
            .replace(/\s+/g, ' ')
            .trim(),
        ),
      );
    }

    it('shows events newest first, 50 a page, paged on to older ones and back to the newest', async () => {
      await createApplication(ctx, { client_id: 'paged-events' });
      for (let n = 1; n <= 54; n++) {
        const changed = await call(ctx, 'PATCH', '/applications/paged-events', {
          body: { description: `change ${n}` },
        });
        assert.equal(changed.statusCode, 200);
      }
      const client = await signedIn();
      const first = await client.get('/console/events?client_id=paged-events');
      const rows = eventRows(first.body);
      assert.equal(rows.length, 50);
      assert.equal(rows[0]![1], 'application.updated');
      const times = rows.map((row) => row[0]!);
      assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
      const ids = [...first.body.matchAll(/href="\/console\/events\/(\d+)"/g)].map((m) => m[1]!);
      assert.deepEqual(ids, [...ids].sort().reverse());
      const older = /href="(\/console\/events\?[^"]*before=[^"]+)" rel="next"/
        .exec(first.body)![1]!
        .replaceAll('&amp;', '&');
      const second = await client.get(older);
      const rest = eventRows(second.body);
      assert.equal(rest.length, 5, '54 updates and the creation');
      assert.equal(rest.at(-1)![1], 'application.created');
      assert.doesNotMatch(second.body, /rel="next"/);
      assert.doesNotMatch(second.body, /id="event-head"/, 'only the newest page is live');
      assert.match(second.body, /href="\/console\/events\?client_id=paged-events">Newest</);
    });

    it('names who made each change (the key’s name), and links each event to its resource', async () => {
      const deployer = await ctx.createKey({ name: 'ci-deployer' });
      await call(ctx, 'POST', '/applications', {
        key: deployer,
        body: { client_id: 'named-actors', display_name: 'Named', description: '' },
      });
      const user = await createUser(ctx, 'named-actors', { identifier: 'ada-42' });
      const client = await signedIn();
      const page = await client.get('/console/events?client_id=named-actors');
      const rows = eventRows(page.body);
      assert.deepEqual(
        rows.map((row) => [row[1], row[2]]),
        [
          ['user.created', 'admin'],
          ['application.created', 'ci-deployer'],
        ],
      );
      const deployerId = (await ctx.services.authenticator.authenticate(deployer))!.id;
      assert.doesNotMatch(page.body, new RegExp(`<td>\\s*${deployerId}`), 'no key id as the actor');
      assert.match(
        page.body,
        new RegExp(
          `href="/console/applications/named-actors/users/${String(user.id)}">google_oauth2 · ada-42<`,
        ),
      );
      assert.match(page.body, /href="\/console\/applications\/named-actors">named-actors</);
    });

    it('names the other actors in words: an operator by their subject, the CLI, Tessera itself', async () => {
      await ctx.services.applications.createApplication(
        { client_id: 'by-operator', display_name: 'By operator', description: '' },
        { actor: { type: 'operator', id: 'alice@idp.example' }, requestId: null },
      );
      await ctx.services.applications.createApplication(
        { client_id: 'by-cli', display_name: 'By CLI', description: '' },
        { actor: { type: 'cli', id: null }, requestId: null },
      );
      const client = await signedIn();
      const page = await client.get('/console/events?type=application.created');
      const by = new Map(eventRows(page.body).map((row) => [row[3], row[2]] as const));
      assert.equal(by.get('by-operator'), 'operator alice@idp.example');
      assert.equal(by.get('by-cli'), 'the CLI');
    });

    it('shows one event in full: every change before and after, the request id, and who', async () => {
      await createApplication(ctx, { client_id: 'detailed' });
      const changed = await call(ctx, 'PATCH', '/applications/detailed', {
        body: { display_name: 'Detailed <b>app</b>', jwt_expiration_in_minutes: 42 },
      });
      const requestId = String(changed.headers['x-request-id']);
      const client = await signedIn();
      const list = await client.get('/console/events?client_id=detailed&type=application.updated');
      const href = /href="(\/console\/events\/\d+)"/.exec(list.body)![1]!;
      const detail = await client.get(href);
      assert.equal(detail.statusCode, 200);
      assert.match(detail.body, /<h1>application\.updated<\/h1>/);
      assert.match(detail.body, new RegExp(`<code>${requestId}</code>`));
      assert.match(detail.body, /<th scope="row">display_name<\/th>/);
      assert.match(detail.body, /&quot;Detailed &lt;b&gt;app&lt;\/b&gt;&quot;/, 'escaped, in full');
      assert.match(
        detail.body,
        /<th scope="row">jwt_expiration_in_minutes<\/th>\s*<td><pre>\d+<\/pre><\/td>\s*<td><pre>42<\/pre>/,
      );
      assert.match(detail.body, />admin</);
      assert.equal((await client.get('/console/events/9999999999999999')).statusCode, 404);
      // A key restricted to another application does not see it.
      const other = await signedIn(
        await ctx.createKey({ roles: ['events:read'], applications: ['elsewhere'] }),
      );
      assert.equal((await other.get(href)).statusCode, 404);
    });

    it('shows a user’s history on its page, kept through a SCIM rename, by who made each change', async () => {
      await createApplication(ctx, { client_id: 'historic', scim_provider: 'okta_scim' });
      const okta = await ctx.createKey({ roles: ['users:read', 'users:write'], name: 'okta' });
      const scim = (method: string, path: string, body: unknown) =>
        ctx.app.inject({
          method: method as 'POST',
          url: `/scim/v2/historic${path}`,
          headers: { authorization: `Bearer ${okta}`, 'content-type': 'application/scim+json' },
          payload: JSON.stringify(body),
        });
      const created = await scim('POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'ada@example.com',
        name: { formatted: 'Ada Lovelace' },
        emails: [{ value: 'ada@example.com', primary: true }],
      });
      assert.equal(created.statusCode, 201, created.body);
      const { id } = created.json<{ id: string }>();
      const renamed = await scim('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'userName', value: 'ada.king@example.com' }],
      });
      assert.equal(renamed.statusCode, 200, renamed.body);
      const user = await ctx.services.users.findUser({ clientId: 'historic', id });
      await call(
        ctx,
        'PATCH',
        `/applications/historic/users/${user.provider}/ada.king@example.com`,
        {
          body: { roles: ['auditor'] },
        },
      );
      await createUser(ctx, 'historic', { identifier: 'someone-else' });
      const client = await signedIn();
      const page = await client.get(`/console/applications/historic/users/${id}`);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2 id="history-heading">History<\/h2>/);
      assert.deepEqual(
        eventRows(page.body).map((row) => [row[1], row[2]]),
        [
          ['user.updated', 'admin'],
          ['user.renamed', 'SCIM (okta)'],
          ['user.created', 'SCIM (okta)'],
        ],
      );
      // A key without events:read sees the user but no history.
      const reader = await signedIn(await ctx.createKey({ roles: ['users:read'] }));
      const plain = await reader.get(`/console/applications/historic/users/${id}`);
      assert.equal(plain.statusCode, 200);
      assert.doesNotMatch(plain.body, /history-heading/);
    });
  });

  describe('webhooks', () => {
    it('creates a webhook (secret shown once), replays, disables and deletes it', async () => {
      const client = await signedIn();
      const invalid = await client.post('/console/webhooks', {
        url: 'not a url',
        event_types: '',
        client_ids: '',
        description: '',
      });
      assert.equal(invalid.statusCode, 400);
      assert.match(invalid.body, /id="field-url-error"/);
      assert.match(invalid.body, /id="field-event_types-error"/);
      const created = await client.post('/console/webhooks', {
        url: 'https://hooks.example.com/tessera',
        event_types: 'user.* application.created',
        client_ids: '',
        description: 'CRM sync',
      });
      assert.equal(created.statusCode, 201, created.body);
      assert.match(created.body, /value="whsec_[^"]+"/);
      const list = await client.get('/console/webhooks');
      assert.match(list.body, /https:\/\/hooks\.example\.com\/tessera/);
      assert.doesNotMatch(list.body, /whsec_/, 'the secret is never shown again');
      const location = /href="(\/console\/webhooks\/[^"]+)"/.exec(list.body)![1]!;
      const page = await client.get(location);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /Deliveries, newest first/);
      assert.equal((await client.post(`${location}/replay`, { after: '' })).statusCode, 303);
      assert.equal(
        (await client.post(`${location}/enabled`, { enabled: 'false' })).statusCode,
        303,
      );
      assert.match((await client.get(location)).body, /disabled/);
      const unconfirmed = await client.post(`${location}/delete`, {});
      assert.equal(unconfirmed.statusCode, 400);
      assert.equal((await client.get(location)).statusCode, 200, 'nothing was deleted');
      const confirm = await client.get(`${location}/delete`);
      assert.match(confirm.body, /No event is sent to it any more/);
      assert.match(confirm.body, /name="confirm" value="yes"/);
      assert.equal((await client.post(`${location}/delete`, { confirm: 'yes' })).statusCode, 303);
      assert.equal((await client.get(location)).statusCode, 404);
    });

    it('shows each webhook’s health: a dead receiver reads as failing, a live one as delivering', async () => {
      const delivering = await buildTestApp({
        webhooks: {
          allowInsecure: true,
          timeoutMs: 400,
          dispatcher: {
            pollMs: 50,
            retry: { firstDelayMs: 60_000, maxDelayMs: 60_000, giveUpAfterMs: 600_000 },
          },
        },
      });
      const receiver = await WebhookReceiver.start();
      const closed = createServer();
      await new Promise<void>((ready) => closed.listen(0, '127.0.0.1', ready));
      const deadPort = (closed.address() as AddressInfo).port;
      await new Promise((done) => closed.close(done));
      try {
        for (const [url, description] of [
          [receiver.url, 'live receiver'],
          [`http://127.0.0.1:${deadPort}/hook`, 'dead receiver'],
        ]) {
          const created = await call(delivering, 'POST', '/webhooks', {
            body: { url, event_types: ['application.*'], description },
          });
          assert.equal(created.statusCode, 201, created.body);
        }
        const client = new ConsoleClient(delivering);
        await client.signIn(delivering.adminKey);
        const before = await client.get('/console/webhooks');
        assert.equal(
          (before.body.match(/enabled, nothing sent yet/g) ?? []).length,
          2,
          'nothing attempted yet',
        );
        await createApplication(delivering, { client_id: 'hooked' });
        let body = '';
        const deadline = Date.now() + 15_000;
        while (!/failing since/.test(body) || !/delivering/.test(body)) {
          assert.ok(Date.now() < deadline, `no health shown in time:\n${body}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
          body = (await client.get('/console/webhooks')).body;
        }
        const rows = [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
          row[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '),
        );
        const rowOf = (description: string) => rows.find((row) => row.includes(description))!;
        const dead = rowOf('dead receiver');
        assert.match(dead, /failing since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
        assert.doesNotMatch(dead, /HTTP 2\d\d/);
        // At least the application.created it could not deliver (its own webhook.created too,
        // unless it moved past it before that).
        assert.match(dead, / [1-9]\d* events? $/);
        const live = rowOf('live receiver');
        assert.match(live, /delivering/);
        assert.match(live, /HTTP 204/);
        assert.match(live, /0 events/);
        const deadHref = [...body.matchAll(/href="(\/console\/webhooks\/[^"]+)"/g)].find((link) =>
          body.slice(link.index, link.index + 300).includes('dead receiver'),
        )![1]!;
        const page = await client.get(deadHref);
        assert.match(
          page.body,
          /<dt>Health<\/dt>\s*<dd><span class="status failing"\s*>failing since/,
        );
      } finally {
        await receiver.close();
        await delivering.close();
      }
    });
  });

  describe('where a key lands', () => {
    /** The navigation's links, and the one marked as the current page. */
    function navigation(body: string) {
      const nav = /<nav aria-label="Sections">([\s\S]*?)<\/nav>/.exec(body)?.[1] ?? '';
      const links = [...nav.matchAll(/href="([^"]+)"/g)].map((match) => match[1]);
      const current = /href="([^"]+)"\s+aria-current="page"/.exec(nav)?.[1] ?? null;
      return { links, current };
    }

    it('sends a users key of one application to that application’s users, highlighted as Users', async () => {
      const key = await ctx.createKey({
        roles: ['users:read', 'users:write'],
        applications: ['people'],
      });
      const client = await signedIn(key);
      const home = await client.get('/console');
      assert.equal(home.headers.location, '/console/applications/people/users');
      const users = await client.get(home.headers.location!);
      assert.equal(users.statusCode, 200);
      assert.deepEqual(navigation(users.body), {
        links: ['/console/applications/people/users'],
        current: '/console/applications/people/users',
      });
      const account = await client.get('/console/account');
      assert.doesNotMatch(account.body, /open no console page|None: its roles/);
      assert.match(account.body, /href="\/console\/applications\/people\/users">Users</);
    });

    it('lets a users key of several applications choose among them', async () => {
      const key = await ctx.createKey({
        roles: ['users:read'],
        applications: ['people', 'search-00'],
      });
      const client = await signedIn(key);
      assert.equal((await client.get('/console')).headers.location, '/console/users');
      const choice = await client.get('/console/users');
      assert.match(choice.body, /href="\/console\/applications\/people\/users">people</);
      assert.match(choice.body, /href="\/console\/applications\/search-00\/users">search-00</);
      assert.equal(navigation(choice.body).current, '/console/users');
      const named = await client.get('/console/users?client_id=people');
      assert.equal(named.headers.location, '/console/applications/people/users');
      assert.equal((await client.get('/console/users?client_id=search-01')).statusCode, 403);
      assert.equal((await client.get('/console/users?client_id=%2F')).statusCode, 400);
    });

    it('shows the all-roles key every page on its account page, with no section highlighted but its own', async () => {
      const client = await signedIn();
      const account = await client.get('/console/account');
      assert.doesNotMatch(account.body, /open no console page|None: its roles/);
      for (const page of ['applications', 'api-keys', 'events', 'webhooks', 'signing-keys']) {
        assert.match(account.body, new RegExp(`<li><a href="/console/${page}">`), page);
      }
      assert.equal(navigation(account.body).current, null);
      assert.match(account.body, /href="\/console\/account"\s+aria-current="page"/);
    });

    it('tells a key whose roles open no page so, and only then', async () => {
      const client = await signedIn(await ctx.createKey({ roles: ['tokens:write'] }));
      assert.equal((await client.get('/console')).headers.location, '/console/account');
      const account = await client.get('/console/account');
      assert.match(account.body, /None: its roles \(tokens:write\) are for the API only/);
      assert.deepEqual(navigation(account.body).links, []);
    });
  });

  describe('destructive actions', () => {
    async function keyIdOf(secret: string) {
      return (await ctx.services.authenticator.authenticate(secret))!.id;
    }

    it('asks before revoking an API key, marks the session’s own, and revokes only when confirmed', async () => {
      const client = await signedIn();
      const victim = await ctx.createKey({ name: 'victim', roles: ['users:read'] });
      const id = await keyIdOf(victim);
      const list = await client.get('/console/api-keys');
      assert.match(list.body, /admin <span class="tag">this key<\/span>/);
      assert.match(list.body, new RegExp(`href="/console/api-keys/${id}/revoke"`));
      assert.doesNotMatch(list.body, new RegExp(`action="/console/api-keys/${id}/revoke"`));
      const confirm = await client.get(`/console/api-keys/${id}/revoke`);
      assert.match(confirm.body, /Revoke key “victim”\?/);
      assert.match(confirm.body, /Every request with this key is refused/);
      const unconfirmed = await client.post(`/console/api-keys/${id}/revoke`, {});
      assert.equal(unconfirmed.statusCode, 400);
      assert.match(unconfirmed.body, /nothing was revoked/);
      assert.ok(await ctx.services.authenticator.authenticate(victim), 'still works');
      const revoked = await client.post(`/console/api-keys/${id}/revoke`, { confirm: 'yes' });
      assert.equal(revoked.headers.location, '/console/api-keys?notice=revoked');
      const withRevoked = await client.get('/console/api-keys?include_revoked=true');
      assert.match(
        withRevoked.body,
        new RegExp(`id="key-${id}"[\\s\\S]*?revoked</span><br /><span class="subtle"\\s*>2\\d{3}-`),
        'a revoked key shows when',
      );
    });

    it('refuses to revoke the last administrator key, in the list, the confirmation and the POST', async () => {
      // This app's other all-roles keys are created by tests above; revoke them first.
      const admin = await keyIdOf(ctx.adminKey);
      for (const other of await ctx.services.apiKeys.listAdministratorKeyIds()) {
        if (other !== admin) await call(ctx, 'DELETE', `/api-keys/${other}`);
      }
      const client = await signedIn();
      const list = await client.get('/console/api-keys');
      assert.match(list.body, /last administrator key/);
      assert.doesNotMatch(list.body, new RegExp(`href="/console/api-keys/${admin}/revoke"`));
      const confirm = await client.get(`/console/api-keys/${admin}/revoke`);
      assert.match(confirm.body, /You are signed in with this key/);
      assert.match(confirm.body, /last working key with every role/);
      assert.doesNotMatch(confirm.body, /name="confirm"/);
      const refused = await client.post(`/console/api-keys/${admin}/revoke`, { confirm: 'yes' });
      assert.equal(refused.statusCode, 409);
      assert.match(refused.body, /Create another such key first/);
      assert.equal((await call(ctx, 'GET', '/applications')).statusCode, 200);
    });

    it('ends the session when its own key is revoked from it', async () => {
      const own = await ctx.createKey({ name: 'self-revoking' });
      const client = await signedIn(own);
      const id = await keyIdOf(own);
      await client.get(`/console/api-keys/${id}/revoke`);
      const revoked = await client.post(`/console/api-keys/${id}/revoke`, { confirm: 'yes' });
      assert.equal(revoked.headers.location, '/console/sign-in?revoked=1');
      const signIn = await client.get(revoked.headers.location!);
      assert.match(signIn.body, /You revoked the key this session ran on/);
      assert.equal((await client.get('/console/api-keys')).statusCode, 303);
    });

    it('asks before revoking a signing key, saying its tokens stop verifying and a new key takes over', async () => {
      const client = await signedIn();
      const page = await client.get('/console/signing-keys');
      const kid = /href="\/console\/signing-keys\/([^"/]+)\/revoke"/.exec(page.body)![1]!;
      const active = (await ctx.services.signingKeys.listSigningKeys()).find(
        (key) => key.state === 'active',
      )!;
      const confirm = await client.get(`/console/signing-keys/${active.kid}/revoke`);
      assert.match(confirm.body, /Every access token it signed stops verifying/);
      assert.match(confirm.body, /a new key is created first and signs in its place at once/);
      assert.ok(kid);
      const unconfirmed = await client.post(`/console/signing-keys/${active.kid}/revoke`, {});
      assert.equal(unconfirmed.statusCode, 400);
      assert.equal(
        (await ctx.services.signingKeys.listSigningKeys()).find((key) => key.kid === active.kid)!
          .state,
        'active',
      );
      const revoked = await client.post(`/console/signing-keys/${active.kid}/revoke`, {
        confirm: 'yes',
      });
      assert.equal(revoked.statusCode, 303);
      const after = await ctx.services.signingKeys.listSigningKeys();
      assert.equal(after.find((key) => key.kid === active.kid)!.state, 'revoked');
      assert.ok(after.some((key) => key.state === 'active'));
    });

    it('does not delete a user without the confirmation box ticked', async () => {
      const client = await signedIn();
      const user = (await call(ctx, 'GET', '/applications/people/users?limit=1')).json().items[0];
      const refused = await client.post(`/console/applications/people/users/${user.id}/delete`, {});
      assert.equal(refused.statusCode, 400);
      assert.equal(
        (await client.get(`/console/applications/people/users/${user.id}`)).statusCode,
        200,
      );
    });
  });

  describe('what a key’s roles forbid', () => {
    it('is neither shown nor served', async () => {
      const key = await ctx.createKey({ roles: ['users:read'], applications: ['people'] });
      const client = await signedIn(key);
      const home = await client.get('/console');
      assert.equal(home.headers.location, '/console/applications/people/users');
      const users = await client.get('/console/applications/people/users');
      assert.equal(users.statusCode, 200);
      assert.doesNotMatch(
        users.body,
        /New user|href="\/console\/api-keys"|href="\/console\/applications"/,
      );
      assert.equal((await client.get('/console/applications')).statusCode, 403);
      assert.equal((await client.get('/console/api-keys')).statusCode, 403);
      assert.equal((await client.get('/console/applications/search-00/users')).statusCode, 403);
      const write = await client.post('/console/applications/people/users', { provider: 'x_y' });
      assert.equal(write.statusCode, 403);
    });
  });
});
