// Checking an ID token issued outside Tessera (Google, Apple, any OpenID provider) against
// the application's external_token_validation (docs/api.md, Access tokens). One pipeline of small named checks;
// the exchange stops at the first that fails, and the dry run reports which one it was.

import { LRUCache } from 'lru-cache';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { Compile } from 'typebox/compile';
import type { Clock } from '../../clock.js';
import { quoteInput } from '../../problems.js';
import type { ApplicationRecord } from '../../store/store.js';
import { isObject } from '../merge-patch.js';
import { Identifier, Provider } from '../users/users.schemas.js';
import { type OutboundPolicy, OutboundRefusedError, refuseUrl } from './outbound-fetch.js';
import { ProviderKeys, isUnavailable } from './provider-keys.js';

/** The checks, in the order they run. */
export const CHECKS = [
  'format',
  'issuer',
  'entry',
  'algorithm',
  'jwks_uri',
  'jwks',
  'key',
  'signature',
  'audience',
  'expiry',
  'not_before',
  'issued_at',
  'claims',
  'identifier',
  'user',
  'email',
] as const;
export type CheckName = (typeof CHECKS)[number];

export interface CheckFailure {
  check: CheckName;
  detail: string;
  /** The provider could not be reached: retry later (503), the token may be fine. */
  retryable: boolean;
}

/** Algorithms an outside token may use: asymmetric only. `none` and HMAC never verify. */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

// Compiled once: Value.Check would rebuild each pattern's RegExp on every exchange.
const PROVIDER = Compile(Provider);
const IDENTIFIER = Compile(Identifier);

/** exp, nbf and iat may be off by this much. */
export const CLOCK_TOLERANCE_SECONDS = 60;

/** An entry of external_token_validation, checked and normalised. */
export interface ValidationEntry {
  provider: string;
  issuer: string;
  jwksUri: URL;
  audience: string[];
  identifierClaim: string;
  algorithms: string[];
}

export interface TokenInspection {
  header: Record<string, unknown> | null;
  claims: Record<string, unknown> | null;
  /** The entry's key (the user's provider), once an entry matched the issuer. */
  provider: string | null;
  /** The matched entry as stored. */
  entry: Record<string, unknown> | null;
  /** The user's identifier, once the token is verified. */
  identifier: string | null;
  failure: CheckFailure | null;
}

const fail = (check: CheckName, detail: string, retryable = false): CheckFailure => ({
  check,
  detail,
  retryable,
});

/** An entry of external_token_validation that names an issuer, as read for its version. */
interface IssuerEntry {
  provider: string;
  raw: Record<string, unknown>;
  /** The entry checked by readEntry, or why it is broken. */
  read: ValidationEntry | CheckFailure;
}

