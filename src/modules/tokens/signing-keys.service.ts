// The keys Tessera signs access tokens with. They live in the store, so every
// instance sharing a database signs with, and publishes, the same keys.
//
// Life of a key, derived from its stored times (nothing is ever updated in place):
//   published from creation → signing from `activatesAt` (the first key at once; a key added
//   by rotation only ACTIVATION_DELAY_MS later, so every instance and every verifier that
//   caches the JWKS for its max-age has seen it before a token carries its kid) → retired
//   when a newer key starts signing → still published until every token it can have signed
//   has expired: the longest token lifetime (43,200 minutes) plus a minute of clock skew
//   after retirement → no longer published.
// An emergency revocation (a leaked key) ends all of that at once: the key leaves the JWKS, so
// the tokens it signed stop verifying; when it was the one signing, a new key that signs at
// once is stored first.

import { type ChangeOrigin, SYSTEM_ORIGIN, signingKeyEvent } from '../changes.js';
import { type KeyObject, createPrivateKey, randomBytes, sign } from 'node:crypto';
import { type JWK, exportJWK, generateKeyPair } from 'jose';
import type { Clock } from '../../clock.js';
import { problem } from '../../problems.js';
import { DuplicateError } from '../../store/errors.js';
import type { SigningKeyRecord, Store } from '../../store/store.js';
import { SealedSecrets, signingKeyContext } from '../secret-key/secret-key.service.js';
import { isSealed, missingSecretKey } from '../private-key-sealing.js';

