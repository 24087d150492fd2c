// The SCIM User ⇄ Tessera user mapping: userName = identifier, displayName / name.formatted =
// name, the primary (else first) e-mail = email, locale / preferredLanguage = locale, the
// primary (else first) photo = avatar, active, externalId; groups (read-only) are the Groups
// whose role the user has. Values are checked with the Tessera API's own field rules.

import { Compile } from 'typebox/compile';
import { toTimestamp } from '../../http/schemas.js';
import type { GroupRecord, UserRecord } from '../../store/store.js';
import { Avatar, Email, Identifier, Locale, UserName } from '../users/users.schemas.js';
import { USER_SCHEMA } from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import { memberOf } from './scim.evaluate.js';

type Json = Record<string, unknown>;

const IDENTIFIER = Compile(Identifier);
const NAME = Compile(UserName);
const EMAIL = Compile(Email);
const LOCALE = Compile(Locale);
const AVATAR = Compile(Avatar);

/** The user fields a SCIM User body sets. */
export interface ScimUserFields {
  identifier: string;
  name: string;
  email: string;
  locale: string;
  avatar: string | null;
  externalId: string | null;
  /** Absent from the body: keep (or, on create, true). */
  active: boolean | undefined;
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(detail: string): never {
  throw scimBadRequest('invalidValue', detail);
}

/** A boolean, also as the strings "True"/"False" in any case (Entra without aadOptscim062020). */
export function toBoolean(value: unknown, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value))
    return value.toLowerCase() === 'true';
  return invalid(`"${what}" must be true or false.`);
}

function optionalString(value: unknown, what: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') invalid(`"${what}" must be a string.`);
  return value;
}

/** The element flagged primary, else the first; its `value`. */
function primaryValue(list: unknown, what: string): string | null {
  if (list === undefined || list === null) return null;
  const items = (Array.isArray(list) ? list : [list]).filter(isObject);
  const chosen =
    items.find((item) => {
      const primary = memberOf(item, 'primary');
      return primary !== undefined && primary !== null && toBoolean(primary, `${what}.primary`);
    }) ?? items[0];
  return chosen === undefined ? null : optionalString(memberOf(chosen, 'value'), `${what}.value`);
}

/** en_US (POSIX) → en-US; "en-US,en;q=0.9" (Accept-Language) → en-US. */
function languageTag(value: string): string {
  return value.split(',')[0]!.split(';')[0]!.trim().replaceAll('_', '-');
}

/** The user's full name: displayName, else name.formatted, else given and family names, else userName. */
function fullName(body: Json, identifier: string): string {
  const name = memberOf(body, 'name');
  const parts = isObject(name) ? name : {};
  const candidates = [
    optionalString(memberOf(body, 'displayName'), 'displayName'),
    optionalString(memberOf(parts, 'formatted'), 'name.formatted'),
    [memberOf(parts, 'givenName'), memberOf(parts, 'familyName')]
      .filter((part): part is string => typeof part === 'string' && part.trim() !== '')
      .join(' '),
    identifier,
  ];
  const chosen = candidates.find((candidate) => candidate !== null && candidate.trim() !== '')!;
  const trimmed = chosen.trim();
  const name200 = Array.from(trimmed).slice(0, 200).join('').trim();
  if (!NAME.Check(name200 as unknown)) invalid('The name must not contain control characters.');
  return name200;
}

/** The fields of a User body (POST, PUT, or a PATCH's result); invalidValue when one breaks a rule. */
export function userFieldsFrom(body: Json): ScimUserFields {
  const userName = memberOf(body, 'userName');
  if (typeof userName !== 'string' || !IDENTIFIER.Check(userName)) {
    invalid(
      '"userName" is required: 1–256 characters without control characters, not "." or "..".',
    );
  }
  const email =
    primaryValue(memberOf(body, 'emails'), 'emails') ??
    (EMAIL.Check(userName as unknown) ? userName : null);
  if (email === null)
    invalid('"emails" is required: Tessera keeps an e-mail address for every user.');
  if (!EMAIL.Check(email as unknown))
    invalid(`"emails" value ${JSON.stringify(email.slice(0, 100))} is not a valid e-mail address.`);
  const localeText =
    optionalString(memberOf(body, 'locale'), 'locale') ??
    optionalString(memberOf(body, 'preferredLanguage'), 'preferredLanguage');
  const locale = localeText === null || localeText.trim() === '' ? 'en' : languageTag(localeText);
  if (!LOCALE.Check(locale as unknown))
    invalid(`"locale" ${JSON.stringify(locale.slice(0, 40))} is not a BCP 47 language tag.`);
  const avatar = primaryValue(memberOf(body, 'photos'), 'photos');
  if (avatar !== null && !AVATAR.Check(avatar as unknown))
    invalid('"photos" value must be an http: or https: URL.');
  const active = memberOf(body, 'active');
  return {
    identifier: userName,
    name: fullName(body, userName),
    email,
    locale,
    avatar,
    externalId: optionalString(memberOf(body, 'externalId'), 'externalId'),
    active: active === undefined || active === null ? undefined : toBoolean(active, 'active'),
  };
}

/** The SCIM representation of a user; `groups` are the application's Groups. */
export function toScimUser(
  user: UserRecord,
  groups: readonly Pick<GroupRecord, 'id' | 'displayName'>[],
  base: string,
): Json {
  // Built member by member in the order they are written (no spreads of optional parts: this
  // runs for every user of every list and lookup).
  const resource: Json = { schemas: [USER_SCHEMA], id: user.id };
  if (user.externalId !== null) resource.externalId = user.externalId;
  resource.userName = user.identifier;
  resource.name = { formatted: user.name };
  resource.displayName = user.name;
  resource.emails = [{ value: user.email, type: 'work', primary: true }];
  resource.preferredLanguage = user.locale;
  resource.locale = user.locale;
  if (user.avatar !== null) {
    resource.photos = [{ value: user.avatar, type: 'photo', primary: true }];
  }
  resource.active = user.active;
  const roles = groups.length === 0 ? null : new Set(user.roles);
  resource.groups = groups
    .filter((group) => roles?.has(group.displayName))
    .map((group) => ({
      value: group.id,
      $ref: `${base}/Groups/${group.id}`,
      display: group.displayName,
      type: 'direct',
    }));
  resource.meta = {
    resourceType: 'User',
    created: toTimestamp(user.createdAt),
    lastModified: toTimestamp(user.updatedAt),
    location: `${base}/Users/${user.id}`,
    version: `"${user.etag}"`,
  };
  return resource;
}