export class ExternalTokenVerifier {
  readonly #providerKeys: ProviderKeys;
  #lastDecoded: { token: string; decoded: ReturnType<typeof decodeToken> } | null = null;
  /**
   * Per application, its external_token_validation entries by issuer, each checked once per
   * version of the application (its etag, new on every change): the next exchange after a
   * change reads the changed entries, every other exchange reuses them.
   */
  readonly #entries = new LRUCache<string, { etag: string; byIssuer: Map<string, IssuerEntry> }>({
    max: 1000,
  });

  constructor(
    private readonly deps: {
      clock: Clock;
      policy: OutboundPolicy;
      /** Minimum time between two fetches caused by unknown kids (jose's cooldownDuration). */
      cooldownMs?: number;
      /** How long fetched keys are used before they are fetched again (jose's cacheMaxAge). */
      cacheMaxAgeMs?: number;
      /** Told of each JWKS fetch and whether it brought a key set (metrics). */
      onJwksFetch?: (outcome: 'ok' | 'failed') => void;
    },
  ) {
    this.#providerKeys = new ProviderKeys(deps);
  }

  async inspect(application: ApplicationRecord, token: string): Promise<TokenInspection> {
    const result: TokenInspection = {
      header: null,
      claims: null,
      provider: null,
      entry: null,
      identifier: null,
      failure: null,
    };
    const decoded = this.#decode(token);
    if ('check' in decoded) return { ...result, failure: decoded };
    result.header = decoded.header;
    result.claims = decoded.claims;

    const matched = findEntry(application, decoded.claims, this.#entriesOf(application));
    if ('check' in matched) return { ...result, failure: matched };
    result.provider = matched.provider;
    result.entry = matched.raw;

    const entry = matched.read;
    if ('check' in entry) return { ...result, failure: entry };

    const algorithm = checkAlgorithm(decoded.header, entry);
    if (algorithm !== null) return { ...result, failure: algorithm };

    const verified = await this.#verify(token, entry);
    if ('check' in verified) return { ...result, failure: verified };

    const identifier = checkIdentifier(verified.claims, entry);
    if (typeof identifier !== 'string') return { ...result, failure: identifier };
    return { ...result, identifier };
  }

  /**
   * The user an application's token would name if it verifies, from its unverified claims and
   * the application's entries as last read (null when none were read, or the token names no
   * entry or no valid identifier). Only a guess: inspect() decides.
   */
  expectedIdentity(
    clientId: string,
    token: string,
  ): { provider: string; identifier: string } | null {
    const byIssuer = this.#entries.get(clientId)?.byIssuer;
    if (byIssuer === undefined) return null;
    const decoded = this.#decode(token);
    if ('check' in decoded || typeof decoded.claims.iss !== 'string') return null;
    const entry = byIssuer.get(decoded.claims.iss)?.read;
    if (entry === undefined || 'check' in entry) return null;
    const identifier = checkIdentifier(decoded.claims, entry);
    return typeof identifier === 'string' ? { provider: entry.provider, identifier } : null;
  }

  /**
   * decodeToken, remembering the last token: an exchange decodes its token for
   * expectedIdentity and again in inspect (6 µs each; nothing in it is trusted before jose
   * verifies the signature).
   */
  #decode(token: string): ReturnType<typeof decodeToken> {
    const last = this.#lastDecoded;
    if (last !== null && last.token === token) return last.decoded;
    const decoded = decodeToken(token);
    this.#lastDecoded = { token, decoded };
    return decoded;
  }

  /** The application's entries by issuer (the first entry naming an issuer wins), per etag. */
  #entriesOf(application: ApplicationRecord): Map<string, IssuerEntry> {
    const cached = this.#entries.get(application.clientId);
    if (cached !== undefined && cached.etag === application.etag) return cached.byIssuer;
    const byIssuer = new Map<string, IssuerEntry>();
    for (const [provider, raw] of Object.entries(application.externalTokenValidation ?? {})) {
      if (!isObject(raw) || typeof raw.issuer !== 'string' || byIssuer.has(raw.issuer)) continue;
      byIssuer.set(raw.issuer, { provider, raw, read: readEntry(provider, raw, this.deps.policy) });
    }
    this.#entries.set(application.clientId, { etag: application.etag, byIssuer });
    return byIssuer;
  }

  async #verify(
    token: string,
    entry: ValidationEntry,
  ): Promise<{ claims: Record<string, unknown> } | CheckFailure> {
    try {
      const { payload } = await jwtVerify(token, this.#providerKeys.resolverFor(entry.jwksUri), {
        issuer: entry.issuer,
        audience: entry.audience,
        algorithms: entry.algorithms,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(this.deps.clock.now()),
        requiredClaims: ['exp'],
      });
      // jose checks iat only against a maximum age; one from the future is refused here.
      const nowSeconds = this.deps.clock.now() / 1000;
      if (typeof payload.iat === 'number' && payload.iat > nowSeconds + CLOCK_TOLERANCE_SECONDS) {
        return fail(
          'issued_at',
          `The token claims to be issued in the future (iat), beyond ${CLOCK_TOLERANCE_SECONDS} s of leeway.`,
        );
      }
      return { claims: payload as Record<string, unknown> };
    } catch (error) {
      return classifyVerificationError(error, entry);
    }
  }
}

function decodeToken(
  token: string,
): { header: Record<string, unknown>; claims: Record<string, unknown> } | CheckFailure {
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) {
    return fail('format', 'The token is not a signed JWT (three base64url parts, JWS compact).');
  }
  try {
    const header = decodeProtectedHeader(token) as Record<string, unknown>;
    const claims = decodeJwt(token) as Record<string, unknown>;
    return { header, claims };
  } catch (error) {
    return fail('format', `The token cannot be decoded: ${(error as Error).message}.`);
  }
}

function findEntry(
  application: ApplicationRecord,
  claims: Record<string, unknown>,
  byIssuer: Map<string, IssuerEntry>,
): IssuerEntry | CheckFailure {
  if (application.externalTokenValidation === null) {
    return fail(
      'issuer',
      `Application "${application.clientId}" has no external_token_validation: it accepts no outside tokens.`,
    );
  }
  if (typeof claims.iss !== 'string') return fail('issuer', 'The token has no "iss" claim.');
  const matched = byIssuer.get(claims.iss);
  if (matched !== undefined) return matched;
  return fail(
    'issuer',
    `No entry of external_token_validation has the issuer "${quoteInput(claims.iss)}" of this token.`,
  );
}

