// Private signing keys at rest, sealed with IAM_SECRET_KEY (AES-256-GCM, node:crypto): a copy
// of the database or of a backup no longer lets anyone sign tokens without the secret key too.
//
// Sealed text: `tessera-sealed:v1:<key id>:<iv>:<ciphertext>:<tag>`, base64url parts. The key id
// names which secret key sealed it (the first 8 bytes of an HMAC of a fixed label), so a wrong
// IAM_SECRET_KEY is told apart from damaged data. The kid is authenticated with the text, so a
// sealed key copied onto another row does not open.

import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'tessera-sealed:v1:';
const SEALED = /^tessera-sealed:v1:([0-9a-f]{16}):([\w-]{16}):([\w-]+):([\w-]{22})$/;

/** Sealed text cannot be opened: no secret key, another secret key, or damaged text. */
export class SealedKeyError extends Error {
  override readonly name = 'SealedKeyError';
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(PREFIX);
}

/** Which secret key sealed a stored text (its key id), or null when it is stored in clear. */
export function sealedKeyId(stored: string): string | null {
  if (!isSealed(stored)) return null;
  return stored.slice(PREFIX.length, PREFIX.length + 16);
}

export class PrivateKeySealer {
  /** Which secret key this is, safe to log and store: it reveals nothing of the key. */
  readonly keyId: string;

  constructor(private readonly secretKey: Buffer) {
    if (secretKey.length !== 32) throw new Error('IAM_SECRET_KEY must be 32 bytes');
    this.keyId = createHmac('sha256', secretKey)
      .update('tessera signing-key sealing key id')
      .digest('hex')
      .slice(0, 16);
  }

  seal(plaintext: string, kid: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.secretKey, iv);
    cipher.setAAD(Buffer.from(kid));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const parts = [iv, ciphertext, cipher.getAuthTag()].map((part) => part.toString('base64url'));
    return `${PREFIX}${this.keyId}:${parts.join(':')}`;
  }

  open(sealed: string, kid: string): string {
    const match = SEALED.exec(sealed);
    if (match === null) throw new SealedKeyError(`the private key of ${kid} is damaged`);
    const [, keyId, iv, ciphertext, tag] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
    ];
    if (keyId !== this.keyId) {
      throw new SealedKeyError(
        `IAM_SECRET_KEY (key id ${this.keyId}) is not the key the signing keys were encrypted with (key id ${keyId})`,
      );
    }
    try {
      const decipher = createDecipheriv(
        'aes-256-gcm',
        this.secretKey,
        Buffer.from(iv, 'base64url'),
      );
      decipher.setAAD(Buffer.from(kid));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([
        decipher.update(Buffer.from(ciphertext, 'base64url')),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SealedKeyError(`the private key of ${kid} does not decrypt with IAM_SECRET_KEY`);
    }
  }
}

/** Opens a stored private key: sealed text with the sealer, clear JWK text as it is. */
export function openPrivateKey(
  stored: string,
  kid: string,
  sealer: PrivateKeySealer | null,
): string {
  if (!isSealed(stored)) return stored;
  if (sealer === null) throw missingSecretKey();
  return sealer.open(stored, kid);
}

/** The database holds sealed keys, and IAM_SECRET_KEY is not set. */
export function missingSecretKey(): SealedKeyError {
  return new SealedKeyError(
    'the signing keys and webhook secrets in the database are encrypted: set IAM_SECRET_KEY to the key they were encrypted with',
  );
}
