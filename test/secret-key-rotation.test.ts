// tessera-test: both-stores
// Rotating IAM_SECRET_KEY while the service runs: instances restarted one by one, first with
// the old key only, then with the new key and the old one as IAM_SECRET_KEY_PREVIOUS, then a
// re-seal, then with the new key only. Throughout, tokens are signed and verify, and webhooks
// are delivered, signed with their secrets; at the end the old key is needed by nothing.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import { PrivateKeySealer, SealedKeyError } from '../src/modules/private-key-sealing.js';
import type { Store } from '../src/store/store.js';
import {
  TEST_STORE,
  type TestContext,
  buildTestApp,
  call,
  createApplication,
  createUser,
  openTestStore,
} from './helpers.js';
import { tesseraOn } from './cli-runs.js';
import { WebhookReceiver } from './webhook-receiver.js';

const OLD_KEY = Buffer.alloc(32, 0x0a);
const NEW_KEY = Buffer.alloc(32, 0x0b);
const OLD_ID = new PrivateKeySealer(OLD_KEY).keyId;
const NEW_ID = new PrivateKeySealer(NEW_KEY).keyId;

const WEBHOOKS = {
  allowInsecure: true,
  timeoutMs: 2_000,
  dispatcher: { pollMs: 50, retry: { firstDelayMs: 40, maxDelayMs: 200, giveUpAfterMs: 60_000 } },
};

/** The key id a stored secret is sealed with, as its text says. */
const keyIdOf = (stored: string) => /^tessera-sealed:v1:([0-9a-f]{16}):/.exec(stored)?.[1] ?? null;

