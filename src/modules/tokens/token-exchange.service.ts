// RFC 8693 token exchange for native apps: an ID token from an outside provider
// in, a Tessera access token out. The outside token is the only credential. The same
// evaluation serves the integrators' dry run, which stops before creating anything.

import { Compile } from 'typebox/compile';
import { DomainError } from '../../domain-error.js';
import type {
  ApplicationRecord,
  TokenUserRecord,
  UserIdentity,
  UserRecord,
} from '../../store/store.js';
import { ClientId } from '../applications/applications.schemas.js';
import type { ApplicationsService } from '../applications/applications.service.js';
import { isValidUserField, nameFromText } from '../users/users.domain.js';
import type { FirstLoginProfile, UsersService } from '../users/users.service.js';
import type { AccessTokens } from './access-tokens.service.js';
import type { CheckFailure, ExternalTokenVerifier, TokenInspection } from './external-tokens.js';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
// Compiled once: Value.Check would rebuild each pattern's RegExp on every exchange.
const CLIENT_ID = Compile(ClientId);

/** Seconds a caller should wait after the provider's keys could not be fetched. */
export const PROVIDER_RETRY_AFTER_SECONDS = 5;

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'temporarily_unavailable'
  | 'server_error';

/** An RFC 6749 §5.2 error response. */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = error === 'invalid_client' ? 401 : 400,
    readonly headers: Record<string, string> = {},
    /** The check of the token or user that refused the exchange, when one did (metrics). */
    readonly failedCheck: string | null = null,
  ) {
    super(description);
  }
}

export interface ExchangeResult {
  access_token: string;
  issued_token_type: typeof ACCESS_TOKEN_TYPE;
  token_type: 'Bearer';
  expires_in: number;
}

/** A user read (or found missing) ahead of the token's verification. */
interface UserRead {
  identity: UserIdentity;
  user: TokenUserRecord | undefined;
}

/** What exchanging a token would do, for the dry run. */
export interface Evaluation {
  inspection: TokenInspection;
  /** The user the token names, once the token checks out. */
  identity: UserIdentity | null;
  /** The user the token maps to, when it exists (what a token reads of it, in an exchange). */
  existing: TokenUserRecord | null;
  /** The profile an external-mode application would register the user with, when it does not exist. */
  registration: FirstLoginProfile | null;
  /** The first check that failed, token or user. */
  failure: CheckFailure | null;
}

export class TokenExchange {
  constructor(
    private readonly deps: {
      applications: ApplicationsService;
      verifier: ExternalTokenVerifier;
      accessTokens: AccessTokens;
      users: UsersService;
    },
  ) {}

  /** Runs the grant; throws OAuthError with the RFC 6749 code for every refusal. */
  /** `requestId`: the request's id, recorded with the user.registered event of a first login. */
  async exchange(
    parameters: Record<string, string>,
    requestId: string | null = null,
  ): Promise<ExchangeResult> {
    checkGrantType(parameters);
    const request = checkExchangeParameters(parameters);
    const { application, read } = await this.#findClientAndUser(
      request.clientId,
      request.subjectToken,
    );
    const evaluation = await this.evaluate(application, request.subjectToken, read);
    if (evaluation.failure !== null) throw refusal(evaluation.failure);
    const user =
      evaluation.existing ??
      (await this.#register(evaluation.identity!, evaluation.registration!, requestId));
    const issued = await this.deps.accessTokens.issue(application, user);
    return {
      access_token: issued.accessToken,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
    };
  }

  /** The dry run: every check of an exchange, nothing issued, nothing created. */
  async evaluateForApplication(clientId: string, token: string): Promise<Evaluation> {
    const application = await this.deps.applications.findApplication(clientId);
    return this.evaluate(application, token);
  }

  /** `read`: a user read already, used when the verified token names that identity. */
  async evaluate(
    application: ApplicationRecord,
    token: string,
    read: UserRead | null = null,
  ): Promise<Evaluation> {
    const inspection = await this.deps.verifier.inspect(application, token);
    const result: Evaluation = {
      inspection,
      identity: null,
      existing: null,
      registration: null,
      failure: null,
    };
    if (inspection.failure !== null) return { ...result, failure: inspection.failure };
    const identity = {
      clientId: application.clientId,
      provider: inspection.provider!,
      identifier: inspection.identifier!,
    };
    result.identity = identity;
    const existing =
      read !== null &&
      read.identity.provider === identity.provider &&
      read.identity.identifier === identity.identifier
        ? read.user
        : await this.deps.users.lookUpUser(identity);
    if (existing !== undefined && !existing.active) {
      return {
        ...result,
        existing,
        failure: {
          check: 'user',
          detail: `The user is inactive (deprovisioned) in application "${application.clientId}"; no token is issued for it.`,
          retryable: false,
        },
      };
    }
    if (existing !== undefined) return { ...result, existing };
    if (application.mode === 'internal') {
      return {
        ...result,
        failure: {
          check: 'user',
          detail: `Application "${application.clientId}" is in internal mode and has no user with provider "${identity.provider}" and this identifier; enrol the user first.`,
          retryable: false,
        },
      };
    }
    const registration = registrationFromClaims(identity.identifier, inspection.claims!);
    if (typeof registration === 'string') {
      return { ...result, failure: { check: 'email', detail: registration, retryable: false } };
    }
    return { ...result, registration };
  }

