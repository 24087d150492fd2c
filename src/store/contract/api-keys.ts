import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { ApiKeyRecord, NewEvent } from '../store.js';
import { type ContractContext, T0, apiKeyRecord, keyId, walkPages } from './fixtures.js';

const ALL = { includeRevoked: true };
const LIVE = { includeRevoked: false };

export function describeApiKeysContract(ctx: ContractContext): void {
  describe('API keys', () => {
    it('returns from findApiKey and findApiKeyByDigest exactly what insertApiKey stored', async () => {
      const restricted = apiKeyRecord(keyId(1), {
        name: 'Clé de facturation 請 😀',
        roles: ['applications:read', 'users:write'],
        applications: ['billing-web', 'Billing.API'],
        createdAt: T0,
        updatedAt: T0 + 5,
        expiresAt: 8.64e15,
        lastUsedAt: 0,
      });
      const open = apiKeyRecord(keyId(2));
      await ctx.store.apiKeys.insertApiKey(restricted, []);
      await ctx.store.apiKeys.insertApiKey(open, []);
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(restricted.id), restricted);
      assert.deepEqual(
        await ctx.store.apiKeys.findApiKeyByDigest(restricted.secretDigest),
        restricted,
      );
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(open.id), open);
      assert.deepEqual(await ctx.store.apiKeys.findApiKeyByDigest(open.secretDigest), open);
      assert.equal(await ctx.store.apiKeys.findApiKey(keyId(3)), undefined);
      assert.equal(await ctx.store.apiKeys.findApiKeyByDigest('0'.repeat(64)), undefined);
    });

    it('refuses an existing id or secret digest with DuplicateError', async () => {
      const first = apiKeyRecord(keyId(1));
      await ctx.store.apiKeys.insertApiKey(first, []);
      const sameId = apiKeyRecord(keyId(1), { secretDigest: 'f'.repeat(64) });
      const sameDigest = apiKeyRecord(keyId(2), { secretDigest: first.secretDigest });
      await assert.rejects(ctx.store.apiKeys.insertApiKey(sameId, []), DuplicateError);
      await assert.rejects(ctx.store.apiKeys.insertApiKey(sameDigest, []), DuplicateError);
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), 1);
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(first.id), first);
      assert.equal(await ctx.store.apiKeys.findApiKeyByDigest(sameId.secretDigest), undefined);
    });

    it('lists keys by id in keyset pages and counts them', async () => {
      const ids = [7, 1, 12, 3, 9, 16, 2].map(keyId);
      for (const id of ids) await ctx.store.apiKeys.insertApiKey(apiKeyRecord(id), []);
      const pages = await walkPages<ApiKeyRecord, string>(
        (after) => ctx.store.apiKeys.listApiKeys(ALL, { after, limit: 3 }),
        (key) => key.id,
        3,
      );
      assert.deepEqual(
        pages.map((page) => page.map((key) => key.id)),
        [[1, 2, 3], [7, 9, 12], [16]].map((page) => page.map(keyId)),
      );
      assert.deepEqual(pages[0]![0], apiKeyRecord(keyId(1)));
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), ids.length);
    });

    it('inserts the first key only into an empty key table', async () => {
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), 0);
      const first = apiKeyRecord(keyId(1), {
        roles: ['keys:write', 'keys:read'],
        applications: ['a'],
        expiresAt: T0 + 1000,
        lastUsedAt: T0 + 10,
        updatedAt: T0 + 20,
      });
      assert.equal(await ctx.store.apiKeys.insertFirstApiKey(first, []), true);
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(first.id), first);
      const second = apiKeyRecord(keyId(2));
      assert.equal(await ctx.store.apiKeys.insertFirstApiKey(second, []), false);
      assert.equal(await ctx.store.apiKeys.findApiKey(second.id), undefined);
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), 1);
    });

    it('inserts no first key when any key exists', async () => {
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(5)), []);
      assert.equal(await ctx.store.apiKeys.insertFirstApiKey(apiKeyRecord(keyId(1)), []), false);
      assert.equal(await ctx.store.apiKeys.findApiKey(keyId(1)), undefined);
    });

    it('lets exactly one of 10 concurrent insertFirstApiKey calls insert', async () => {
      const candidates = Array.from({ length: 10 }, (_, n) => apiKeyRecord(keyId(n + 1)));
      const outcomes = await Promise.all(
        candidates.map((key) => ctx.store.apiKeys.insertFirstApiKey(key, [])),
      );
      assert.equal(outcomes.filter(Boolean).length, 1);
      const winner = candidates[outcomes.indexOf(true)]!;
      assert.deepEqual(await ctx.store.apiKeys.listApiKeys(ALL, { after: null, limit: 100 }), [
        winner,
      ]);
    });

    it('updates grants: roles and applications set, expiry cleared, updatedAt set', async () => {
      const key = apiKeyRecord(keyId(1), {
        applications: ['a'],
        expiresAt: T0 + 1000,
        lastUsedAt: T0 + 7,
      });
      await ctx.store.apiKeys.insertApiKey(key, []);
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(2)), []);
      const roles = ['keys:read', 'keys:write', 'users:read'];
      await ctx.store.apiKeys.updateApiKeyGrants(
        key.id,
        {
          roles,
          applications: null,
          updatedAt: T0 + 60000,
        },
        [],
      );
      const unrestricted = {
        ...key,
        roles,
        applications: null,
        expiresAt: null,
        updatedAt: T0 + 60000,
      };
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(key.id), unrestricted);
      await ctx.store.apiKeys.updateApiKeyGrants(
        key.id,
        {
          roles: ['events:read'],
          applications: ['b', 'c'],
          updatedAt: T0 + 120000,
        },
        [],
      );
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(key.id), {
        ...unrestricted,
        roles: ['events:read'],
        applications: ['b', 'c'],
        updatedAt: T0 + 120000,
      });
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(keyId(2)), apiKeyRecord(keyId(2)));
    });

    it('records uses without ever moving last_used_at backwards', async () => {
      const key = apiKeyRecord(keyId(1));
      await ctx.store.apiKeys.insertApiKey(key, []);
      const steps: [number, number][] = [
        [T0 + 60000, T0 + 60000],
        [T0 + 120000, T0 + 120000],
        [T0 + 90000, T0 + 120000],
        [T0 + 120000, T0 + 120000],
        [T0, T0 + 120000],
      ];
      for (const [usedAt, expected] of steps) {
        await ctx.store.apiKeys.touchApiKey(key.id, usedAt);
        assert.deepEqual(await ctx.store.apiKeys.findApiKey(key.id), {
          ...key,
          lastUsedAt: expected,
        });
      }
      await ctx.store.apiKeys.touchApiKey(keyId(2), T0);
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), 1);
    });

    it('revokes a key once, keeping its record, and lists it only when asked', async () => {
      const doomed = apiKeyRecord(keyId(1));
      await ctx.store.apiKeys.insertApiKey(doomed, []);
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(2)), []);
      assert.equal(await ctx.store.apiKeys.revokeApiKey(doomed.id, T0 + 500, []), true);
      const revoked = { ...doomed, revokedAt: T0 + 500, updatedAt: T0 + 500 };
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(doomed.id), revoked);
      assert.deepEqual(await ctx.store.apiKeys.findApiKeyByDigest(doomed.secretDigest), revoked);
      assert.equal(await ctx.store.apiKeys.revokeApiKey(doomed.id, T0 + 900, []), false);
      assert.equal(await ctx.store.apiKeys.revokeApiKey(keyId(3), T0, []), false);
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(doomed.id), revoked);
      const live = await ctx.store.apiKeys.listApiKeys(LIVE, { after: null, limit: 10 });
      assert.deepEqual(live, [apiKeyRecord(keyId(2))]);
      const all = await ctx.store.apiKeys.listApiKeys(ALL, { after: null, limit: 10 });
      assert.deepEqual(all, [revoked, apiKeyRecord(keyId(2))]);
      assert.equal(await ctx.store.apiKeys.countApiKeys(LIVE), 1);
      assert.equal(await ctx.store.apiKeys.countApiKeys(ALL), 2);
      // A revoked key still counts: the store is not empty, so no first key is issued.
      assert.equal(await ctx.store.apiKeys.revokeApiKey(keyId(2), T0, []), true);
      assert.equal(await ctx.store.apiKeys.insertFirstApiKey(apiKeyRecord(keyId(9)), []), false);
    });

    it('revokes a key only while another of the named keys still works, when asked', async () => {
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(1)), []);
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(2), { expiresAt: T0 + 100 }), []);
      await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(3)), []);
      const stale: NewEvent[] = [
        {
          type: 'api_key.revoked',
          occurredAt: T0,
          actor: { type: 'api_key', id: keyId(1) },
          clientId: null,
          resource: { type: 'api_key', id: { id: keyId(1) } },
          changes: null,
          requestId: null,
        },
      ];
      // Key 2 has expired by T0 + 100, and key 3 is not named: nothing is written.
      assert.equal(
        await ctx.store.apiKeys.revokeApiKey(keyId(1), T0 + 100, stale, [keyId(2)]),
        false,
      );
      assert.equal(await ctx.store.apiKeys.revokeApiKey(keyId(1), T0 + 100, stale, []), false);
      assert.equal((await ctx.store.apiKeys.findApiKey(keyId(1)))!.revokedAt, null);
      assert.equal(await ctx.store.events.lastEventId(), null, 'no event without the change');
      // Key 2 works until T0 + 100.
      assert.equal(await ctx.store.apiKeys.revokeApiKey(keyId(1), T0 + 99, [], [keyId(2)]), true);
      await ctx.store.apiKeys.revokeApiKey(keyId(2), T0 + 99, []);
      assert.equal(
        await ctx.store.apiKeys.revokeApiKey(keyId(3), T0 + 99, [], [keyId(1), keyId(2)]),
        false,
        'both named keys are revoked',
      );
      assert.equal((await ctx.store.apiKeys.findApiKey(keyId(3)))!.revokedAt, null);
    });

    it('pages past revoked keys when listing live ones', async () => {
      for (const n of [1, 2, 3, 4, 5])
        await ctx.store.apiKeys.insertApiKey(apiKeyRecord(keyId(n)), []);
      for (const n of [2, 3]) await ctx.store.apiKeys.revokeApiKey(keyId(n), T0 + 1, []);
      const pages = await walkPages<ApiKeyRecord, string>(
        (after) => ctx.store.apiKeys.listApiKeys(LIVE, { after, limit: 2 }),
        (key) => key.id,
        2,
      );
      assert.deepEqual(
        pages.map((page) => page.map((key) => key.id)),
        [[1, 4], [5]].map((page) => page.map(keyId)),
      );
    });

    it('rotates a secret: the old digest becomes the previous one, still found', async () => {
      const key = apiKeyRecord(keyId(1), { lastUsedAt: T0 + 3 });
      await ctx.store.apiKeys.insertApiKey(key, []);
      const change = {
        expectedDigest: key.secretDigest,
        secretDigest: 'a'.repeat(64),
        previousExpiresAt: T0 + 86_400_000,
        updatedAt: T0 + 10,
      };
      assert.equal(await ctx.store.apiKeys.rotateApiKeySecret(key.id, change, []), true);
      const rotated = {
        ...key,
        secretDigest: 'a'.repeat(64),
        previousSecretDigest: key.secretDigest,
        previousExpiresAt: T0 + 86_400_000,
        updatedAt: T0 + 10,
      };
      assert.deepEqual(await ctx.store.apiKeys.findApiKey(key.id), rotated);
      assert.deepEqual(await ctx.store.apiKeys.findApiKeyByDigest('a'.repeat(64)), rotated);
      assert.deepEqual(await ctx.store.apiKeys.findApiKeyByDigest(key.secretDigest), rotated);
      // A second rotation from the same version loses: the digest moved on.
      assert.equal(await ctx.store.apiKeys.rotateApiKeySecret(key.id, change, []), false);
      // Rotating again drops the first secret for good.
      const again = {
        expectedDigest: 'a'.repeat(64),
        secretDigest: 'b'.repeat(64),
        previousExpiresAt: T0 + 20,
        updatedAt: T0 + 20,
      };
      assert.equal(await ctx.store.apiKeys.rotateApiKeySecret(key.id, again, []), true);
      assert.equal(await ctx.store.apiKeys.findApiKeyByDigest(key.secretDigest), undefined);
      assert.equal(
        (await ctx.store.apiKeys.findApiKeyByDigest('a'.repeat(64)))?.previousSecretDigest,
        'a'.repeat(64),
      );
    });

    it('lets one of 10 concurrent rotations of one version win', async () => {
      const key = apiKeyRecord(keyId(1));
      await ctx.store.apiKeys.insertApiKey(key, []);
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          ctx.store.apiKeys.rotateApiKeySecret(
            key.id,
            {
              expectedDigest: key.secretDigest,
              secretDigest: n.toString(16).repeat(64),
              previousExpiresAt: T0 + 1000,
              updatedAt: T0 + 1,
            },
            [],
          ),
        ),
      );
      assert.equal(outcomes.filter(Boolean).length, 1);
      const winner = outcomes.indexOf(true).toString(16).repeat(64);
      assert.equal((await ctx.store.apiKeys.findApiKey(key.id))?.secretDigest, winner);
    });

    it('never rotates a revoked key, nor a missing one', async () => {
      const key = apiKeyRecord(keyId(1));
      await ctx.store.apiKeys.insertApiKey(key, []);
      await ctx.store.apiKeys.revokeApiKey(key.id, T0 + 1, []);
      const change = {
        expectedDigest: key.secretDigest,
        secretDigest: 'c'.repeat(64),
        previousExpiresAt: T0 + 1000,
        updatedAt: T0 + 2,
      };
      assert.equal(await ctx.store.apiKeys.rotateApiKeySecret(key.id, change, []), false);
      assert.equal(await ctx.store.apiKeys.rotateApiKeySecret(keyId(2), change, []), false);
      assert.equal((await ctx.store.apiKeys.findApiKey(key.id))?.secretDigest, key.secretDigest);
    });
  });
}