export const SIGNING_ALGORITHMS = ['ES256', 'EdDSA', 'RS256'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

/**
 * How long an instance trusts its copy of the key list before reading the store again: a
 * revocation reaches every instance's JWKS and signer within a second.
 */
export const KEY_CACHE_MS = 1_000;
/** A rotated key is published this long before it signs. */
export const ACTIVATION_DELAY_MS = 10 * 60_000;
/** `Cache-Control: max-age` of the JWKS; well below ACTIVATION_DELAY_MS - KEY_CACHE_MS. */
export const JWKS_MAX_AGE_SECONDS = 300;
/** The longest access token: jwt_expiration_in_minutes is at most 43,200 (30 days). */
export const MAX_TOKEN_LIFETIME_MS = 43_200 * 60_000;
const CLOCK_SKEW_MS = 60_000;

export type SigningKeyState = 'pending' | 'active' | 'retired' | 'unpublished' | 'revoked';

export interface SigningKeyStatus {
  kid: string;
  generation: number;
  algorithm: SigningAlgorithm;
  state: SigningKeyState;
  createdAt: number;
  activatesAt: number;
  /** When a newer key took over, or null. */
  retiredAt: number | null;
  /** Until when its public key is in the JWKS, or null while it signs or waits to. */
  publishedUntil: number | null;
  /** When it was revoked and left the JWKS, or null. */
  revokedAt: number | null;
}

/**
 * The key that signs at `now`: the newest unrevoked one activated (the first key, before any
 * has); -1 when every key is revoked.
 */
function activeIndex(keys: readonly SigningKeyRecord[], now: number): number {
  const active = keys.findLastIndex((key) => key.activatesAt <= now && key.revokedAt === null);
  return active !== -1 ? active : keys.findIndex((key) => key.revokedAt === null);
}

/** Whether a key signed at all before `now`: activated, and not revoked before it did. */
function hasSigned(key: SigningKeyRecord, now: number): boolean {
  return key.activatesAt <= now && (key.revokedAt === null || key.revokedAt > key.activatesAt);
}

/** Each key's state at `now`, in generation order. */
export function describeSigningKeys(keys: readonly SigningKeyRecord[], now: number) {
  const active = activeIndex(keys, now);
  return keys.map((key, index): SigningKeyStatus => {
    const successors = keys.slice(index + 1).filter((later) => hasSigned(later, now));
    const retiredAt =
      successors.length > 0 && hasSigned(key, now)
        ? Math.min(...successors.map((later) => later.activatesAt))
        : null;
    const publishedUntil =
      retiredAt === null ? null : retiredAt + MAX_TOKEN_LIFETIME_MS + CLOCK_SKEW_MS;
    const state: SigningKeyState =
      key.revokedAt !== null
        ? 'revoked'
        : index === active
          ? 'active'
          : index > active || retiredAt === null
            ? 'pending'
            : publishedUntil! > now
              ? 'retired'
              : 'unpublished';
    return {
      kid: key.kid,
      generation: key.generation,
      algorithm: key.algorithm,
      state,
      createdAt: key.createdAt,
      activatesAt: key.activatesAt,
      retiredAt,
      publishedUntil,
      revokedAt: key.revokedAt,
    };
  });
}

/** A revocation: the revoked key, and the key that signs now (new when the revoked one did). */
export interface SigningKeyRevocation {
  revoked: SigningKeyStatus;
  active: SigningKeyStatus;
  /** The key added to sign in the revoked one's place, or null. */
  added: SigningKeyRecord | null;
}

/** A public key as the JWKS publishes it. */
export type PublishedKey = JWK & { kty: string; kid: string; alg: string; use: 'sig' };

export interface Signer {
  kid: string;
  algorithm: SigningAlgorithm;
  /** The compact JWS of `claims` with the header `{ alg, typ: "at+jwt", kid }`. */
  sign: (claims: Record<string, unknown>) => Promise<string>;
}

/** The digest node:crypto signs with for each algorithm (Ed25519 hashes internally). */
const DIGESTS: Record<SigningAlgorithm, string | null> = {
  ES256: 'sha256',
  RS256: 'sha256',
  EdDSA: null,
};

export class SigningKeys {
  #cache: { keys: SigningKeyRecord[]; loadedAt: number } | null = null;
  #loading: Promise<SigningKeyRecord[]> | null = null;
  readonly #signers = new Map<string, Signer>();
  readonly #secrets: SealedSecrets;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      algorithm: SigningAlgorithm;
      /** Seals private keys at rest (IAM_SECRET_KEY); without it, they are stored in clear. */
      secrets?: SealedSecrets;
    },
  ) {
    this.#secrets =
      deps.secrets ?? new SealedSecrets({ store: deps.store, clock: deps.clock, secretKey: null });
  }

  /**
   * Start-up: every stored private key must open (a missing or wrong IAM_SECRET_KEY for sealed
   * keys throws SealedKeyError, naming the cause), and with IAM_SECRET_KEY set, keys still
   * stored in clear are sealed. Returns how many keys it sealed, and how many stay in clear.
   */
  async sealStoredKeys(): Promise<{ sealed: number; inClear: number }> {
    let sealed = 0;
    let inClear = 0;
    for (const key of await this.#load(true)) {
      this.#secrets.open(key.privateKey, signingKeyContext(key.kid));
      if (isSealed(key.privateKey)) continue;
      if (!this.#secrets.sealing) {
        inClear++;
        continue;
      }
      const next = await this.#secrets.seal(key.privateKey, signingKeyContext(key.kid));
      // Conditional: of instances starting together, one seals each key.
      if (await this.deps.store.signingKeys.replacePrivateKey(key.kid, key.privateKey, next)) {
        sealed++;
      }
    }
    this.#cache = null;
    return { sealed, inClear };
  }

  /**
   * Makes sure a key of the configured algorithm exists: on first start the first key
   * (signing at once); after IAM_TOKEN_ALG changed, a new key, as a rotation. Safe when
   * several instances start at once: the store lets one of them add each generation.
   * Returns the key it added, or null.
   */
  async ensureSigningKey(): Promise<SigningKeyRecord | null> {
    const keys = await this.#load(true);
    const latest = keys.at(-1);
    if (latest?.algorithm === this.deps.algorithm) return null;
    return this.#add(latest, {
      retry: false,
      immediately: latest === undefined,
      origin: SYSTEM_ORIGIN,
    });
  }

  /** Adds a key of the configured algorithm that starts signing after ACTIVATION_DELAY_MS. */
  async rotate(origin: ChangeOrigin): Promise<SigningKeyRecord> {
    const keys = await this.#load(true);
    return this.#addOrFail(keys.at(-1), keys.length === 0, origin);
  }

  /**
   * Emergency revocation of a leaked key: it leaves the JWKS at once (on other instances
   * within KEY_CACHE_MS), so tokens it signed stop verifying. When it is the key that signs,
   * a new key that signs at once is stored first, so there is always an active key. Revoking
   * a revoked key changes nothing.
   */
  async revokeSigningKey(kid: string, origin: ChangeOrigin): Promise<SigningKeyRevocation> {
    const keys = await this.#load(true);
    const index = keys.findIndex((key) => key.kid === kid);
    if (index === -1) throw problem('not-found', `No signing key with kid "${kid}".`);
    const now = this.deps.clock.now();
    let added: SigningKeyRecord | null = null;
    const key = keys[index]!;
    if (key.revokedAt === null) {
      if (activeIndex(keys, now) === index) {
        added = await this.#addOrFail(keys.at(-1), true, origin);
      }
      await this.deps.store.signingKeys.revokeSigningKey(kid, now, [
        signingKeyEvent('signing_key.revoked', origin, now, key, { ...key, revokedAt: now }),
      ]);
      this.#signers.delete(kid);
      this.#cache = null;
    }
    const after = await this.#load(true);
    const statuses = describeSigningKeys(after, now);
    return {
      revoked: statuses.find((status) => status.kid === kid)!,
      active: statuses[activeIndex(after, now)]!,
      added,
    };
  }

  /** Every stored key with its state now (for operators). */
  async listSigningKeys(): Promise<SigningKeyStatus[]> {
    return describeSigningKeys(await this.#load(true), this.deps.clock.now());
  }

  /** One stored key with its state now; not-found when no key has this kid. */
  async findSigningKey(kid: string): Promise<SigningKeyStatus> {
    const found = (await this.listSigningKeys()).find((key) => key.kid === kid);
    if (found === undefined) throw problem('not-found', `No signing key with kid "${kid}".`);
    return found;
  }

  /** The key to sign with now; creates the first key if the store has none. */
  async currentSigner(): Promise<Signer> {
    let keys = await this.#load(false);
    if (keys.length === 0) {
      await this.ensureSigningKey();
      keys = await this.#load(true);
    }
    return this.#signer(keys[activeIndex(keys, this.deps.clock.now())]!);
  }

  /** The public keys verifiers need now: pending, active and retired-but-needed ones. */
  async publishedKeys(): Promise<PublishedKey[]> {
    const keys = await this.#load(false);
    const statuses = describeSigningKeys(keys, this.deps.clock.now());
    return keys
      .filter((_, index) => !['unpublished', 'revoked'].includes(statuses[index]!.state))
      .map((key) => ({
        ...(key.publicJwk as JWK),
        kty: String(key.publicJwk.kty),
        kid: key.kid,
        alg: key.algorithm,
        use: 'sig' as const,
      }));
  }

  async #load(fresh: boolean): Promise<SigningKeyRecord[]> {
    const now = this.deps.clock.now();
    const cached = this.#cache;
    if (
      !fresh &&
      cached !== null &&
      now - cached.loadedAt < KEY_CACHE_MS &&
      now >= cached.loadedAt
    ) {
      return cached.keys;
    }
    // Concurrent readers of an expired cache share one query.
    if (!fresh && this.#loading !== null) return this.#loading;
    const loading = this.deps.store.signingKeys.listSigningKeys().then((keys) => {
      this.#cache = { keys, loadedAt: now };
      return keys;
    });
    this.#loading = loading;
    try {
      return await loading;
    } finally {
      if (this.#loading === loading) this.#loading = null;
    }
  }

  async #addOrFail(
    latest: SigningKeyRecord | undefined,
    immediately: boolean,
    origin: ChangeOrigin,
  ) {
    const added = await this.#add(latest, { retry: true, immediately, origin });
    if (added === null) {
      throw new Error(
        'Other processes added signing keys at the same moment, four times in a row; try again.',
      );
    }
    return added;
  }

  async #add(
    latest: SigningKeyRecord | undefined,
    options: { retry: boolean; immediately: boolean; origin: ChangeOrigin },
  ): Promise<SigningKeyRecord | null> {
    // A key added in clear beside sealed ones would undo IAM_SECRET_KEY for every token it signs.
    const stored = await this.#load(false);
    if (!this.#secrets.sealing && stored.some((key) => isSealed(key.privateKey))) {
      throw missingSecretKey();
    }
    for (let attempt = 0; ; attempt++) {
      const now = this.deps.clock.now();
      const record = await generateSigningKey(this.deps.algorithm, this.#secrets, {
        generation: (latest?.generation ?? 0) + 1,
        createdAt: now,
        activatesAt: options.immediately ? now : now + ACTIVATION_DELAY_MS,
      });
      try {
        await this.deps.store.signingKeys.insertSigningKey(record, [
          signingKeyEvent('signing_key.rotated', options.origin, now, null, record),
        ]);
        this.#cache = null;
        return record;
      } catch (error) {
        // Another instance added this generation at the same moment.
        if (!(error instanceof DuplicateError)) throw error;
        if (!options.retry || attempt >= 3) {
          this.#cache = null;
          return null;
        }
        latest = (await this.#load(true)).at(-1);
      }
    }
  }

  #signer(record: SigningKeyRecord): Signer {
    let signer = this.#signers.get(record.kid);
    if (signer === undefined) {
      const jwk = JSON.parse(
        this.#secrets.open(record.privateKey, signingKeyContext(record.kid)),
      ) as JWK;
      const key = createPrivateKey({ key: jwk, format: 'jwk' });
      const header = { alg: record.algorithm, typ: 'at+jwt', kid: record.kid };
      signer = {
        kid: record.kid,
        algorithm: record.algorithm,
        sign: compactSigner(record.algorithm, key, header),
      };
      this.#signers.set(record.kid, signer);
    }
    return signer;
  }
}