  /**
   * The client's application and, when its external_token_validation was read before, the
   * user the token would name, in one statement instead of two. The user is read before the
   * token is verified but only used when the verified token names the same identity
   * (evaluate), so nothing is decided on unverified claims; a forged token is refused as any
   * other, whether or not that user exists.
   */
  async #findClientAndUser(
    clientId: string,
    token: string,
  ): Promise<{ application: ApplicationRecord; read: UserRead | null }> {
    if (!CLIENT_ID.Check(clientId)) throw unknownClient();
    const expected = this.deps.verifier.expectedIdentity(clientId, token);
    try {
      if (expected === null) {
        return { application: await this.deps.applications.findApplication(clientId), read: null };
      }
      const identity = { clientId, ...expected };
      const found = await this.deps.users.lookUpUserWithApplication(identity);
      return { application: found.application, read: { identity, user: found.user } };
    } catch (error) {
      throw isNotFound(error) ? unknownClient() : error;
    }
  }

  /** First login in external mode registers the user (a racing first login finds it). */
  async #register(
    identity: UserIdentity,
    profile: FirstLoginProfile,
    requestId: string | null,
  ): Promise<UserRecord> {
    try {
      return await this.deps.users.registerOnFirstLogin(identity, profile, {
        actor: { type: 'token_exchange', id: null },
        requestId,
      });
    } catch (error) {
      if (isNotFound(error)) throw unknownClient();
      // Another user of the application's SCIM provider holds this identifier in another case.
      if (error instanceof DomainError && error.code === 'conflict') {
        throw new OAuthError('invalid_grant', `user: ${error.detail}`, 400, {}, 'user');
      }
      throw error;
    }
  }
}

function unknownClient(): OAuthError {
  return new OAuthError('invalid_client', 'Unknown client_id.');
}

function isNotFound(error: unknown): boolean {
  return error instanceof DomainError && error.code === 'not_found';
}

function checkGrantType(parameters: Record<string, string>): void {
  const grantType = parameters.grant_type;
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is missing.');
  if (grantType !== TOKEN_EXCHANGE_GRANT) {
    throw new OAuthError(
      'unsupported_grant_type',
      `Only grant_type=${TOKEN_EXCHANGE_GRANT} is supported.`,
    );
  }
}

function checkExchangeParameters(parameters: Record<string, string>) {
  for (const name of ['client_id', 'subject_token', 'subject_token_type'] as const) {
    if (parameters[name] === undefined) {
      throw new OAuthError('invalid_request', `${name} is missing.`);
    }
  }
  if (parameters.subject_token_type !== ID_TOKEN_TYPE) {
    throw new OAuthError('invalid_request', `subject_token_type must be ${ID_TOKEN_TYPE}.`);
  }
  const requested = parameters.requested_token_type;
  if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE) {
    throw new OAuthError(
      'invalid_request',
      `requested_token_type can only be ${ACCESS_TOKEN_TYPE}.`,
    );
  }
  if (parameters.actor_token !== undefined || parameters.actor_token_type !== undefined) {
    throw new OAuthError('invalid_request', 'Delegation (actor_token) is not supported.');
  }
  return { clientId: parameters.client_id!, subjectToken: parameters.subject_token! };
}

function refusal(failure: CheckFailure): OAuthError {
  if (failure.retryable) {
    return new OAuthError(
      'temporarily_unavailable',
      failure.detail,
      503,
      { 'retry-after': String(PROVIDER_RETRY_AFTER_SECONDS) },
      failure.check,
    );
  }
  return new OAuthError(
    'invalid_grant',
    `${failure.check}: ${failure.detail}`,
    400,
    {},
    failure.check,
  );
}

/**
 * The profile first login registers a user with (external mode), from the token's claims, each
 * kept only when it obeys the rule of its field: a name that does not falls back to the
 * identifier, a locale to `en`, a picture to none. Returns why not when the token carries no
 * usable e-mail address.
 */
export function registrationFromClaims(
  identifier: string,
  claims: Record<string, unknown>,
): FirstLoginProfile | string {
  const { email, name, locale, picture } = claims;
  // Apple sends email_verified as the string "false"; either way the address is not used.
  if (claims.email_verified === false || claims.email_verified === 'false') {
    return 'The token\'s "email" is not verified (email_verified is false), and registering a user needs a verified address.';
  }
  if (typeof email !== 'string' || !isValidUserField.email(email)) {
    return 'The token has no valid "email" claim, and registering a user needs one.';
  }
  return {
    name:
      typeof name === 'string' && isValidUserField.name(name)
        ? name.trim()
        : nameFromText(identifier) || 'Unnamed user',
    email,
    locale: typeof locale === 'string' && isValidUserField.locale(locale) ? locale : 'en',
    avatar: typeof picture === 'string' && isValidUserField.avatar(picture) ? picture : null,
  };
}
