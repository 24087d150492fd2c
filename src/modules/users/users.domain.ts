// What a valid user is, said once. The rules are the field schemas of users.schemas.ts (the
// same ones the API's request bodies and the OpenAPI document are made of), put together here
// into the domain's input; UsersService checks every user it writes against them, whichever
// door it came through (API, console, SCIM, the token exchange, an import). Field errors are
// JSON Pointers into a UserInput: each edge names them in its own words.

import { type Static, Type } from 'typebox';
import type { Checked, FieldError } from '../../domain-error.js';
import { Nullable } from '../../http/schemas.js';
import { compileInputCheck, compileValueCheck } from '../../http/validation.js';
import type { UserRecord } from '../../store/store.js';
import {
  Active,
  Avatar,
  Email,
  ExternalId,
  Identifier,
  Locale,
  Provider,
  Roles,
  Scopes,
  USER_NAME_MAX_LENGTH,
  UserLabels,
  UserName,
} from './users.schemas.js';

/**
 * A user as the domain takes it in: the members of the API's representation, and SCIM's
 * externalId and labels.
 */
export const UserInput = Type.Object(
  {
    provider: Provider,
    identifier: Identifier,
    name: UserName,
    avatar: Type.Optional(Nullable(Avatar)),
    email: Email,
    locale: Locale,
    roles: Roles,
    scopes: Scopes,
    active: Type.Optional(Active),
    external_id: Type.Optional(Nullable(ExternalId)),
    labels: Type.Optional(Nullable(UserLabels)),
  },
  { additionalProperties: false },
);
export type UserInput = Static<typeof UserInput>;

/** The members of T, their values not yet checked (outside data on its way to a check). */
export type Unchecked<T> = { [K in keyof T]?: unknown };

/** A valid user's fields, normalised (the name trimmed, defaults filled in). */
export type UserFields = Pick<
  UserRecord,
  | 'provider'
  | 'identifier'
  | 'name'
  | 'avatar'
  | 'email'
  | 'locale'
  | 'roles'
  | 'scopes'
  | 'active'
  | 'externalId'
  | 'labels'
>;

/** A user's profile: what a replace sets (PUT), without its identity. */
export type UserProfile = Omit<UserInput, 'provider' | 'identifier'>;

const checkInput = compileInputCheck(UserInput);

/**
 * Checks anything JSON-like (a request body, a line of an import, a SCIM mapping's result)
 * against the rules of a user: the normalised fields, or every field error found.
 */
export function checkUser(input: unknown): Checked<UserFields> {
  const errors = checkInput(input);
  if (errors.length > 0) return { ok: false, errors: errors.map(toFieldError) };
  const user = input as UserInput;
  return {
    ok: true,
    value: {
      provider: user.provider,
      identifier: user.identifier,
      name: user.name.trim(),
      avatar: user.avatar ?? null,
      email: user.email,
      locale: user.locale,
      roles: user.roles,
      scopes: user.scopes,
      active: user.active ?? true,
      externalId: user.external_id ?? null,
      ...(user.labels === undefined || user.labels === null ? {} : { labels: user.labels }),
    },
  };
}

/**
 * The rules `next` breaks in the members it changes from `current`. A member left as it was is
 * not judged again: a user stored under an earlier, looser rule can still be deactivated.
 * `next.name` is expected trimmed (see normalizeUser).
 */
export function changeErrors(current: UserFields, next: UserFields): FieldError[] {
  const errors = checkInput(toInput(next));
  if (errors.length === 0) return [];
  return errors
    .map(toFieldError)
    .filter((error) => memberChanged(current, next, memberOfPath(error.path)));
}

/** The stored form of a user's fields: the name trimmed (a name that is no string is left to the check). */
export function normalizeUser<T extends Pick<UserFields, 'name'>>(user: T): T {
  const name: unknown = user.name;
  if (typeof name !== 'string' || name.trim() === name) return user;
  return { ...user, name: name.trim() };
}

/** A user's fields as a UserInput (the names errors point into). */
export function toInput(user: UserFields): UserInput {
  return {
    provider: user.provider,
    identifier: user.identifier,
    name: user.name,
    avatar: user.avatar,
    email: user.email,
    locale: user.locale,
    roles: user.roles,
    scopes: user.scopes,
    active: user.active,
    external_id: user.externalId,
    labels: user.labels ?? null,
  };
}

const INPUT_MEMBERS: Record<string, keyof UserFields> = {
  provider: 'provider',
  identifier: 'identifier',
  name: 'name',
  avatar: 'avatar',
  email: 'email',
  locale: 'locale',
  roles: 'roles',
  scopes: 'scopes',
  active: 'active',
  external_id: 'externalId',
  labels: 'labels',
};

function memberOfPath(path: string): keyof UserFields | undefined {
  return INPUT_MEMBERS[path.split('/')[1] ?? ''];
}

function memberChanged(
  current: UserFields,
  next: UserFields,
  member: keyof UserFields | undefined,
): boolean {
  if (member === undefined) return true;
  return JSON.stringify(current[member]) !== JSON.stringify(next[member]);
}

function toFieldError(error: { pointer?: string; detail: string }): FieldError {
  return { path: error.pointer ?? '', detail: error.detail };
}

/**
 * One field's rule, for doors that fill a field from outside data and fall back when it does
 * not qualify (the token exchange's claims, SCIM's e-mail taken from userName).
 */
export const isValidUserField = {
  provider: compileValueCheck(Provider),
  identifier: compileValueCheck(Identifier),
  name: compileValueCheck(UserName),
  email: compileValueCheck(Email),
  locale: compileValueCheck(Locale),
  avatar: compileValueCheck(Avatar),
} as const satisfies Record<string, (value: unknown) => boolean>;

/** A name built from free text: trimmed and shortened to the longest allowed; '' when blank. */
export function nameFromText(text: string): string {
  return Array.from(text.trim()).slice(0, USER_NAME_MAX_LENGTH).join('').trim();
}
