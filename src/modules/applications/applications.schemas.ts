import { type Static, Type } from 'typebox';
import type { ApplicationRecord } from '../../store/store.js';
import {
  Nullable,
  Page,
  PathEcho,
  ReadOnlyEcho,
  StringEnum,
  ServerTimestamp,
  TrimmedText,
  toTimestamp,
} from '../../http/schemas.js';
import { named } from '../../http/openapi.js';
import { RULE_KEYWORD } from '../../http/validation.js';

export const ClientId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9._~-]*$',
  not: { enum: ['.', '..'] },
  [RULE_KEYWORD]: '1–128 characters of A–Z a–z 0–9 . _ ~ -, and not "." or ".."',
  description: 'Unique, case-sensitive application id; URL-safe.',
  examples: ['billing-web'],
});

// The users' provider label, here because an application names one too (scim_provider), and
// the users' schemas import the applications' ones.
export const Provider = Type.String({
  minLength: 3,
  maxLength: 64,
  // The look-ahead bounds the length first: without it this pattern backtracks
  // quadratically on long hostile input.
  pattern: '^(?=.{3,64}$)[a-z0-9_-]+_[a-z0-9_-]+$',
  [RULE_KEYWORD]: '3–64 characters of a–z 0–9 _ -, shaped <idp>_<kind> (e.g. google_oauth2)',
  description: 'Identity-provider label, `<idp>_<kind>`.',
  examples: ['google_oauth2'],
});

// A role name, here because an application's authorization names roles too, and the users'
// schemas import the applications' ones.
export const UserRole = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9._:-]*$',
  [RULE_KEYWORD]: '1–64 characters of A–Z a–z 0–9 . _ : -',
  examples: ['admin'],
});

export const DisplayName = TrimmedText(200, { description: 'Stored trimmed.' });

export const Description = Type.String({
  maxLength: 2000,
  pattern: '^[^\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\ud800-\\udfff]*$',
  [RULE_KEYWORD]: 'text without control characters other than newline and tab',
});

export const ApplicationModes = ['internal', 'external'] as const;
export const Mode = StringEnum(ApplicationModes, {
  description: '`internal`: users are enrolled beforehand; `external`: registered on first login.',
});

export const JwtExpirationInMinutes = Type.Integer({
  minimum: 1,
  maximum: 43200,
  description: 'Access-token lifetime in minutes (at most 30 days).',
});

export const EXTERNAL_TOKEN_VALIDATION_MAX_BYTES = 32 * 1024;

export const ExternalTokenValidation = Type.Unsafe<Record<string, unknown> | null>({
  type: ['object', 'null'],
  additionalProperties: true,
  description:
    'How to validate ID tokens issued outside Tessera, keyed by provider label. Any JSON ' +
    'object of at most 32 KiB serialized, stored and returned as given.',
});

export const AUTHORIZATION_MAX_BYTES = 32 * 1024;

/** Roles named by an action of an application's authorization. */
const GrantRoles = Type.Array(UserRole, { maxItems: 100, uniqueItems: true });

/** The user attributes an owner check may compare with a property of the resource. */
export const OwnerAttributes = ['email', 'id', 'identifier'] as const;

