import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../../store/sqlite/sqlite-store.js';
import type { ApiKeyRecord, Store } from '../../store/store.js';
import { ApiKeyAuthenticator, digestSecret } from './api-key-authenticator.service.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const clock = { now: () => NOW };

function keyFor(secret: string, id: string): ApiKeyRecord {
  return {
    id,
    name: id,
    secretDigest: digestSecret(secret),
    roles: ['users:read'],
    applications: null,
    createdAt: NOW,
    updatedAt: NOW,
    expiresAt: null,
    lastUsedAt: null,
    previousSecretDigest: null,
    previousExpiresAt: null,
    revokedAt: null,
  };
}

/** The real store, with its key lookups counted and, on demand, held back (database latency). */
function observed(store: Store) {
  const find = store.apiKeys.findApiKeyByDigest.bind(store.apiKeys);
  const observer = { lookups: 0, gate: null as Promise<void> | null };
  const apiKeys = Object.create(store.apiKeys) as Store['apiKeys'];
  apiKeys.findApiKeyByDigest = async (digest) => {
    observer.lookups++;
    const key = await find(digest);
    if (observer.gate !== null) await observer.gate;
    return key;
  };
  return { store: { ...store, apiKeys } as Store, observer };
}

describe('ApiKeyAuthenticator', () => {
  let store: Store;
  before(async () => {
    store = openSqliteStore({ path: ':memory:' });
    await store.migrate();
    await store.apiKeys.insertApiKey(keyFor('tsr_known', 'known'), []);
    await store.apiKeys.insertApiKey(keyFor('tsr_revoked', 'revoked'), []);
  });
  after(() => store.close());

  it('shares one lookup among concurrent requests with the same key', async () => {
    const { store: counted, observer } = observed(store);
    const authenticator = new ApiKeyAuthenticator({ store: counted, clock });
    const keys = await Promise.all(
      Array.from({ length: 20 }, () => authenticator.authenticate('tsr_known')),
    );
    assert.ok(keys.every((key) => key?.id === 'known'));
    assert.equal(observer.lookups, 1);
  });

  it('keeps known keys cached while made-up keys flood in', async () => {
    const { store: counted, observer } = observed(store);
    const authenticator = new ApiKeyAuthenticator(
      { store: counted, clock },
      { maxCachedKeys: 10, maxCachedMisses: 10 },
    );
    await authenticator.authenticate('tsr_known');
    for (let n = 0; n < 200; n++)
      assert.equal(await authenticator.authenticate(`tsr_made_up_${n}`), undefined);
    const before = observer.lookups;
    assert.equal((await authenticator.authenticate('tsr_known'))?.id, 'known');
    assert.equal(observer.lookups, before, 'served from the cache, no query');
  });

  it('never trusts a lookup that raced the revocation of its key', async () => {
    const { store: slow, observer } = observed(store);
    const authenticator = new ApiKeyAuthenticator({ store: slow, clock });
    let release: () => void = () => {};
    observer.gate = new Promise((resolve) => (release = resolve));
    // The lookup reads the key, then is held back; meanwhile the key is revoked here.
    const racing = authenticator.authenticate('tsr_revoked');
    await new Promise((resolve) => setImmediate(resolve));
    await store.apiKeys.revokeApiKey('revoked', NOW, []);
    authenticator.forgetKey('revoked');
    observer.gate = null;
    release();
    assert.equal(await racing, undefined, 'the raced lookup read again and found it revoked');
    assert.equal(await authenticator.authenticate('tsr_revoked'), undefined);
  });
});
