// tessera-test: both-stores
// Concurrent writes to one resource: without If-Match every write applies (last writer wins,
// nothing is refused for having lost a race); read-modify-write changes (PATCH) lose nothing;
// identical creates and same-ETag writes race to exactly one winner. The races repeat
// TESSERA_RACE_REPETITIONS times (3 in `npm test`, 100 in `npm run test:chaos`).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applicationBody,
  useTestApp,
  call,
  createApplication,
  createUser,
  problemOf,
  userBody,
  userPath,
} from './helpers.js';

describe('concurrent writes to one resource', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
    await createUser(ctx, 'billing-web');
  });

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
});

const REPETITIONS = Number(process.env.TESSERA_RACE_REPETITIONS ?? 3);

describe(`races to one winner (${REPETITIONS} repetitions each)`, () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  const statusesOf = (responses: { statusCode: number }[]) =>
    responses.map((response) => response.statusCode).sort();

  it('answers 50 concurrent identical application creates with one 201 and 49 409s', async () => {
    for (let round = 0; round < REPETITIONS; round += 1) {
      const body = applicationBody({ client_id: `race-${round}`, display_name: `Race ${round}` });
      const responses = await Promise.all(
        Array.from({ length: 50 }, () => call(ctx, 'POST', '/applications', { body })),
      );
      assert.deepEqual(
        statusesOf(responses),
        [201, ...Array<number>(49).fill(409)],
        `round ${round}`,
      );
      for (const response of responses.filter((r) => r.statusCode === 409))
        problemOf(response, 409);
      const stored = await call(ctx, 'GET', `/applications/race-${round}`);
      assert.equal(stored.json().display_name, `Race ${round}`);
    }
  });

  it('answers 50 concurrent identical user creates with one 201 and 49 409s', async () => {
    for (let round = 0; round < REPETITIONS; round += 1) {
      const body = userBody({ identifier: `race-${round}` });
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          call(ctx, 'POST', '/applications/billing-web/users', { body }),
        ),
      );
      assert.deepEqual(
        statusesOf(responses),
        [201, ...Array<number>(49).fill(409)],
        `round ${round}`,
      );
      const path = userPath('billing-web', 'google_oauth2', `race-${round}`);
      assert.equal((await call(ctx, 'GET', path)).statusCode, 200);
    }
  });

  it('answers 20 concurrent PUTs with the same If-Match with one 200 and 19 412s', async () => {
    for (let round = 0; round < REPETITIONS; round += 1) {
      const etag = String((await call(ctx, 'GET', '/applications/billing-web')).headers.etag);
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          call(ctx, 'PUT', '/applications/billing-web', {
            body: { display_name: `Name ${round}.${n}`, description: 'd' },
            headers: { 'if-match': etag },
          }),
        ),
      );
      assert.deepEqual(
        statusesOf(responses),
        [200, ...Array<number>(19).fill(412)],
        `round ${round}`,
      );
      // The stored name is the winner's.
      const winner = responses.find((response) => response.statusCode === 200)!.json();
      const stored = (await call(ctx, 'GET', '/applications/billing-web')).json();
      assert.equal(stored.display_name, winner.display_name);
    }
  });

  it('answers 20 concurrent user PUTs with the same If-Match with one 200 and 19 412s', async () => {
    const path = userPath('billing-web', 'google_oauth2', 'race-0');
    for (let round = 0; round < REPETITIONS; round += 1) {
      const etag = String((await call(ctx, 'GET', path)).headers.etag);
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          call(ctx, 'PUT', path, {
            body: userBody({ identifier: 'race-0', name: `Name ${round}.${n}` }),
            headers: { 'if-match': etag },
          }),
        ),
      );
      assert.deepEqual(
        statusesOf(responses),
        [200, ...Array<number>(19).fill(412)],
        `round ${round}`,
      );
    }
  });
});
