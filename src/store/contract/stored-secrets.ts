import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventFilter, NewEvent, SigningKeyRecord, StoredSecret } from '../store.js';
import type { WebhookRecord } from '../webhook-records.js';
import { T0, type ContractContext } from './fixtures.js';

const EVERYTHING: EventFilter = {
  types: null,
  clientId: null,
  actorId: null,
  resourceType: null,
  since: null,
  until: null,
  visibleClientIds: null,
};

function signingKey(kid: string, generation: number, privateKey: string): SigningKeyRecord {
  return {
    kid,
    generation,
    algorithm: 'ES256',
    publicJwk: { kty: 'EC' },
    privateKey,
    createdAt: T0,
    activatesAt: T0,
    revokedAt: null,
  };
}

function webhook(id: string, secret: string, previousSecret: string | null): WebhookRecord {
  return {
    id,
    url: `https://hooks.example/${id}`,
    eventTypes: ['*'],
    clientIds: null,
    description: '',
    enabled: true,
    disabledReason: null,
    secret,
    previousSecret,
    previousSecretExpiresAt: previousSecret === null ? null : T0 + 1000,
    createdAt: T0,
    updatedAt: T0,
    etag: `${id}-1`,
  };
}

const RESEALED: NewEvent = {
  type: 'secret_key.resealed',
  occurredAt: T0,
  actor: { type: 'cli', id: null },
  clientId: null,
  resource: { type: 'secret_key', id: { key_id: 'b2' } },
  changes: [{ member: 'key_id', before: 'a1', after: 'b2' }],
  requestId: null,
};

export function describeStoredSecretsContract(ctx: ContractContext): void {
  describe('stored secrets', () => {
    async function seed(): Promise<StoredSecret[]> {
      await ctx.store.signingKeys.insertSigningKey(signingKey('kid-1', 1, 'sealed:a1:one'), []);
      await ctx.store.signingKeys.insertSigningKey(signingKey('kid-2', 2, '{"clear":true}'), []);
      await ctx.store.webhooks.insertWebhook(webhook('w1', 'sealed:a1:w1', null), null, []);
      await ctx.store.webhooks.insertWebhook(
        webhook('w2', 'sealed:a1:w2', 'sealed:a1:old'),
        null,
        [],
      );
      return ctx.store.storedSecrets.listStoredSecrets();
    }

    it('lists every private signing key and webhook secret, rotated-out ones included', async () => {
      assert.deepEqual(await seed(), [
        { kind: 'signing_key', id: 'kid-1', stored: 'sealed:a1:one' },
        { kind: 'signing_key', id: 'kid-2', stored: '{"clear":true}' },
        { kind: 'webhook_secret', id: 'w1', stored: 'sealed:a1:w1' },
        { kind: 'webhook_secret', id: 'w2', stored: 'sealed:a1:w2' },
        { kind: 'webhook_previous_secret', id: 'w2', stored: 'sealed:a1:old' },
      ]);
    });

    it('replaces them all in one transaction, with its event', async () => {
      const secrets = await seed();
      const replaced = await ctx.store.storedSecrets.replaceStoredSecrets(
        secrets.map((secret) => ({ secret, next: `${secret.stored}>b2` })),
        [RESEALED],
      );
      assert.equal(replaced, true);
      assert.deepEqual(
        (await ctx.store.storedSecrets.listStoredSecrets()).map((secret) => secret.stored),
        secrets.map((secret) => `${secret.stored}>b2`),
      );
      const [key] = await ctx.store.signingKeys.listSigningKeys();
      assert.equal(key!.privateKey, 'sealed:a1:one>b2');
      const hook = await ctx.store.webhooks.findWebhook('w2');
      assert.equal(hook!.previousSecret, 'sealed:a1:old>b2');
      assert.equal(hook!.etag, 'w2-1', 'the webhook as the API shows it is unchanged');
      const events = await ctx.store.events.listEvents(EVERYTHING, { after: null, limit: 10 });
      assert.deepEqual(
        events.map(({ id: _id, ...event }) => event),
        [RESEALED],
      );
    });

    it('writes nothing, and no event, when one secret changed since it was read', async () => {
      const secrets = await seed();
      // A rotation of w1's secret lands between the read and the write.
      await ctx.store.storedSecrets.replaceStoredSecrets(
        [{ secret: secrets[2]!, next: 'sealed:a1:rotated' }],
        [],
      );
      const replaced = await ctx.store.storedSecrets.replaceStoredSecrets(
        secrets.map((secret) => ({ secret, next: `${secret.stored}>b2` })),
        [RESEALED],
      );
      assert.equal(replaced, false);
      assert.deepEqual(
        (await ctx.store.storedSecrets.listStoredSecrets()).map((secret) => secret.stored),
        ['sealed:a1:one', '{"clear":true}', 'sealed:a1:rotated', 'sealed:a1:w2', 'sealed:a1:old'],
      );
      assert.deepEqual(
        await ctx.store.events.listEvents(EVERYTHING, { after: null, limit: 10 }),
        [],
      );
    });
  });
}
