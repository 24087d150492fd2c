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
    privateKey: JSON.stringify({ kty: 'EC', x: `x${generation}`, d: `d${generation}` }),
    createdAt: T0 + generation,
    activatesAt: T0 + generation * 1000,
    revokedAt: null,
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
      for (const key of [third, first, second])
        await ctx.store.signingKeys.insertSigningKey(key, []);
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [first, second, third]);
    });

    it('keeps the private key text exactly as given, sealed or not', async () => {
      const sealed = signingKey(1, { privateKey: 'tessera-sealed:v1:abc:ü 請 😀' });
      await ctx.store.signingKeys.insertSigningKey(sealed, []);
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [sealed]);
    });

    it('revokes a key once, keeping it', async () => {
      await ctx.store.signingKeys.insertSigningKey(signingKey(1), []);
      await ctx.store.signingKeys.insertSigningKey(signingKey(2), []);
      assert.equal(await ctx.store.signingKeys.revokeSigningKey('kid-1', T0 + 50, []), true);
      assert.equal(await ctx.store.signingKeys.revokeSigningKey('kid-1', T0 + 99, []), false);
      assert.equal(await ctx.store.signingKeys.revokeSigningKey('kid-9', T0, []), false);
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [
        signingKey(1, { revokedAt: T0 + 50 }),
        signingKey(2),
      ]);
    });

    it('replaces a private key only when it is still the expected text', async () => {
      const key = signingKey(1);
      await ctx.store.signingKeys.insertSigningKey(key, []);
      assert.equal(await ctx.store.signingKeys.replacePrivateKey('kid-1', 'stale', 'x'), false);
      assert.equal(
        await ctx.store.signingKeys.replacePrivateKey('kid-1', key.privateKey, 'sealed'),
        true,
      );
      assert.equal(await ctx.store.signingKeys.replacePrivateKey('kid-2', 'a', 'b'), false);
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [
        signingKey(1, { privateKey: 'sealed' }),
      ]);
    });

    it('is empty before the first key', async () => {
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), []);
    });

    it('refuses a second key with the same generation or kid, changing nothing', async () => {
      await ctx.store.signingKeys.insertSigningKey(signingKey(1), []);
      await assert.rejects(
        ctx.store.signingKeys.insertSigningKey(signingKey(1, { kid: 'other' }), []),
        DuplicateError,
      );
      await assert.rejects(
        ctx.store.signingKeys.insertSigningKey(signingKey(2, { kid: 'kid-1' }), []),
        DuplicateError,
      );
      assert.deepEqual(await ctx.store.signingKeys.listSigningKeys(), [signingKey(1)]);
    });

    it('lets exactly one of 10 concurrent writers add the same generation', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, n) =>
          ctx.store.signingKeys.insertSigningKey(signingKey(1, { kid: `racer-${n}` }), []),
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
