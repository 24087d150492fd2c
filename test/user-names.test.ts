// tessera-test: both-stores
// SCIM userNames are unique under the application's SCIM provider regardless of ASCII case, and
// the database decides it: for every door (SCIM, the API, the console), under concurrency, and
// when the application's SCIM provider changes. Identities of other providers stay
// case-sensitive (an identifier is any Unicode, compared byte for byte).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { ConsoleClient } from './console-client.js';
import { type TestContext, call, createApplication, useTestApp, userBody } from './helpers.js';

const SCIM = 'okta_scim';

/** Every spelling of `word` in upper and lower case: 2^n of them for n letters. */
function caseVariants(word: string): string[] {
  return Array.from({ length: 2 ** word.length }, (_, bits) =>
    Array.from(word, (letter, index) =>
      (bits >> index) & 1 ? letter.toUpperCase() : letter.toLowerCase(),
    ).join(''),
  );
}

function scim(
  ctx: TestContext,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT',
  path: string,
  body?: unknown,
): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method,
    url: `/scim/v2/hr${path}`,
    headers: {
      authorization: `Bearer ${ctx.adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

const scimUser = (userName: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName,
  emails: [{ value: `${userName}@example.com`, primary: true }],
});

type Door = 'scim' | 'api' | 'console';
type Outcome = { door: Door; created: boolean; response: LightMyRequestResponse };

/** Creates `identifier` of the SCIM provider through `door`. */
async function createThrough(
  ctx: TestContext,
  door: Door,
  identifier: string,
  browser: ConsoleClient,
): Promise<Outcome> {
  if (door === 'scim') {
    const response = await scim(ctx, 'POST', '/Users', scimUser(identifier));
    return { door, created: response.statusCode === 201, response };
  }
  if (door === 'api') {
    const response = await call(ctx, 'POST', '/applications/hr/users', {
      body: userBody({ provider: SCIM, identifier, roles: [], scopes: [] }),
    });
    return { door, created: response.statusCode === 201, response };
  }
  const response = await browser.post('/console/applications/hr/users', {
    provider: SCIM,
    identifier,
    name: 'Racer',
    email: 'racer@example.com',
    locale: 'en',
  });
  return { door, created: response.statusCode === 303, response };
}

/** The conflict each door answers with. */
function assertConflict({ door, response }: Outcome): void {
  assert.equal(response.statusCode, 409, `${door}: ${response.body}`);
  if (door === 'scim') {
    assert.equal(response.json<{ scimType: string }>().scimType, 'uniqueness');
  } else if (door === 'api') {
    assert.equal(response.headers['content-type'], 'application/problem+json');
    assert.match(response.json<{ detail: string }>().detail, /differs from this one only in case/);
  } else {
    assert.match(response.body, /differs from this one only in case/);
  }
}

async function findByUserName(ctx: TestContext, userName: string) {
  const found = await scim(
    ctx,
    'GET',
    `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`,
  );
  assert.equal(found.statusCode, 200);
  return found.json<{ totalResults: number; Resources: { userName: string }[] }>();
}

describe('SCIM userNames are the database’s to keep unique', () => {
  const ctx = useTestApp({}, async (app) => {
    await createApplication(app, { client_id: 'hr', scim_provider: SCIM });
  });

  async function signedIn(): Promise<ConsoleClient> {
    const browser = new ConsoleClient(ctx);
    assert.equal((await browser.signIn(ctx.adminKey)).statusCode, 303);
    await browser.get('/console/applications/hr/users/new');
    return browser;
  }

  for (const word of ['race', 'bike', 'code']) {
    it(`of 16 concurrent creates of "${word}" in every case, through SCIM, the API and the console, exactly one succeeds`, async () => {
      const browser = await signedIn();
      const doors: Door[] = ['scim', 'api', 'console'];
      const outcomes = await Promise.all(
        caseVariants(word).map((identifier, n) =>
          createThrough(ctx, doors[n % doors.length]!, identifier, browser),
        ),
      );
      assert.equal(outcomes.length, 16);
      const created = outcomes.filter((outcome) => outcome.created);
      assert.equal(
        created.length,
        1,
        outcomes.map((o) => `${o.door} ${o.response.statusCode}`).join(', '),
      );
      for (const outcome of outcomes.filter((each) => !each.created)) assertConflict(outcome);
      assert.equal((await findByUserName(ctx, word.toUpperCase())).totalResults, 1);
    });
  }

  it('refuses an API create of BOB after SCIM created Bob, so userName eq "bob" finds one user', async () => {
    assert.equal((await scim(ctx, 'POST', '/Users', scimUser('Bob'))).statusCode, 201);
    const api = await call(ctx, 'POST', '/applications/hr/users', {
      body: userBody({ provider: SCIM, identifier: 'BOB', roles: [], scopes: [] }),
    });
    assertConflict({ door: 'api', created: false, response: api });
    const found = await findByUserName(ctx, 'bob');
    assert.deepEqual(
      found.Resources.map((user) => user.userName),
      ['Bob'],
    );
  });

  it('refuses a SCIM rename (PUT or PATCH) onto another case of a taken userName, and frees the old name', async () => {
    const dana = (await scim(ctx, 'POST', '/Users', scimUser('dana'))).json<{ id: string }>();
    const erin = (await scim(ctx, 'POST', '/Users', scimUser('erin'))).json<{ id: string }>();
    const put = await scim(ctx, 'PUT', `/Users/${erin.id}`, scimUser('DANA'));
    assertConflict({ door: 'scim', created: false, response: put });
    const patch = await scim(ctx, 'PATCH', `/Users/${erin.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'userName', value: 'Dana' }],
    });
    assertConflict({ door: 'scim', created: false, response: patch });
    // dana becomes dana.old: DANA is free again.
    const renamed = await scim(ctx, 'PATCH', `/Users/${dana.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'userName', value: 'dana.old' }],
    });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal((await scim(ctx, 'PUT', `/Users/${erin.id}`, scimUser('DANA'))).statusCode, 200);
  });

  it('keeps identities of other providers case-sensitive: google_oauth2 Bob and bob are two users', async () => {
    for (const identifier of ['Kim', 'kim', 'KIM']) {
      const response = await call(ctx, 'POST', '/applications/hr/users', {
        body: userBody({ provider: 'google_oauth2', identifier }),
      });
      assert.equal(response.statusCode, 201, response.body);
    }
  });

  it('refuses to make a provider whose users differ only in case the SCIM provider, naming them', async () => {
    for (const identifier of ['Lee', 'LEE', 'max']) {
      const response = await call(ctx, 'POST', '/applications/hr/users', {
        body: userBody({ provider: 'entra_scim', identifier }),
      });
      assert.equal(response.statusCode, 201, response.body);
    }
    const refused = await call(ctx, 'PATCH', '/applications/hr', {
      body: { scim_provider: 'entra_scim' },
    });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(
      refused.json<{ detail: string }>().detail,
      /"entra_scim" cannot be the SCIM provider of application "hr": .*\("LEE", "Lee"\)/,
    );
    const application = await call(ctx, 'GET', '/applications/hr');
    assert.equal(application.json<{ scim_provider: string }>().scim_provider, SCIM);
    // With LEE gone, the move goes through; okta_scim's users are then free of the rule.
    const lee = await call(ctx, 'DELETE', '/applications/hr/users/entra_scim/LEE');
    assert.equal(lee.statusCode, 204);
    const moved = await call(ctx, 'PATCH', '/applications/hr', {
      body: { scim_provider: 'entra_scim' },
    });
    assert.equal(moved.statusCode, 200, moved.body);
    const freed = await call(ctx, 'POST', '/applications/hr/users', {
      body: userBody({ provider: SCIM, identifier: 'bOB', roles: [], scopes: [] }),
    });
    assert.equal(freed.statusCode, 201, freed.body);
    const held = await call(ctx, 'POST', '/applications/hr/users', {
      body: userBody({ provider: 'entra_scim', identifier: 'MAX' }),
    });
    assert.equal(held.statusCode, 409, held.body);
    // Back to okta_scim: Bob and bOB now differ only in case.
    const back = await call(ctx, 'PATCH', '/applications/hr', { body: { scim_provider: SCIM } });
    assert.equal(back.statusCode, 409, back.body);
  });
});