describe('rotating IAM_SECRET_KEY, instances restarted one by one', () => {
  let store: Store;
  // One receiver per webhook: each checks every delivery with its webhook's secret.
  let receiver: WebhookReceiver;
  let secondReceiver: WebhookReceiver;
  const running: TestContext[] = [];
  const tokens: string[] = [];

  function instance(secretKey: Buffer, previousSecretKey: Buffer | null = null) {
    return buildTestApp({
      store,
      tokens: { secretKey, previousSecretKey },
      webhooks: WEBHOOKS,
    }).then((ctx) => {
      running.push(ctx);
      return ctx;
    });
  }
  async function stop(ctx: TestContext): Promise<void> {
    await ctx.app.close();
    running.splice(running.indexOf(ctx), 1);
  }
  async function issueToken(ctx: TestContext, identifier: string): Promise<string> {
    const response = await call(
      ctx,
      'POST',
      `/applications/rotation/users/google_oauth2/${identifier}/tokens`,
    );
    assert.equal(response.statusCode, 201, response.body);
    const token = response.json<{ access_token: string }>().access_token;
    tokens.push(token);
    return token;
  }
  /** Every token issued so far verifies against the instance's JWKS. */
  async function allTokensVerify(ctx: TestContext): Promise<void> {
    const jwks = await call(ctx, 'GET', '//.well-known/jwks.json', { key: null });
    const keys = createLocalJWKSet(jwks.json());
    const currentDate = new Date(ctx.clock.now());
    for (const token of tokens) await jwtVerify(token, keys, { audience: 'rotation', currentDate });
  }
  async function webhookSecretsSealedWith(): Promise<(string | null)[]> {
    return (await store.storedSecrets.listStoredSecrets())
      .filter((secret) => secret.kind === 'webhook_secret')
      .map((secret) => keyIdOf(secret.stored));
  }

  before(async () => {
    store = await openTestStore();
    receiver = await WebhookReceiver.start();
    secondReceiver = await WebhookReceiver.start();
  });
  after(async () => {
    for (const ctx of running.splice(0)) await ctx.app.close();
    await store.close();
    for (const one of [receiver, secondReceiver]) {
      await one.close();
      assert.deepEqual(one.refused, [], 'the official verifier refused deliveries');
    }
  });

  it('keeps signing and delivering with the old key, then old and new, then the new one', async () => {
    // 1. An instance with the old key only: a signing key and a webhook, both sealed with it.
    const a = await instance(OLD_KEY);
    await createApplication(a, { client_id: 'rotation' });
    const hook = await call(a, 'POST', '/webhooks', {
      body: { url: receiver.url, event_types: ['user.*'] },
    });
    assert.equal(hook.statusCode, 201, hook.body);
    receiver.secrets.push(hook.json<{ secret: string }>().secret);
    await createUser(a, 'rotation', { identifier: 'u1' });
    await issueToken(a, 'u1');
    await receiver.waitFor(1);

    // 2. An instance with the new key and the old one as previous, beside the first.
    const b = await instance(NEW_KEY, OLD_KEY);
    await issueToken(b, 'u1');
    // While secrets sealed with the old key remain, new ones are sealed with it too, so the
    // instance that has only the old key can deliver them.
    const second = await call(b, 'POST', '/webhooks', {
      body: { url: secondReceiver.url, event_types: ['user.*'] },
    });
    assert.equal(second.statusCode, 201, second.body);
    secondReceiver.secrets.push(second.json<{ secret: string }>().secret);
    assert.deepEqual(await webhookSecretsSealedWith(), [OLD_ID, OLD_ID]);
    await createUser(b, 'rotation', { identifier: 'u2' });
    await createUser(a, 'rotation', { identifier: 'u3' });
    await issueToken(a, 'u2');
    await receiver.waitFor(3);
    await secondReceiver.waitFor(2);
    await allTokensVerify(a);
    await allTokensVerify(b);

    // 3. The old-key instance restarts with both keys; then the re-seal.
    await stop(a);
    const c = await instance(NEW_KEY, OLD_KEY);
    const resealed = await c.services.secrets.reseal(CLI_ORIGIN);
    assert.deepEqual(resealed, {
      keyId: NEW_ID,
      signingKeys: 1,
      webhookSecrets: 2,
      previousKeyId: OLD_ID,
      inClear: 0,
    });
    const events = await call(c, 'GET', '/events?type=secret_key.resealed');
    assert.deepEqual(
      events.json<{ items: Record<string, unknown>[] }>().items.map((event) => ({
        actor: event.actor,
        resource: event.resource,
        changes: event.changes,
      })),
      [
        {
          actor: { type: 'cli', id: null },
          resource: { type: 'secret_key', id: { key_id: NEW_ID } },
          changes: [
            { member: 'key_id', before: OLD_ID, after: NEW_ID },
            { member: 'signing_keys', before: null, after: 1 },
            { member: 'webhook_secrets', before: null, after: 2 },
          ],
        },
      ],
    );
    assert.deepEqual(await webhookSecretsSealedWith(), [NEW_ID, NEW_ID]);
    // A second run finds nothing left to do.
    assert.equal((await c.services.secrets.reseal(CLI_ORIGIN)).webhookSecrets, 0);

    // 4. Instances restarted with the new key only.
    await stop(b);
    const d = await instance(NEW_KEY);
    await d.services.secrets.assertEverySecretOpens();
    const inventory = await d.services.secrets.inventory();
    assert.equal(inventory.sealedWithCurrent, 3);
    assert.equal(inventory.inClear, 0);
    await issueToken(d, 'u3');
    await createUser(d, 'rotation', { identifier: 'u4' });
    await receiver.waitFor(4);
    await secondReceiver.waitFor(3);
    await stop(c);
    await createUser(d, 'rotation', { identifier: 'u5' });
    await receiver.waitFor(5);
    await secondReceiver.waitFor(4);
    const third = await call(d, 'POST', '/webhooks', {
      body: { url: 'https://hooks.example/third', event_types: ['application.*'] },
    });
    assert.equal(third.statusCode, 201);
    assert.deepEqual(await webhookSecretsSealedWith(), [NEW_ID, NEW_ID, NEW_ID]);
    await allTokensVerify(d);
    const delivered = (one: WebhookReceiver) =>
      new Set(one.received.map((delivery) => delivery.event.id)).size;
    assert.equal(delivered(receiver), 5, 'every user, to the first webhook');
    assert.equal(delivered(secondReceiver), 4, 'every user since, to the second');

    // The old key opens nothing now: an instance given only it is refused, naming both ids.
    const stale = await buildTestApp({ store, tokens: { secretKey: OLD_KEY } });
    try {
      await assert.rejects(stale.services.secrets.assertEverySecretOpens(), (error: unknown) => {
        assert.ok(error instanceof SealedKeyError);
        assert.ok(error.message.includes(NEW_ID) && error.message.includes(OLD_ID), error.message);
        assert.match(error.message, /set IAM_SECRET_KEY_PREVIOUS to the key it was encrypted with/);
        return true;
      });
    } finally {
      await stale.app.close();
    }
  });
});

