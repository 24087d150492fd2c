import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { SigningKeyRecord } from '../store.js';
import { T0, type ContractContext } from './fixtures.js';

function signingKey(
  generation: number,
  overrides: Partial<SigningKeyRecord> = {},
): SigningKeyRecord {
  return {
    kid: `kid-${generation}`,
    generation,
    algorithm: 'ES256',
    publicJwk: { kty: 'EC', crv: 'P-256', x: `x${generation}`, y: `y${generation}` },
    privateJwk: { kty: 'EC', crv: 'P-256', x: `x${generation}`, y: `y${generation}`, d: 'd' },
    createdAt: T0 + generation,
    activatesAt: T0 + generation * 1000,
    ...overrides,
  };
}

export function describeSigningKeysContract(ctx: ContractContext): void {
  describe('signing keys', () => {
    it('returns every key as stored, ordered by generation', async () => {
      const third = signingKey(3, { algorithm: 'RS256', kid: 'a-first-by-name' });
      const first = signingKey(1, { algorithm: 'EdDSA', kid: 'z-last-by-name' });
      const second = signingKey(2, {
        publicJwk: { kty: 'EC', note: 'ü 請 😀', nested: { n: [1, 2.5, null] } },
      });
      for (const key of [third, first, second]) await ctx.store.signingKeys.insertSigningKey(key);
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [first, second, third]);
    });

    it('is empty before the first key', async () => {
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), []);
    });

    it('refuses a second key with the same generation or kid, changing nothing', async () => {
      await ctx.store.signingKeys.insertSigningKey(signingKey(1));
      await assert.rejects(
        ctx.store.signingKeys.insertSigningKey(signingKey(1, { kid: 'other' })),
        DuplicateError,
      );
      await assert.rejects(
        ctx.store.signingKeys.insertSigningKey(signingKey(2, { kid: 'kid-1' })),
        DuplicateError,
      );
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [signingKey(1)]);
    });

    it('lets exactly one of 10 concurrent writers add the same generation', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, n) =>
          ctx.store.signingKeys.insertSigningKey(signingKey(1, { kid: `racer-${n}` })),
        ),
      );
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      assert.equal(won.length, 1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') assert.ok(outcome.reason instanceof DuplicateError);
      }
      const keys = await ctx.store.signingKeys.listSigningKeys();
      assert.equal(keys.length, 1);
      assert.match(keys[0]!.kid, /^racer-\d$/);
    });
  });
}
