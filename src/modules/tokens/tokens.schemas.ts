import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { Nullable, StringEnum } from '../../http/schemas.js';
import { CHECKS } from './external-tokens.js';
import type { Evaluation } from './token-exchange.service.js';

const AnyObject = Type.Object({}, { additionalProperties: true });

export const IssuedToken = named(
  'AccessToken',
  Type.Object({
    access_token: Type.String({ description: 'A signed JWT (RFC 9068 `at+jwt`).' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds: 60 × jwt_expiration_in_minutes.' }),
  }),
);

export const ExchangeForm = named(
  'TokenExchangeRequest',
  Type.Object(
    {
      grant_type: Type.Optional(
        Type.String({ description: '`urn:ietf:params:oauth:grant-type:token-exchange`' }),
      ),
      client_id: Type.Optional(Type.String({ description: 'The application.' })),
      subject_token: Type.Optional(
        Type.String({ description: 'An ID token from a provider the application trusts.' }),
      ),
      subject_token_type: Type.Optional(
        Type.String({ description: '`urn:ietf:params:oauth:token-type:id_token`' }),
      ),
      requested_token_type: Type.Optional(
        Type.String({
          description: 'Optional; only `urn:ietf:params:oauth:token-type:access_token`.',
        }),
      ),
    },
    {
      additionalProperties: true,
      examples: [
        {
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          client_id: 'billing-web',
          subject_token:
            'eyJhbGciOiJSUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20iLCJzdWIiOiIxMDgyMzQ4MjM0OTgyMzQifQ.c2lnbmF0dXJl',
          subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
        },
      ],
    },
  ),
);

export const ExchangedToken = named(
  'TokenExchangeResponse',
  Type.Object({
    access_token: Type.String(),
    issued_token_type: Type.Literal('urn:ietf:params:oauth:token-type:access_token'),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer(),
  }),
);

export const OAuthErrorBody = named(
  'OAuthError',
  Type.Object(
    {
      error: StringEnum([
        'invalid_request',
        'invalid_client',
        'invalid_grant',
        'unsupported_grant_type',
        'temporarily_unavailable',
        'server_error',
      ]),
      error_description: Type.String(),
    },
    { description: 'RFC 6749 §5.2 error response' },
  ),
);

export const ValidateTokenBody = named(
  'ExternalTokenValidationRequest',
  Type.Object(
    { token: Type.String({ minLength: 1, maxLength: 65536, description: 'An outside ID token.' }) },
    {
      additionalProperties: false,
      examples: [
        {
          token:
            'eyJhbGciOiJSUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20iLCJzdWIiOiIxMDgyMzQ4MjM0OTgyMzQifQ.c2lnbmF0dXJl',
        },
      ],
    },
  ),
);
export type ValidateTokenBody = Static<typeof ValidateTokenBody>;

export const ValidationReport = named(
  'ExternalTokenValidationReport',
  Type.Object({
    valid: Type.Boolean({ description: 'True when an exchange of this token would succeed now.' }),
    failed_check: Nullable(StringEnum(CHECKS, { description: 'The first check that failed.' })),
    detail: Type.String({ description: 'What failed and why, or what an exchange would do.' }),
    retryable: Type.Boolean({ description: "True when the provider's keys could not be fetched." }),
    header: Nullable(AnyObject),
    claims: Nullable(AnyObject),
    provider: Nullable(
      Type.String({ description: 'The matched entry of external_token_validation.' }),
    ),
    entry: Nullable(AnyObject),
    user: Nullable(Type.Object({ provider: Type.String(), identifier: Type.String() })),
    user_exists: Nullable(Type.Boolean()),
    new_user: Nullable(
      Type.Object(
        {
          name: Type.String(),
          email: Type.String(),
          locale: Type.String(),
          avatar: Nullable(Type.String()),
        },
        { description: 'What first login would register (external mode).' },
      ),
    ),
  }),
);
export type ValidationReport = Static<typeof ValidationReport>;

export function toValidationReport(evaluation: Evaluation): ValidationReport {
  const { inspection, failure, existing, registration } = evaluation;
  const identity =
    inspection.provider !== null && inspection.identifier !== null
      ? { provider: inspection.provider, identifier: inspection.identifier }
      : null;
  return {
    valid: failure === null,
    failed_check: failure?.check ?? null,
    detail:
      failure?.detail ??
      (existing !== null
        ? 'Valid: an exchange would issue an access token for this existing user.'
        : 'Valid: an exchange would register this user (external mode) and issue an access token.'),
    retryable: failure?.retryable ?? false,
    header: inspection.header,
    claims: inspection.claims,
    provider: inspection.provider,
    entry: inspection.entry,
    user: identity,
    user_exists: identity === null ? null : existing !== null,
    new_user:
      registration === null
        ? null
        : {
            name: registration.name,
            email: registration.email,
            locale: registration.locale,
            avatar: registration.avatar ?? null,
          },
  };
}

export const Jwks = named(
  'Jwks',
  Type.Object({
    keys: Type.Array(
      Type.Object(
        {
          kty: Type.String(),
          kid: Type.String(),
          alg: Type.String(),
          use: Type.Literal('sig'),
        },
        { additionalProperties: true },
      ),
    ),
  }),
);

export const OpenIdConfiguration = named(
  'OpenIdConfiguration',
  Type.Object({
    issuer: Type.String(),
    jwks_uri: Type.String(),
    token_endpoint: Type.String(),
    response_types_supported: Type.Array(Type.String(), {
      description: 'Empty: Tessera has no authorization endpoint.',
    }),
    subject_types_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    subject_token_types_supported: Type.Array(Type.String()),
    access_token_signing_alg_values_supported: Type.Array(Type.String()),
  }),
);