/** Who may take one action: anywhere (roles), or on what they own (owner_roles and owner). */
export const ActionGrant = Type.Object(
  {
    roles: Type.Optional(
      Type.Array(UserRole, {
        ...GrantRoles,
        description: 'Holders of any of these roles may take the action on any resource.',
      }),
    ),
    owner_roles: Type.Optional(
      Type.Array(UserRole, {
        ...GrantRoles,
        description:
          'Holders of any of these roles may take the action on a resource they own (see owner).',
      }),
    ),
    owner: Type.Optional(
      Type.Object(
        {
          resource_property: Type.String({
            minLength: 1,
            maxLength: 128,
            pattern: '^[^\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff]*$',
            [RULE_KEYWORD]: '1–128 characters without control characters',
            description: 'The member of `resource.properties` that names the owner.',
            examples: ['ownerID'],
          }),
          user_attribute: StringEnum(OwnerAttributes, {
            description: 'The member of the user it must equal (e-mail compared ignoring case).',
          }),
        },
        {
          additionalProperties: false,
          description: 'How ownership is decided: a resource property equal to a user attribute.',
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'owner_roles and owner come together: the roles that may act as owners, and how to tell ' +
      'the owner.',
  },
);

export const ActionName = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[^\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff]*$',
  [RULE_KEYWORD]: '1–128 characters without control characters',
  examples: ['can_read_todos'],
});

/** An application's authorization model: which users may take which actions (AuthZEN). */
export const Authorization = Type.Object(
  {
    actions: Type.Unsafe<Record<string, Static<typeof ActionGrant>>>({
      type: 'object',
      propertyNames: ActionName,
      additionalProperties: ActionGrant,
      maxProperties: 256,
      description: 'Action names (AuthZEN `action.name`) → who may take them; at most 256.',
    }),
  },
  { additionalProperties: false },
);
export type AuthorizationModel = Static<typeof Authorization>;

export const AuthorizationMember = Nullable(
  Type.Object(
    { ...Authorization.properties },
    {
      additionalProperties: false,
      description:
        'Who may take which action, for authorization decisions (/access/v1/evaluation): ' +
        '`roles` may take an action on any resource, `owner_roles` only where ' +
        "`resource.properties[owner.resource_property]` equals the user's `owner.user_attribute`. " +
        'An action not listed is denied. null (the default): an action named like a role ' +
        'the user holds is allowed. At most 32 KiB serialized.',
      examples: [
        {
          actions: {
            can_read_todos: { roles: ['viewer', 'editor', 'admin', 'evil_genius'] },
            can_update_todo: {
              roles: ['evil_genius'],
              owner_roles: ['editor'],
              owner: { resource_property: 'ownerID', user_attribute: 'email' },
            },
          },
        },
      ],
    },
  ),
);

export const ScimProvider = Nullable(
  Type.String({
    ...Provider,
    description:
      'The provider label of the users a SCIM client provisions at /scim/v2/<client_id>; ' +
      'null (the default) turns SCIM off.',
  }),
);

export const Application = named(
  'Application',
  Type.Object(
    {
      client_id: ClientId,
      display_name: Type.String(),
      description: Type.String(),
      mode: Mode,
      jwt_expiration_in_minutes: JwtExpirationInMinutes,
      external_token_validation: ExternalTokenValidation,
      scim_provider: ScimProvider,
      authorization: AuthorizationMember,
      created_at: ServerTimestamp,
      updated_at: ServerTimestamp,
    },
    { description: 'A client system registered with Tessera; its users belong to it.' },
  ),
);
export type Application = Static<typeof Application>;

const commonFields = {
  display_name: DisplayName,
  description: Description,
  mode: Type.Optional(Mode),
  jwt_expiration_in_minutes: Type.Optional(JwtExpirationInMinutes),
  external_token_validation: Type.Optional(ExternalTokenValidation),
  scim_provider: Type.Optional(ScimProvider),
  authorization: Type.Optional(AuthorizationMember),
  created_at: Type.Optional(ReadOnlyEcho),
  updated_at: Type.Optional(ReadOnlyEcho),
};

/** What the OpenAPI document offers to send: it succeeds against an empty store. */
export const APPLICATION_EXAMPLE = {
  client_id: 'billing-web',
  display_name: 'Billing',
  description: 'Invoices and payments for our customers',
  mode: 'external',
  jwt_expiration_in_minutes: 60,
  external_token_validation: {
    google_oauth2: {
      issuer: 'https://accounts.google.com',
      jwks_uri: 'https://www.googleapis.com/oauth2/v3/certs',
      audience: '123456789012-web.apps.googleusercontent.com',
      algorithms: ['RS256'],
    },
  },
  scim_provider: 'okta_scim',
  authorization: {
    actions: {
      can_read_invoices: { roles: ['viewer', 'accountant'] },
      can_refund_invoice: {
        roles: ['accountant'],
        owner_roles: ['viewer'],
        owner: { resource_property: 'customer_email', user_attribute: 'email' },
      },
    },
  },
} as const;

const { client_id: _clientId, ...APPLICATION_CHANGES } = APPLICATION_EXAMPLE;

export const CreateApplicationBody = named(
  'ApplicationCreate',
  Type.Object(
    { client_id: ClientId, ...commonFields },
    { additionalProperties: false, examples: [APPLICATION_EXAMPLE] },
  ),
);
export type CreateApplicationBody = Static<typeof CreateApplicationBody>;

export const ReplaceApplicationBody = named(
  'ApplicationReplace',
  Type.Object(
    {
      client_id: Type.Optional(PathEcho),
      ...commonFields,
    },
    {
      additionalProperties: false,
      examples: [{ ...APPLICATION_CHANGES, description: 'Invoices, payments and refunds' }],
    },
  ),
);
export type ReplaceApplicationBody = Static<typeof ReplaceApplicationBody>;

export const PatchApplicationBody = named(
  'ApplicationPatch',
  Type.Object(
    {
      client_id: Type.Optional(PathEcho),
      display_name: Type.Optional(DisplayName),
      description: Type.Optional(Description),
      mode: Type.Optional(Nullable(Mode)),
      jwt_expiration_in_minutes: Type.Optional(Nullable(JwtExpirationInMinutes)),
      external_token_validation: Type.Optional(ExternalTokenValidation),
      scim_provider: Type.Optional(ScimProvider),
      authorization: Type.Optional(
        Type.Unsafe<Record<string, unknown> | null>({
          type: ['object', 'null'],
          additionalProperties: true,
          description:
            'Merged into the current authorization (RFC 7396: `null` removes a member); the ' +
            'result must be a valid authorization.',
        }),
      ),
      created_at: Type.Optional(ReadOnlyEcho),
      updated_at: Type.Optional(ReadOnlyEcho),
    },
    {
      additionalProperties: false,
      description:
        'JSON Merge Patch (RFC 7396): `null` resets mode, jwt_expiration_in_minutes, ' +
        'external_token_validation, scim_provider and authorization to their defaults; ' +
        'members without a default cannot be null.',
      examples: [{ display_name: 'Billing and refunds', jwt_expiration_in_minutes: 30 }],
    },
  ),
);
export type PatchApplicationBody = Static<typeof PatchApplicationBody>;

export const ApplicationParams = Type.Object(
  { client_id: ClientId },
  { additionalProperties: false },
);

export const ApplicationPage = Page(Application);

/** The representation of a stored record (timestamps as RFC 3339). */
export function toApplicationResource(application: ApplicationRecord): Application {
  return {
    client_id: application.clientId,
    display_name: application.displayName,
    description: application.description,
    mode: application.mode,
    jwt_expiration_in_minutes: application.jwtExpirationInMinutes,
    external_token_validation: application.externalTokenValidation,
    scim_provider: application.scimProvider,
    authorization: application.authorization as AuthorizationModel | null,
    created_at: toTimestamp(application.createdAt),
    updated_at: toTimestamp(application.updatedAt),
  };
}