describe(
  'tessera secret-key status and reseal',
  {
    skip:
      TEST_STORE === 'postgres'
        ? 'the CLI on a SQLite file; the rotation above runs on PostgreSQL'
        : false,
  },
  () => {
    let directory: string;
    before(async () => {
      directory = await mkdtemp(join(tmpdir(), 'tessera-secret-key-'));
    });
    after(() => rm(directory, { recursive: true, force: true }));

    const tessera = (env: Record<string, string>, args: string[]) =>
      tesseraOn(join(directory, 't.db'), args, env);
    const oldOnly = { IAM_SECRET_KEY: OLD_KEY.toString('base64') };
    const rotated = {
      IAM_SECRET_KEY: NEW_KEY.toString('base64'),
      IAM_SECRET_KEY_PREVIOUS: OLD_KEY.toString('base64'),
    };

    it('shows where the secrets stand, re-seals them, and says the old key can go', async () => {
      assert.equal((await tessera(oldOnly, ['migrate'])).code, 0);
      assert.equal((await tessera(oldOnly, ['signing-keys', 'rotate'])).code, 0);
      const before = await tessera(rotated, ['secret-key', 'status']);
      assert.equal(before.code, 0, before.stderr);
      assert.equal(
        before.stdout,
        `IAM_SECRET_KEY: key id ${NEW_ID}\n` +
          `IAM_SECRET_KEY_PREVIOUS: key id ${OLD_ID}\n` +
          'Stored: 1 signing key and 0 webhook secrets, of which\n' +
          '  sealed with IAM_SECRET_KEY: 0\n' +
          '  sealed with IAM_SECRET_KEY_PREVIOUS: 1\n' +
          '  in clear: 0\n' +
          'Run tessera secret-key reseal to seal them all with IAM_SECRET_KEY.\n',
      );
      const resealed = await tessera(rotated, ['secret-key', 'reseal']);
      assert.equal(resealed.code, 0, resealed.stderr);
      assert.equal(
        resealed.stdout,
        `Re-sealed 1 signing key and 0 webhook secrets with IAM_SECRET_KEY (key id ${NEW_ID}), from key id ${OLD_ID}; recorded as a secret_key.resealed event.\n` +
          'IAM_SECRET_KEY_PREVIOUS is no longer needed: remove it, restarting the instances one by one.\n',
      );
      const after = await tessera({ IAM_SECRET_KEY: NEW_KEY.toString('base64') }, [
        'secret-key',
        'status',
        '--json',
      ]);
      assert.deepEqual(JSON.parse(after.stdout), {
        key_id: NEW_ID,
        previous_key_id: null,
        signing_keys: 1,
        webhook_secrets: 0,
        sealed_with_key: 1,
        sealed_with_previous_key: 0,
        in_clear: 0,
        sealed_with_other_keys: {},
      });
      const again = await tessera(rotated, ['secret-key', 'reseal']);
      assert.match(
        again.stdout,
        /^Nothing to re-seal: every stored secret is sealed with IAM_SECRET_KEY/,
      );
    });

    it('refuses to re-seal without IAM_SECRET_KEY, and a previous key without a current one', async () => {
      const without = await tessera({ IAM_SECRET_KEY: '' }, ['secret-key', 'reseal']);
      assert.equal(without.code, 1);
      assert.match(without.stderr, /^tessera: IAM_SECRET_KEY is not set: [^\n]*\n$/);
      const previousOnly = await tessera(
        { IAM_SECRET_KEY: '', IAM_SECRET_KEY_PREVIOUS: OLD_KEY.toString('base64') },
        ['secret-key', 'status'],
      );
      assert.equal(previousOnly.code, 2);
      assert.match(previousOnly.stderr, /IAM_SECRET_KEY_PREVIOUS is set but IAM_SECRET_KEY is not/);
      const same = await tessera(
        {
          IAM_SECRET_KEY: OLD_KEY.toString('base64'),
          IAM_SECRET_KEY_PREVIOUS: OLD_KEY.toString('base64'),
        },
        ['secret-key', 'status'],
      );
      assert.equal(same.code, 2);
      assert.match(same.stderr, /IAM_SECRET_KEY_PREVIOUS is the same key as IAM_SECRET_KEY/);
    });
  },
);