/** The entry's members, checked: a broken entry is a configuration problem, named as such. */
export function readEntry(
  provider: string,
  raw: Record<string, unknown>,
  policy: OutboundPolicy,
): ValidationEntry | CheckFailure {
  const where = `external_token_validation entry "${provider}"`;
  if (!PROVIDER.Check(provider)) {
    return fail('entry', `The ${where} is not a valid provider label (like google_oauth2).`);
  }
  if (typeof raw.jwks_uri !== 'string' || !URL.canParse(raw.jwks_uri)) {
    return fail('entry', `The ${where} needs "jwks_uri", an https: URL.`);
  }
  const jwksUri = new URL(raw.jwks_uri);
  const refused = refuseUrl(jwksUri, policy);
  if (refused !== null) return fail('jwks_uri', `The ${where}: ${refused}.`);
  const audience = typeof raw.audience === 'string' ? [raw.audience] : raw.audience;
  if (
    !Array.isArray(audience) ||
    audience.length === 0 ||
    !audience.every((item) => typeof item === 'string' && item !== '')
  ) {
    return fail('entry', `The ${where} needs "audience": a string or a non-empty array of them.`);
  }
  const identifierClaim = raw.identifier_claim ?? 'sub';
  if (typeof identifierClaim !== 'string' || identifierClaim === '') {
    return fail('entry', `The ${where} has an "identifier_claim" that is not a claim name.`);
  }
  let algorithms: string[] = [...ASYMMETRIC_ALGORITHMS];
  if (raw.algorithms !== undefined) {
    if (!Array.isArray(raw.algorithms)) {
      return fail('entry', `The ${where} has "algorithms" that is not an array.`);
    }
    // Anything outside the asymmetric list (none, HS256…) is dropped, whatever is configured.
    algorithms = raw.algorithms.filter(
      (item): item is string =>
        typeof item === 'string' && (ASYMMETRIC_ALGORITHMS as readonly string[]).includes(item),
    );
    if (algorithms.length === 0) {
      return fail(
        'entry',
        `The ${where} allows no usable algorithm (asymmetric only: ${ASYMMETRIC_ALGORITHMS.join(', ')}).`,
      );
    }
  }
  return {
    provider,
    issuer: raw.issuer as string,
    jwksUri,
    audience: audience as string[],
    identifierClaim,
    algorithms,
  };
}

function checkAlgorithm(header: Record<string, unknown>, entry: ValidationEntry) {
  const alg = header.alg;
  if (typeof alg !== 'string' || !entry.algorithms.includes(alg)) {
    return fail(
      'algorithm',
      `The token's algorithm ${quoteInput(JSON.stringify(alg ?? null))} is not allowed; allowed: ${entry.algorithms.join(', ')}.`,
    );
  }
  return null;
}

function checkIdentifier(
  claims: Record<string, unknown>,
  entry: ValidationEntry,
): string | CheckFailure {
  const value = claims[entry.identifierClaim];
  if (typeof value !== 'string' || !IDENTIFIER.Check(value)) {
    return fail(
      'identifier',
      `The "${entry.identifierClaim}" claim must be a string of 1–256 characters without control characters, not "." or "..".`,
    );
  }
  return value;
}

// `iss` and the algorithm are not classified here: the entry was chosen by the token's `iss`,
// and checkAlgorithm refused a disallowed algorithm before jose ran.
function classifyVerificationError(error: unknown, entry: ValidationEntry): CheckFailure {
  if (error instanceof OutboundRefusedError) return fail('jwks_uri', `${error.message}.`);
  if (isUnavailable(error)) {
    return fail(
      'jwks',
      `The keys at ${entry.jwksUri.origin}${entry.jwksUri.pathname} cannot be fetched now and no cached key fits; retry later.`,
      true,
    );
  }
  if (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return fail(
      'key',
      "No single key of the provider's JWKS matches the token's kid and algorithm.",
    );
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return fail('signature', 'The signature does not verify.');
  }
  if (error instanceof errors.JWTExpired) {
    return fail(
      'expiry',
      `The token expired (exp), beyond ${CLOCK_TOLERANCE_SECONDS} s of leeway.`,
    );
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') {
      return fail('audience', `The token's audience is none of ${entry.audience.join(', ')}.`);
    }
    if (error.claim === 'nbf') {
      return fail(
        'not_before',
        `The token is not valid yet (nbf), beyond ${CLOCK_TOLERANCE_SECONDS} s of leeway.`,
      );
    }
    if (error.claim === 'exp') return fail('expiry', `The token has no valid "exp" claim.`);
    return fail('claims', `The "${error.claim}" claim is not valid: ${error.message}.`);
  }
  if (error instanceof errors.JOSENotSupported) {
    // The algorithm passed checkAlgorithm already: this is an unknown `crit` extension or the like.
    return fail('format', `The token uses something Tessera does not support: ${error.message}.`);
  }
  if (error instanceof errors.JOSEError) {
    return fail('format', `The token is not valid: ${error.message}.`);
  }
  throw error;
}
