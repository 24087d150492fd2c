// Console sign-in through the organisation's OpenID provider: the authorization code flow with
// PKCE (S256), a state and a nonce, done by panva's openid-client. What a callback must find to
// be accepted is kept in the store, shared by every instance, and taken once: a state this
// service did not issue, or issued and already used, opens nothing. The sign-in is also bound
// to the browser that began it (a random value in its cookie, kept here as a digest), so a
// callback link sent to someone else signs nobody in (login CSRF). The ID token's signature is
// checked against the provider's JWKS, beside its issuer, audience, expiry and nonce. The
// operator's roles and applications come from the claims the settings name, limited to
// Tessera's roles. No token, code or secret is logged or kept.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Clock } from '../../clock.js';
import { ROLES, type Role, isRole } from '../../roles.js';
import type { ConsoleOperator, Store } from '../../store/store.js';

export interface ConsoleOidcSettings {
  /** The provider's issuer identifier (its discovery document is read from it). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** This console's callback, as registered with the provider: …/console/oidc/callback. */
  redirectUri: string;
  /** What the sign-in page's button names ("Sign in with <name>"). */
  providerName: string;
  /** The scopes asked for, `openid` among them. */
  scopes: readonly string[];
  /** The claim (name, or a dotted path into nested objects) whose values give the roles. */
  rolesClaim: string;
  /**
   * Values of the roles claim (a group, an e-mail address) that stand for roles: `*` for every
   * role. A value that is itself a role's name gives that role.
   */
  roleMap: ReadonlyMap<string, readonly Role[]>;
  /** The claim naming the applications an operator may act on (`*`: all); null: all, always. */
  applicationsClaim: string | null;
  /** Plain-HTTP provider (a loopback address only; the configuration checks it). */
  allowHttp: boolean;
}

/** How long a sign-in may take, from the click to the callback. */
export const SIGN_IN_LIFETIME_MS = 10 * 60_000;

/** How long the provider has to answer one request (discovery, token, JWKS). */
const PROVIDER_TIMEOUT_SECONDS = 10;

/** Why a callback signed nobody in (for the page, the log and the tests). */
export type OidcFailure =
  /** No sign-in of this service has that state (never issued, used, or expired and removed). */
  | 'unknown-state'
  /** The sign-in was begun in another browser (its cookie is missing or differs). */
  | 'other-browser'
  /** Begun more than SIGN_IN_LIFETIME_MS ago. */
  | 'expired'
  /** The provider answered with an error (the person cancelled, or was refused). */
  | 'provider-error'
  /** The provider could not be reached, or its discovery document was unusable. */
  | 'provider-unreachable'
  /** The answer or the ID token failed a check (signature, issuer, audience, expiry, nonce). */
  | 'rejected'
  /** The ID token lacks the roles (or applications) claim. */
  | 'missing-claim'
  /** The claims give no Tessera role, or no application. */
  | 'no-access';

export type OidcCallbackResult =
  { ok: true; operator: ConsoleOperator } | { ok: false; failure: OidcFailure; detail: string };

export interface OidcSignInStart {
  /** Where to send the browser: the provider's authorization endpoint. */
  authorizationUrl: string;
  /** The value of the cookie that binds the sign-in to this browser. */
  browserBinding: string;
}

