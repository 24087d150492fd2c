import { type Static, Type } from 'typebox';
import type { ApiKeyRecord } from '../../store/store.js';
import {
  Nullable,
  Page,
  PageQueryProperties,
  ServerTimestamp,
  StringEnum,
  Timestamp,
  TrimmedText,
  toTimestamp,
} from '../../http/schemas.js';
import { ROLES } from '../../roles.js';
import { named } from '../../http/openapi.js';
import { RULE_KEYWORD } from '../../http/validation.js';
import { ClientId } from '../applications/applications.schemas.js';

export const RoleName = StringEnum(ROLES);

export const CreateApiKeyBody = named(
  'ApiKeyCreate',
  Type.Object(
    {
      name: TrimmedText(200, { description: 'What the key is for; stored trimmed.' }),
      roles: Type.Array(RoleName, {
        minItems: 1,
        maxItems: ROLES.length,
        uniqueItems: true,
        description: "A subset of the calling key's roles.",
      }),
      applications: Type.Optional(
        Nullable(
          Type.Array(ClientId, {
            minItems: 1,
            maxItems: 1000,
            uniqueItems: true,
            description:
              'Restrict the key to these applications; null: all (only for unrestricted callers).',
          }),
        ),
      ),
      expires_at: Type.Optional(
        Nullable(
          Type.String({
            format: 'date-time',
            description:
              'RFC 3339; in the future. Null: never (only for callers that never expire).',
          }),
        ),
      ),
    },
    {
      additionalProperties: false,
      examples: [
        {
          name: 'billing deploy',
          roles: ['applications:read', 'users:read', 'users:write'],
          applications: ['billing-web'],
          expires_at: '2099-01-01T00:00:00.000Z',
        },
      ],
    },
  ),
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

const apiKeyProperties = {
  id: Type.String({ readOnly: true }),
  name: Type.String(),
  roles: Type.Array(Type.String()),
  applications: Nullable(Type.Array(Type.String())),
  created_at: ServerTimestamp,
  updated_at: ServerTimestamp,
  expires_at: Nullable(Timestamp),
  last_used_at: Nullable(ServerTimestamp),
  previous_expires_at: Nullable(
    Type.String({
      format: 'date-time',
      readOnly: true,
      description: 'Until when the secret replaced by the last rotation still works, or null.',
    }),
  ),
  revoked_at: Nullable(
    Type.String({
      format: 'date-time',
      readOnly: true,
      description: 'When the key was revoked (it never works again), or null.',
    }),
  ),
};

export const ApiKey = named(
  'ApiKey',
  Type.Object(apiKeyProperties, {
    description: 'A key that authorises calls to this API; its secret is never shown again.',
  }),
);
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = named(
  'ApiKeyWithSecret',
  Type.Object({
    ...apiKeyProperties,
    key: Type.String({
      readOnly: true,
      description: 'The secret, `tsr_` + 256 random bits. Shown only in this response.',
    }),
  }),
);

export const ApiKeyParams = Type.Object(
  {
    // Key ids are UUIDs; the pattern keeps out what no id holds and a database may refuse to
    // compare (PostgreSQL rejects a NUL byte in text: that was a 500).
    id: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9._~-]*$',
      [RULE_KEYWORD]: '1–64 characters of A–Z a–z 0–9 . _ ~ -',
      description: 'The `id` the key was created with.',
      examples: ['3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00'],
    }),
  },
  { additionalProperties: false },
);

export const ApiKeyPage = Page(ApiKey);

export const ApiKeyListQuery = Type.Object(
  {
    ...PageQueryProperties,
    include_revoked: Type.Optional(
      Type.Boolean({ default: false, description: 'Also list revoked keys.', examples: [true] }),
    ),
  },
  { additionalProperties: false },
);

/** One day: long enough for a deployment to pick up the new secret. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;

export const RotateApiKeyBody = named(
  'ApiKeyRotate',
  Type.Object(
    {
      previous_valid_for_seconds: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 604_800,
          default: DEFAULT_ROTATION_OVERLAP_SECONDS,
          description:
            'How long the current secret keeps working beside the new one: 0–604800 (7 days), default 86400.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ previous_valid_for_seconds: 3600 }] },
  ),
);

/** The representation of a stored record (timestamps as RFC 3339). */
function toTimestampOrNull(epochMillis: number | null): string | null {
  return epochMillis === null ? null : toTimestamp(epochMillis);
}

export function toApiKeyResource(key: ApiKeyRecord): ApiKey {
  return {
    id: key.id,
    name: key.name,
    roles: key.roles,
    applications: key.applications,
    created_at: toTimestamp(key.createdAt),
    updated_at: toTimestamp(key.updatedAt),
    expires_at: toTimestampOrNull(key.expiresAt),
    last_used_at: toTimestampOrNull(key.lastUsedAt),
    previous_expires_at: toTimestampOrNull(key.previousExpiresAt),
    revoked_at: toTimestampOrNull(key.revokedAt),
  };
}
