// The secret key (IAM_SECRET_KEY) and the secrets sealed with it: private signing keys and
// webhook signing secrets. A rotation gives the service a new key and the old one as
// IAM_SECRET_KEY_PREVIOUS: it opens what either sealed, and `reseal` seals everything again
// under the new key, after which the old one is no longer needed.
//
// Rolling restarts: while the database still holds secrets sealed with the previous key, new
// ones are sealed with it too, so instances not yet given the new key open everything; once a
// re-seal has moved every secret to the new key, new ones are sealed with it.

import type { Clock } from '../../clock.js';
import type { NewEvent, Store, StoredSecret } from '../../store/store.js';
import { type ChangeOrigin, resourceEvent } from '../changes.js';
import {
  PrivateKeySealer,
  SealedKeyError,
  missingSecretKey,
  sealedKeyId,
} from '../private-key-sealing.js';

/** What a sealed signing key is bound to: its kid (a sealed key copied to another row fails). */
export function signingKeyContext(kid: string): string {
  return kid;
}

/** What a sealed webhook secret is bound to: its webhook. */
export function webhookSecretContext(webhookId: string): string {
  return `webhook:${webhookId}`;
}

function contextOf(secret: StoredSecret): string {
  return secret.kind === 'signing_key'
    ? signingKeyContext(secret.id)
    : webhookSecretContext(secret.id);
}

/** How the stored secrets are sealed: counts by key, as `tessera secret-key status` shows. */
export interface SecretInventory {
  currentKeyId: string | null;
  previousKeyId: string | null;
  signingKeys: number;
  webhookSecrets: number;
  sealedWithCurrent: number;
  sealedWithPrevious: number;
  inClear: number;
  /** Key ids of secrets that neither key opens, with how many each. */
  sealedWithOther: Record<string, number>;
}

export interface ResealResult {
  keyId: string;
  signingKeys: number;
  webhookSecrets: number;
  /** The key id the secrets were sealed with before, when it was the previous key. */
  previousKeyId: string | null;
  /** How many of them were stored in clear. */
  inClear: number;
}

/** A re-seal meets a secret that keeps changing under it this many times: it gives up. */
const RESEAL_ATTEMPTS = 5;