export class ProviderUnreachableError extends Error {
  override readonly name = 'ProviderUnreachableError';
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export class ConsoleOidc {
  #configuration: Promise<oidc.Configuration> | null = null;

  constructor(
    private readonly deps: { store: Store; clock: Clock; settings: ConsoleOidcSettings },
  ) {}

  get providerName(): string {
    return this.deps.settings.providerName;
  }

  /**
   * Begins a sign-in: records its state, nonce and code verifier, and says where to send the
   * browser. ProviderUnreachableError when the provider's discovery document cannot be read.
   */
  async begin(): Promise<OidcSignInStart> {
    const configuration = await this.#discover();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const browserBinding = randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    await this.deps.store.consoleSessions.insertConsoleSignIn({
      stateDigest: digest(state),
      browserDigest: digest(browserBinding),
      nonce,
      codeVerifier,
      createdAt: now,
    });
    // Sign-ins never finished are removed now and then, here.
    void this.deps.store.consoleSessions
      .deleteExpiredConsoleSignIns(now - SIGN_IN_LIFETIME_MS)
      .catch(() => {});
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.deps.settings.redirectUri,
      response_type: 'code',
      scope: this.deps.settings.scopes.join(' '),
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { authorizationUrl: url.href, browserBinding };
  }

  /**
   * Finishes a sign-in from the provider's answer (the callback's query string) in the browser
   * holding `browserBinding` (its cookie, if any): the operator, or why nobody is signed in.
   * The sign-in is used up whatever the outcome.
   */
  async complete(query: string, browserBinding: string | undefined): Promise<OidcCallbackResult> {
    const parameters = new URLSearchParams(query);
    const state = parameters.get('state');
    const begun =
      state === null || state === ''
        ? undefined
        : await this.deps.store.consoleSessions.takeConsoleSignIn(digest(state));
    if (begun === undefined) {
      return failed(
        'unknown-state',
        'This sign-in answer is not one this console is waiting for: it was already used, has expired, or was never asked for.',
      );
    }
    if (browserBinding === undefined || !sameDigest(digest(browserBinding), begun.browserDigest)) {
      return failed(
        'other-browser',
        'This sign-in was begun in another browser (or this browser lost its cookie). Start again from the sign-in page.',
      );
    }
    if (this.deps.clock.now() - begun.createdAt > SIGN_IN_LIFETIME_MS) {
      return failed('expired', 'This sign-in took too long. Start again from the sign-in page.');
    }
    const error = parameters.get('error');
    if (error !== null) {
      const description = parameters.get('error_description');
      return failed(
        'provider-error',
        `${this.providerName} did not sign you in (${error}${description ? `: ${description}` : ''}).`,
      );
    }
    let configuration: oidc.Configuration;
    try {
      configuration = await this.#discover();
    } catch (cause) {
      return failed('provider-unreachable', (cause as Error).message);
    }
    const callback = new URL(this.deps.settings.redirectUri);
    callback.search = parameters.toString();
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: begun.codeVerifier,
        expectedState: state!,
        expectedNonce: begun.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (cause) {
      return failed(
        'rejected',
        `${this.providerName}'s answer was not accepted: ${reasonOf(cause)}.`,
      );
    }
    if (claims === undefined) {
      return failed('rejected', `${this.providerName} sent no ID token.`);
    }
    return this.#operatorOf(claims);
  }

  /** The operator an ID token's claims describe, with their roles and applications. */
  #operatorOf(claims: oidc.IDToken): OidcCallbackResult {
    const { rolesClaim, roleMap, applicationsClaim } = this.deps.settings;
    const roleValues = claimValues(claims, rolesClaim);
    if (roleValues === undefined) {
      return failed(
        'missing-claim',
        `${this.providerName}'s ID token has no "${rolesClaim}" claim, which gives Tessera roles: ask its administrator to add it for this client.`,
      );
    }
    const roles = rolesOf(roleValues, roleMap);
    if (roles.length === 0) {
      return failed(
        'no-access',
        `Your account at ${this.providerName} carries no Tessera role in its "${rolesClaim}" claim.`,
      );
    }
    let applications: string[] | null = null;
    if (applicationsClaim !== null) {
      const values = claimValues(claims, applicationsClaim);
      if (values === undefined) {
        return failed(
          'missing-claim',
          `${this.providerName}'s ID token has no "${applicationsClaim}" claim, which names the applications you may act on: ask its administrator to add it for this client.`,
        );
      }
      applications = values.includes('*') ? null : [...new Set(values)];
      if (applications !== null && applications.length === 0) {
        return failed(
          'no-access',
          `Your account at ${this.providerName} names no application in its "${applicationsClaim}" claim.`,
        );
      }
    }
    const text = (name: string) => {
      const value = (claims as Record<string, unknown>)[name];
      return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
    };
    return {
      ok: true,
      operator: {
        issuer: claims.iss,
        subject: claims.sub,
        name: text('name') ?? text('email') ?? text('preferred_username') ?? claims.sub,
        roles,
        applications,
      },
    };
  }

  /** The provider's metadata, read once (again after a failure). */
  #discover(): Promise<oidc.Configuration> {
    this.#configuration ??= this.#readMetadata().catch((cause: unknown) => {
      this.#configuration = null;
      throw new ProviderUnreachableError(
        `${this.providerName} (${this.deps.settings.issuer}) could not be reached: ${reasonOf(cause)}`,
      );
    });
    return this.#configuration;
  }

  async #readMetadata(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret, allowHttp } = this.deps.settings;
    const configuration = await oidc.discovery(
      new URL(issuer),
      clientId,
      { client_secret: clientSecret },
      oidc.ClientSecretBasic(clientSecret),
      {
        timeout: PROVIDER_TIMEOUT_SECONDS,
        // The ID token comes straight from the token endpoint, where TLS vouches for the
        // issuer; its signature is checked against the provider's JWKS all the same, so a
        // token is never accepted on the transport's word alone.
        execute: [
          oidc.enableNonRepudiationChecks,
          ...(allowHttp ? [oidc.allowInsecureRequests] : []),
        ],
      },
    );
    configuration.timeout = PROVIDER_TIMEOUT_SECONDS;
    return configuration;
  }
}

function failed(failure: OidcFailure, detail: string): OidcCallbackResult {
  return { ok: false, failure, detail };
}

/** A library error's message, which names the check that failed and never a token. */
function reasonOf(cause: unknown): string {
  if (cause instanceof oidc.ResponseBodyError) {
    return cause.error_description ? `${cause.error}: ${cause.error_description}` : cause.error;
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause.message : null;
  return inner === null || inner === message ? message : `${message} (${inner})`;
}

/**
 * A claim's values: a string list, or one string split on whitespace and commas; undefined when
 * the token lacks it. `name` is a claim's name, or, when no claim has that name, a dotted path
 * into nested objects (Keycloak's realm_access.roles).
 */
export function claimValues(claims: object, name: string): string[] | undefined {
  const record = claims as Record<string, unknown>;
  let value: unknown = record[name];
  if (!Object.hasOwn(record, name)) {
    value = name.split('.').reduce<unknown>((node, part) => {
      return node !== null && typeof node === 'object' && Object.hasOwn(node, part)
        ? (node as Record<string, unknown>)[part]
        : undefined;
    }, claims);
  }
  if (typeof value === 'string') return value.split(/[\s,]+/).filter((part) => part !== '');
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return undefined;
}

/** Tessera's roles among the values (by name, or through the map), in Tessera's order. */
export function rolesOf(
  values: readonly string[],
  roleMap: ReadonlyMap<string, readonly Role[]>,
): Role[] {
  const granted = new Set<Role>();
  for (const value of values) {
    if (isRole(value)) granted.add(value);
    for (const role of roleMap.get(value) ?? []) granted.add(role);
  }
  return ROLES.filter((role) => granted.has(role));
}
