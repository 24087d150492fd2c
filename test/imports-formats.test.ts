// tessera-test: both-stores
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { call, createApplication, seg, useTestApp, userPath, type TestContext } from './helpers.js';
import { importErrors, runImport } from './import-kit.js';

const CLIENT = 'billing-web';

function fixture(name: string): string {
  return readFileSync(new URL(`./fixtures/imports/${name}`, import.meta.url), 'utf8');
}

async function userOf(ctx: TestContext, provider: string, identifier: string) {
  const response = await call(ctx, 'GET', userPath(CLIENT, provider, identifier));
  assert.equal(response.statusCode, 200, `${provider}/${identifier}: ${response.body}`);
  return response.json<{
    name: string;
    email: string;
    locale: string;
    avatar: string | null;
    roles: string[];
    active: boolean;
  }>();
}

describe('format=auth0: an Auth0 user export', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  it('imports the users it can, with their providers, roles and profiles, and reports the others', async () => {
    const job = await runImport(ctx, CLIENT, fixture('auth0-users.ndjson'), '?format=auth0');
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(job.counts, {
      read: 13,
      created: 8,
      updated: 0,
      unchanged: 1,
      skipped: 0,
      invalid: 4,
    });
    const ada = await userOf(ctx, 'google_oauth2', '108234823498234');
    assert.deepEqual(
      [ada.name, ada.email, ada.locale, ada.avatar, ada.roles, ada.active],
      [
        'Ada Lovelace',
        'ada@example.com',
        'en-GB',
        'https://lh3.googleusercontent.com/a/ada',
        ['admin', 'billing:read'],
        true,
      ],
    );
    assert.equal((await userOf(ctx, 'apple_oauth2', '001234.abcd')).name, 'Grace Hopper');
    assert.deepEqual((await userOf(ctx, 'microsoft_oauth2', '8f3e2a1b')).roles, ['auditor']);
    assert.deepEqual((await userOf(ctx, 'acme_saml', 'Acme-SAML|alan.kay@acme.example')).roles, [
      'admin',
    ]);
    // A numeric GitHub id becomes text; no name: the nickname.
    assert.equal((await userOf(ctx, 'github_oauth2', '583231')).name, 'octocat');
    const zoe = await userOf(ctx, 'google_oauth2', '200000000000001');
    assert.deepEqual([zoe.name, zoe.locale], ['Zoë Ünïcödé 請', 'zh-Hant-TW']);
    // Several identities: the one user_id names.
    await userOf(ctx, 'google_oauth2', '300000000000002');
    // Blocked: inactive; no name: the e-mail; a locale that is no tag: en.
    const blocked = await userOf(ctx, 'google_oauth2', '500000000000004');
    assert.deepEqual(
      [blocked.active, blocked.name, blocked.locale],
      [false, 'blocked@example.com', 'en'],
    );
    const errors = await importErrors(ctx, job.id);
    assert.deepEqual(
      errors.map((error) => [error.line, error.pointer]),
      [
        [8, '/identities/0/provider'],
        [9, '/email'],
        [12, '/identities/0/provider'],
        [13, '/identities'],
      ],
    );
    assert.match(errors[0]!.detail, /Auth0's own database/);
    assert.match(errors[2]!.detail, /provider_map=Oddity Connect:/);
  });

  it('takes provider_map over the defaults, and runs again with nothing to change', async () => {
    const again = await runImport(ctx, CLIENT, fixture('auth0-users.ndjson'), '?format=auth0');
    assert.deepEqual([again.counts.unchanged, again.counts.invalid], [9, 4]);
    const mapped = await runImport(
      ctx,
      CLIENT,
      fixture('auth0-users.ndjson'),
      `?format=auth0&provider_map=${seg('auth0:corp_oidc,Oddity Connect:oddity_oauth2')}`,
    );
    assert.deepEqual([mapped.counts.created, mapped.counts.invalid], [2, 2]);
    assert.equal((await userOf(ctx, 'corp_oidc', '65f0c0ffee')).name, 'Password User');
    assert.equal((await userOf(ctx, 'oddity_oauth2', '1')).name, 'Odd Provider');
  });
});

describe('format=keycloak: a Keycloak realm export', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  it('reads the users of the document as it streams, with their client and realm roles', async () => {
    const job = await runImport(ctx, CLIENT, fixture('keycloak-realm.json'), '?format=keycloak', {
      contentType: 'application/json',
    });
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(job.counts, {
      read: 11,
      created: 5,
      updated: 0,
      unchanged: 1,
      skipped: 0,
      invalid: 5,
    });
    const ada = await userOf(ctx, 'google_oauth2', '108234823498234');
    assert.deepEqual(
      [ada.name, ada.locale, ada.roles, ada.active],
      ['Ada Lovelace', 'en-GB', ['admin', 'auditor'], true],
    );
    const grace = await userOf(ctx, 'microsoft_oauth2', '00000000-0000-0000-a1b2-c3d4e5f60708');
    assert.deepEqual([grace.name, grace.active, grace.roles], ['Grace', false, ['viewer']]);
    const alan = await userOf(ctx, 'acme_saml', 'alan.kay@acme.example');
    assert.deepEqual([alan.name, alan.locale, alan.roles], ['alan.kay', 'de', ['auditor']]);
    // Two identities: the first with a label.
    const zoe = await userOf(ctx, 'github_oauth2', '583231');
    assert.deepEqual([zoe.name, zoe.roles], ['Zoë Ünïcödé 請', ['admin', 'viewer']]);
    assert.equal((await userOf(ctx, 'apple_oauth2', '001234.abcd')).name, 'Only-Lastname');
    assert.deepEqual(
      (await importErrors(ctx, job.id)).map((error) => [error.line, error.pointer]),
      [
        [5, '/federatedIdentities'],
        [6, '/email'],
        [7, '/federatedIdentities/0/identityProvider'],
        [8, ''],
        [9, '/realmRoles/0'],
      ],
    );
  });

  it('takes one user representation a line as NDJSON too, and another client for roles', async () => {
    const document = JSON.parse(fixture('keycloak-realm.json')) as { users: unknown[] };
    const body = `${JSON.stringify(document.users[1])}\n`;
    const job = await runImport(ctx, CLIENT, body, '?format=keycloak&keycloak_client=account');
    assert.deepEqual([job.counts.read, job.counts.updated], [1, 1]);
    const grace = await userOf(ctx, 'microsoft_oauth2', '00000000-0000-0000-a1b2-c3d4e5f60708');
    assert.deepEqual(grace.roles, []);
  });
});
