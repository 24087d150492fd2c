import type { SigningAlgorithm } from './signing-keys.service.js';

/** How Tessera issues and accepts tokens (IAM_TOKEN_ALG, IAM_ISSUER, IAM_ALLOW_INSECURE_JWKS). */
export interface TokenSettings {
  /** The algorithm of new signing keys. */
  algorithm: SigningAlgorithm;
  /** `iss` of every access token; discovery URLs start with it. */
  issuer: string;
  /** Lift the SSRF fence's scheme and address rules (tests and local development only). */
  allowInsecureJwks: boolean;
  /** IAM_SECRET_KEY (32 bytes): private signing keys are sealed with it; null: kept in clear. */
  secretKey?: Buffer | null;
  /** IAM_SECRET_KEY_PREVIOUS: opens what the key before IAM_SECRET_KEY sealed. */
  previousSecretKey?: Buffer | null;
  /** Minimum ms between JWKS fetches caused by unknown kids (default 30 s). */
  jwksCooldownMs?: number;
  /** How long fetched JWKS keys are used before a refetch (default 10 min). */
  jwksCacheMaxAgeMs?: number;
}

export const DEFAULT_TOKEN_SETTINGS: TokenSettings = {
  algorithm: 'ES256',
  issuer: 'http://127.0.0.1:8080',
  allowInsecureJwks: false,
};