/**
 * JWS compact serialization (RFC 7515 §7.1) over node:crypto. An ES256 signature (the default)
 * is made synchronously, on the event loop: about 30 µs of it, but less CPU in all than handing
 * it to libuv's thread pool, whose hand-over and wake-up cost a busy 2-core machine more than
 * the signature (bench/README.md, "Tokens on PostgreSQL"). RS256, whose RSA-2048 signature
 * costs several hundred µs, and EdDSA (not measured so) are signed on the pool through
 * node:crypto's callback form. Verification, where the security lies, is jose's
 * (outside tokens, and every algorithm's tokens in the tests); signing is done here because
 * jose's signing path costs about 70 µs of event-loop time per token against 20 µs for this
 * (docs/decisions.md).
 * ECDSA signatures are r ‖ s, as RFC 7518 §3.4 requires; RSA is PKCS #1 v1.5.
 *
 * The key is handed over as the KeyObject itself, and an ECDSA signature converted from DER
 * here: `{ key, dsaEncoding: 'ieee-p1363' }` sent node:crypto through its key-preparation path
 * on every call, 37–55 µs of the main thread and 96–129 µs of the process a signature against
 * 5–10 and 37–47 µs (16 signatures in flight, 6,000 a round, Node.js 24; bench/README.md,
 * "Tokens on PostgreSQL").
 */
