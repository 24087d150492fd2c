// tessera-test: both-stores
// What a caller without a key, or a request to no route, can make Tessera do: read the
// request and refuse it. Bodies of unmatched routes are never parsed; every check on a body
// is linear in its size (the figures are in the benchmark: bench/README.md, pre-auth).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mayHoldNonFiniteNumber } from '../src/http/content-types.js';
import { buildTestApp, useTestApp, call, createApplication, problemOf } from './helpers.js';

/** JSON that does not parse: answered 400 only by a route that parses it. */
const MALFORMED = '{"client_id": ';

describe('requests no route serves', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  for (const [method, path, status] of [
    ['POST', '/nope', 404],
    ['POST', '/iam/api/v1/nope', 404],
    ['PUT', '/metrics', 405],
    ['POST', '/iam/api/v1/applications/billing-web', 405],
  ] as const) {
    it(`answers ${method} ${path} with ${status} without parsing its body`, async () => {
      const response = await call(ctx, method, `/${path}`, { key: null, rawBody: MALFORMED });
      const problem = problemOf(response, status);
      assert.equal(problem.instance, path);
    });
  }

  it('does not parse a body sent without a key to a route that needs one', async () => {
    const response = await call(ctx, 'POST', '/applications', { key: null, rawBody: MALFORMED });
    problemOf(response, 401);
  });

  it('echoes at most 200 characters of an unknown path in the detail', async () => {
    const path = `/${'x'.repeat(5000)}`;
    const problem = problemOf(await call(ctx, 'GET', `/${path}`, { key: null }), 404);
    assert.ok(problem.detail.length < 300, problem.detail);
    assert.match(problem.detail, /5001 characters/);
  });

  it('refuses two Authorization headers with 400, even when both carry the key', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/iam/api/v1/applications',
      // light-my-request sends an array as one header line per value.
      headers: {
        authorization: [`apikey ${ctx.adminKey}`, `apikey ${ctx.adminKey}`] as unknown as string,
      },
    });
    const problem = problemOf(response, 400);
    assert.match(problem.detail, /one Authorization header/);
  });
});

describe('the check for numbers beyond a double', () => {
  it('finds 309 digits in a row and exponents, and nothing else', () => {
    assert.equal(mayHoldNonFiniteNumber(`[${'1'.repeat(309)}]`), true);
    assert.equal(mayHoldNonFiniteNumber(`[${'1'.repeat(308)},${'1'.repeat(308)}]`), false);
    assert.equal(mayHoldNonFiniteNumber('[1e400]'), true);
    assert.equal(mayHoldNonFiniteNumber('[1E4]'), true);
    assert.equal(mayHoldNonFiniteNumber('{"e":"see"}'), false);
  });

  it('still refuses a number that overflows', async () => {
    const ctx = await buildTestApp();
    try {
      const response = await call(ctx, 'POST', '/applications', {
        rawBody: `{"client_id":"a","display_name":"A","description":"d","jwt_expiration_in_minutes":${'9'.repeat(400)}}`,
      });
      assert.match(problemOf(response, 400).detail, /too large/);
    } finally {
      await ctx.close();
    }
  });
});
