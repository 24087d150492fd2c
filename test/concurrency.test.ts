// Concurrent writes to one resource: without If-Match every write applies (last writer wins,
// nothing is refused for having lost a race); read-modify-write changes (PATCH) lose nothing.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  buildTestApp,
  call,
  createApplication,
  createUser,
  type TestContext,
  userBody,
  userPath,
} from './helpers.js';

describe('concurrent writes to one resource', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx);
    await createUser(ctx, 'billing-web');
  });
  after(() => ctx.close());

  it('applies 30 concurrent PUTs without If-Match, every one answered 200', async () => {
    const path = userPath('billing-web', 'google_oauth2', '108234823498234');
    const names = Array.from({ length: 30 }, (_, n) => `Writer ${n}`);
    const responses = await Promise.all(
      names.map((name) => call(ctx, 'PUT', path, { body: userBody({ name }) })),
    );
    assert.deepEqual(
      responses.map((response) => response.statusCode),
      names.map(() => 200),
    );
    const final = (await call(ctx, 'GET', path)).json();
    assert.ok(names.includes(final.name), 'the stored name is one of the writers’');
  });

  it('loses none of 30 concurrent PATCHes that each add a member', async () => {
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        call(ctx, 'PATCH', '/applications/billing-web', {
          body: {
            external_token_validation: { [`provider_${n}`]: { issuer: `https://idp${n}.example` } },
          },
        }),
      ),
    );
    assert.ok(responses.every((response) => response.statusCode === 200));
    const stored = (await call(ctx, 'GET', '/applications/billing-web')).json();
    assert.equal(Object.keys(stored.external_token_validation).length, 30);
  });

  it('still answers exactly one of 20 concurrent PUTs with the same If-Match', async () => {
    const current = await call(ctx, 'GET', '/applications/billing-web');
    const etag = String(current.headers.etag);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        call(ctx, 'PUT', '/applications/billing-web', {
          body: { display_name: `Name ${n}`, description: 'd' },
          headers: { 'if-match': etag },
        }),
      ),
    );
    const statuses = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)]);
  });
});
