// What a valid application is, said once: the field schemas of applications.schemas.ts put
// together into the domain's input, plus the rules a schema cannot state (the serialized size
// of external_token_validation and authorization). ApplicationsService checks every application it writes here;
// field errors are JSON Pointers into an ApplicationInput, named in each edge's own words.

import { type Static, Type } from 'typebox';
import type { Checked, FieldError } from '../../domain-error.js';
import { compileInputCheck } from '../../http/validation.js';
import type { ApplicationRecord } from '../../store/store.js';
import {
  AUTHORIZATION_MAX_BYTES,
  AuthorizationMember,
  type AuthorizationModel,
  ClientId,
  Description,
  DisplayName,
  EXTERNAL_TOKEN_VALIDATION_MAX_BYTES,
  ExternalTokenValidation,
  JwtExpirationInMinutes,
  Mode,
  ScimProvider,
} from './applications.schemas.js';

export const APPLICATION_DEFAULTS = {
  mode: 'internal',
  jwtExpirationInMinutes: 60,
  externalTokenValidation: null,
  scimProvider: null,
  authorization: null,
} as const;

/** An application's settings: every member but its client_id, the optional ones with defaults. */
const settingsProperties = {
  display_name: DisplayName,
  description: Description,
  mode: Type.Optional(Mode),
  jwt_expiration_in_minutes: Type.Optional(JwtExpirationInMinutes),
  external_token_validation: Type.Optional(ExternalTokenValidation),
  scim_provider: Type.Optional(ScimProvider),
  authorization: Type.Optional(AuthorizationMember),
};

/** An application as the domain takes it in: the members of the API's representation. */
export const ApplicationInput = Type.Object(
  { client_id: ClientId, ...settingsProperties },
  { additionalProperties: false },
);
export type ApplicationInput = Static<typeof ApplicationInput>;

/** What a replace sets (PUT): everything but the client_id. */
export type ApplicationSettings = Omit<ApplicationInput, 'client_id'>;

/** A valid application's fields, normalised (the display name trimmed, defaults filled in). */
export type ApplicationFields = Pick<
  ApplicationRecord,
  | 'clientId'
  | 'displayName'
  | 'description'
  | 'mode'
  | 'jwtExpirationInMinutes'
  | 'externalTokenValidation'
  | 'scimProvider'
  | 'authorization'
>;

const checkInput = compileInputCheck(ApplicationInput);

/** Checks anything JSON-like against the rules of an application. */
export function checkApplication(input: unknown): Checked<ApplicationFields> {
  const errors = inputErrors(input);
  if (errors.length > 0) return { ok: false, errors };
  const application = input as ApplicationInput;
  return {
    ok: true,
    value: {
      clientId: application.client_id,
      displayName: application.display_name.trim(),
      description: application.description,
      mode: application.mode ?? APPLICATION_DEFAULTS.mode,
      jwtExpirationInMinutes:
        application.jwt_expiration_in_minutes ?? APPLICATION_DEFAULTS.jwtExpirationInMinutes,
      externalTokenValidation:
        application.external_token_validation ?? APPLICATION_DEFAULTS.externalTokenValidation,
      scimProvider: application.scim_provider ?? APPLICATION_DEFAULTS.scimProvider,
      authorization: application.authorization ?? APPLICATION_DEFAULTS.authorization,
    },
  };
}

/**
 * The rules `next` breaks in the members it changes from `current` (a member left as it was is
 * not judged again). `next.displayName` is expected trimmed.
 */
export function applicationChangeErrors(
  current: ApplicationFields,
  next: ApplicationFields,
): FieldError[] {
  const changed = new Set(
    Object.entries(INPUT_MEMBERS)
      .filter(([, member]) => JSON.stringify(current[member]) !== JSON.stringify(next[member]))
      .map(([name]) => name),
  );
  return inputErrors(toInput(next)).filter((error) => changed.has(error.path.split('/')[1] ?? ''));
}

function inputErrors(input: unknown): FieldError[] {
  const errors: FieldError[] = checkInput(input).map((error) => ({
    path: error.pointer ?? '',
    detail: error.detail,
  }));
  if (errors.length > 0) return errors;
  const members = input as { external_token_validation?: unknown; authorization?: unknown };
  for (const [member, limit] of [
    ['external_token_validation', EXTERNAL_TOKEN_VALIDATION_MAX_BYTES],
    ['authorization', AUTHORIZATION_MAX_BYTES],
  ] as const) {
    const value = members[member];
    if (value !== undefined && value !== null && Buffer.byteLength(JSON.stringify(value)) > limit) {
      errors.push({ path: `/${member}`, detail: 'must be at most 32 KiB when serialized' });
    }
  }
  const actions = (members.authorization as AuthorizationModel | null | undefined)?.actions ?? {};
  for (const [name, grant] of Object.entries(actions)) {
    // Ownership needs both halves: the roles that may act as owners, and how to tell the owner.
    const [present, missing] =
      grant.owner_roles !== undefined && grant.owner === undefined
        ? ['owner_roles', 'owner']
        : grant.owner !== undefined && grant.owner_roles === undefined
          ? ['owner', 'owner_roles']
          : [null, null];
    if (present !== null) {
      errors.push({
        path: `/authorization/actions/${escapePointerToken(name)}/${missing}`,
        detail: `is required with ${present}`,
      });
    }
  }
  return errors;
}

function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

const INPUT_MEMBERS: Record<string, keyof ApplicationFields> = {
  client_id: 'clientId',
  display_name: 'displayName',
  description: 'description',
  mode: 'mode',
  jwt_expiration_in_minutes: 'jwtExpirationInMinutes',
  external_token_validation: 'externalTokenValidation',
  scim_provider: 'scimProvider',
  authorization: 'authorization',
};

function toInput(application: ApplicationFields): ApplicationInput {
  return {
    client_id: application.clientId,
    display_name: application.displayName,
    description: application.description,
    mode: application.mode,
    jwt_expiration_in_minutes: application.jwtExpirationInMinutes,
    external_token_validation: application.externalTokenValidation,
    scim_provider: application.scimProvider,
    authorization: application.authorization as ApplicationInput['authorization'],
  };
}