export class SealedSecrets {
  readonly #current: PrivateKeySealer | null;
  readonly #previous: PrivateKeySealer | null;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      /** IAM_SECRET_KEY: seals secrets at rest; null: they are stored in clear. */
      secretKey: Buffer | null;
      /** IAM_SECRET_KEY_PREVIOUS: opens what the key before it sealed. */
      previousSecretKey?: Buffer | null;
    },
  ) {
    this.#current = deps.secretKey === null ? null : new PrivateKeySealer(deps.secretKey);
    const previous = deps.previousSecretKey ?? null;
    this.#previous = previous === null ? null : new PrivateKeySealer(previous);
  }

  /** True when secrets are sealed at rest (IAM_SECRET_KEY is set). */
  get sealing(): boolean {
    return this.#current !== null;
  }

  /** The text of a stored secret: opened with whichever key sealed it, or as stored in clear. */
  open(stored: string, context: string): string {
    const keyId = sealedKeyId(stored);
    if (keyId === null) return stored;
    if (this.#current === null) throw missingSecretKey();
    return this.#sealerFor(keyId, context).open(stored, context);
  }

  /**
   * The stored text of a new secret: sealed with the current key, or with the previous one
   * while the database still holds secrets sealed with it (instances without the new key must
   * open it); in clear without a key.
   */
  async seal(plaintext: string, context: string): Promise<string> {
    const sealer = await this.#sealingKey();
    return sealer === null ? plaintext : sealer.seal(plaintext, context);
  }

  /**
   * Start-up: every sealed secret is sealed with a key this process has. SealedKeyError names
   * the first that is not (say, the previous key was removed before a re-seal).
   */
  async assertEverySecretOpens(): Promise<void> {
    for (const secret of await this.deps.store.storedSecrets.listStoredSecrets()) {
      const keyId = sealedKeyId(secret.stored);
      if (keyId === null) continue;
      if (this.#current === null) throw missingSecretKey();
      this.#sealerFor(keyId, contextOf(secret));
    }
  }

  /** How the stored secrets are sealed now. */
  async inventory(): Promise<SecretInventory> {
    const secrets = await this.deps.store.storedSecrets.listStoredSecrets();
    const inventory: SecretInventory = {
      currentKeyId: this.#current?.keyId ?? null,
      previousKeyId: this.#previous?.keyId ?? null,
      signingKeys: secrets.filter((secret) => secret.kind === 'signing_key').length,
      webhookSecrets: secrets.filter((secret) => secret.kind !== 'signing_key').length,
      sealedWithCurrent: 0,
      sealedWithPrevious: 0,
      inClear: 0,
      sealedWithOther: {},
    };
    for (const secret of secrets) {
      const keyId = sealedKeyId(secret.stored);
      if (keyId === null) inventory.inClear++;
      else if (keyId === inventory.currentKeyId) inventory.sealedWithCurrent++;
      else if (keyId === inventory.previousKeyId) inventory.sealedWithPrevious++;
      else inventory.sealedWithOther[keyId] = (inventory.sealedWithOther[keyId] ?? 0) + 1;
    }
    return inventory;
  }

  /**
   * Seals every stored secret that is not sealed with the current key (sealed with the previous
   * one, or in clear) under the current key, in one transaction per pass with a
   * `secret_key.resealed` event. Passes repeat until one finds nothing left, so a secret another
   * instance sealed with the previous key meanwhile is re-sealed too.
   */
  async reseal(origin: ChangeOrigin): Promise<ResealResult> {
    const current = this.#current;
    if (current === null) {
      throw new SealedKeyError(
        'IAM_SECRET_KEY is not set: set it to the key the secrets should be sealed with (and IAM_SECRET_KEY_PREVIOUS to the one they are sealed with now)',
      );
    }
    const result: ResealResult = {
      keyId: current.keyId,
      signingKeys: 0,
      webhookSecrets: 0,
      previousKeyId: null,
      inClear: 0,
    };
    for (let conflicts = 0; conflicts < RESEAL_ATTEMPTS;) {
      const stale = (await this.deps.store.storedSecrets.listStoredSecrets()).filter(
        (secret) => sealedKeyId(secret.stored) !== current.keyId,
      );
      if (stale.length === 0) return result;
      const replacements = stale.map((secret) => ({
        secret,
        next: current.seal(this.open(secret.stored, contextOf(secret)), contextOf(secret)),
      }));
      const pass = {
        signingKeys: stale.filter((secret) => secret.kind === 'signing_key').length,
        webhookSecrets: stale.filter((secret) => secret.kind !== 'signing_key').length,
        inClear: stale.filter((secret) => sealedKeyId(secret.stored) === null).length,
        previousKeyId: stale.some((secret) => sealedKeyId(secret.stored) !== null)
          ? (this.#previous?.keyId ?? null)
          : null,
      };
      const event = resealedEvent(origin, this.deps.clock.now(), current.keyId, pass);
      if (await this.deps.store.storedSecrets.replaceStoredSecrets(replacements, [event])) {
        result.signingKeys += pass.signingKeys;
        result.webhookSecrets += pass.webhookSecrets;
        result.inClear += pass.inClear;
        result.previousKeyId ??= pass.previousKeyId;
      } else {
        // A secret changed between the read and the write (a webhook's secret rotated): again.
        conflicts++;
      }
    }
    throw new Error('the secrets kept changing while they were re-sealed; run it again');
  }

  /** The key that opens text sealed with `keyId`; SealedKeyError, naming both, when none does. */
  #sealerFor(keyId: string, context: string): PrivateKeySealer {
    if (keyId === this.#current?.keyId) return this.#current;
    if (keyId === this.#previous?.keyId) return this.#previous;
    const what = context.startsWith('webhook:')
      ? `the secret of webhook ${context.slice('webhook:'.length)}`
      : `the signing key ${context}`;
    throw new SealedKeyError(
      `${what} is encrypted with key id ${keyId}, which is neither IAM_SECRET_KEY (key id ${this.#current?.keyId ?? 'unset'}) ` +
        `nor IAM_SECRET_KEY_PREVIOUS (${this.#previous === null ? 'unset' : `key id ${this.#previous.keyId}`}); ` +
        'set IAM_SECRET_KEY_PREVIOUS to the key it was encrypted with',
    );
  }

  async #sealingKey(): Promise<PrivateKeySealer | null> {
    if (this.#current === null || this.#previous === null) return this.#current;
    const previousKeyId = this.#previous.keyId;
    const secrets = await this.deps.store.storedSecrets.listStoredSecrets();
    return secrets.some((secret) => sealedKeyId(secret.stored) === previousKeyId)
      ? this.#previous
      : this.#current;
  }
}

/**
 * `secret_key.resealed`: the secrets moved from one key to another (key ids: they say which
 * key, and reveal nothing of it), and how many of each kind.
 */
function resealedEvent(
  origin: ChangeOrigin,
  occurredAt: number,
  keyId: string,
  pass: { signingKeys: number; webhookSecrets: number; previousKeyId: string | null },
): NewEvent {
  return resourceEvent({
    type: 'secret_key.resealed',
    origin,
    occurredAt,
    clientId: null,
    resource: { type: 'secret_key', id: { key_id: keyId } },
    changes: [
      { member: 'key_id', before: pass.previousKeyId, after: keyId },
      { member: 'signing_keys', before: null, after: pass.signingKeys },
      { member: 'webhook_secrets', before: null, after: pass.webhookSecrets },
    ],
  });
}