function compactSigner(
  algorithm: SigningAlgorithm,
  key: KeyObject,
  header: Record<string, string>,
): Signer['sign'] {
  const encodedHeader = Buffer.from(JSON.stringify(header)).toString('base64url');
  const digest = DIGESTS[algorithm];
  const encode =
    algorithm === 'ES256'
      ? (signature: Buffer) => ecdsaDerToJose(signature, 32)
      : (signature: Buffer) => signature;
  const encodeClaims = (claims: Record<string, unknown>) =>
    `${encodedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  if (algorithm === 'ES256') {
    return (claims) => {
      const input = encodeClaims(claims);
      const signature = sign(digest, Buffer.from(input), key);
      return Promise.resolve(`${input}.${encode(signature).toString('base64url')}`);
    };
  }
  return (claims) =>
    new Promise((resolve, reject) => {
      const input = encodeClaims(claims);
      sign(digest, Buffer.from(input), key, (error, signature) => {
        if (error !== null) reject(error);
        else resolve(`${input}.${encode(signature).toString('base64url')}`);
      });
    });
}

/**
 * An ECDSA signature's DER form (SEQUENCE of the INTEGERs r and s) as JWS writes it: r and s
 * each as `size` big-endian bytes, r ‖ s. DER drops an integer's leading zero bytes and adds
 * one before a high bit, so each is cut or padded to `size`.
 */
export function ecdsaDerToJose(der: Buffer, size: number): Buffer {
  // SEQUENCE, its length (one byte: at most 2 × (2 + 1 + 66) for P-521), then the integers.
  let offset = der[1]! & 0x80 ? 2 + (der[1]! & 0x7f) : 2;
  const out = Buffer.alloc(2 * size);
  for (let part = 0; part < 2; part++) {
    if (der[offset] !== 0x02) throw new Error('Not a DER-encoded ECDSA signature.');
    const length = der[offset + 1]!;
    let start = offset + 2;
    let bytes = length;
    while (bytes > size && der[start] === 0) {
      start++;
      bytes--;
    }
    if (bytes > size) throw new Error('An ECDSA signature integer is longer than its curve.');
    der.copy(out, part * size + (size - bytes), start, start + bytes);
    offset += 2 + length;
  }
  return out;
}

async function generateSigningKey(
  algorithm: SigningAlgorithm,
  secrets: SealedSecrets,
  times: { generation: number; createdAt: number; activatesAt: number },
): Promise<SigningKeyRecord> {
  const { publicKey, privateKey } = await generateKeyPair(algorithm, {
    extractable: true,
    ...(algorithm === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  });
  // 128 random bits in hex: unguessable, and safe in any URL, header or command line (base64url
  // began with '-' one time in 64, which `tessera signing-keys revoke KID` took for an option).
  const kid = randomBytes(16).toString('hex');
  const privateJwk = JSON.stringify(await exportJWK(privateKey));
  return {
    kid,
    algorithm,
    publicJwk: { ...(await exportJWK(publicKey)) },
    privateKey: await secrets.seal(privateJwk, signingKeyContext(kid)),
    ...times,
    revokedAt: null,
  };
}
