import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { Nullable, StringEnum, Timestamp, toTimestamp } from '../../http/schemas.js';
import { RULE_KEYWORD } from '../../http/validation.js';
import { SIGNING_ALGORITHMS, type SigningKeyStatus } from './signing-keys.service.js';

const TimestampOrNull = (description: string) =>
  Nullable(Type.String({ format: 'date-time', description }));

/** A signing key as operators see it: never its private part. */
export const SigningKey = named(
  'SigningKey',
  Type.Object({
    kid: Type.String(),
    alg: StringEnum(SIGNING_ALGORITHMS),
    state: StringEnum(['pending', 'active', 'retired', 'unpublished', 'revoked'], {
      description:
        'pending: published, signs later; active: signs now; retired: published for the tokens ' +
        'it signed; unpublished: no longer needed; revoked: removed from the JWKS in an emergency.',
    }),
    created_at: Timestamp,
    activates_at: Timestamp,
    retired_at: TimestampOrNull('When a newer key took over, or null.'),
    published_until: TimestampOrNull('Until when a retired key stays in the JWKS, or null.'),
    revoked_at: TimestampOrNull('When it was revoked, or null.'),
  }),
);
export type SigningKey = Static<typeof SigningKey>;

export const SigningKeyList = named(
  'SigningKeyList',
  Type.Object({ items: Type.Array(SigningKey) }),
);

export const SigningKeyRevocation = named(
  'SigningKeyRevocation',
  Type.Object({
    revoked: SigningKey,
    active: Type.Unsafe<SigningKey>({
      ...SigningKey,
      description: 'The key that signs now (a new one when the revoked key was signing).',
    }),
  }),
);

export const SigningKeyParams = Type.Object(
  {
    kid: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[A-Za-z0-9_-]+$',
      [RULE_KEYWORD]: '1–128 characters of A–Z a–z 0–9 _ -',
      description: 'The `kid` of a key listed by GET /signing-keys.',
      examples: ['k3Jq9xZ0bW1vR2tUeXBlLXNpZ25pbmc'],
    }),
  },
  { additionalProperties: false },
);

const at = (epochMillis: number | null) => (epochMillis === null ? null : toTimestamp(epochMillis));

export function toSigningKeyResource(key: SigningKeyStatus): SigningKey {
  return {
    kid: key.kid,
    alg: key.algorithm,
    state: key.state,
    created_at: toTimestamp(key.createdAt),
    activates_at: toTimestamp(key.activatesAt),
    retired_at: at(key.retiredAt),
    published_until: at(key.publishedUntil),
    revoked_at: at(key.revokedAt),
  };
}
