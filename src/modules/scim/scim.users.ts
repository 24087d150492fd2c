// The SCIM User ⇄ Tessera user mapping: userName = identifier, displayName / name.formatted =
// name, the primary (else first) e-mail = email, locale / preferredLanguage = locale, the
// primary (else first) photo = avatar, active, externalId; groups (read-only) are the Groups
// whose role the user has. The mapping undoes SCIM's shapes only; whether the values make a
// valid user is the domain's to say (users.domain.ts), when UsersService writes them.

import { toTimestamp } from '../../http/schemas.js';
import type { GroupRecord, UserRecord } from '../../store/store.js';
import {
  type Unchecked,
  type UserInput,
  isValidUserField,
  nameFromText,
} from '../users/users.domain.js';
import { USER_SCHEMA } from './scim.catalog.js';
import { scimBadRequest } from './scim.errors.js';
import { memberOf } from './scim.evaluate.js';

type Json = Record<string, unknown>;

/** What a SCIM User body says of a user, in the domain's words, its values not yet checked. */
export type ScimUserInput = Unchecked<
  Pick<UserInput, 'identifier' | 'name' | 'email' | 'locale' | 'avatar' | 'external_id' | 'labels'>
> & {
  /** Absent from the body: keep (or, on create, true). */
  active: boolean | undefined;
};

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A boolean, also as the strings "True"/"False" in any case (Entra without aadOptscim062020). */
export function toBoolean(value: unknown, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value))
    return value.toLowerCase() === 'true';
  throw scimBadRequest('invalidValue', `"${what}" must be true or false.`);
}

/** The element flagged primary, else the first. */
function primaryElement(list: unknown, what: string): Json | undefined {
  if (list === undefined || list === null) return undefined;
  const items = (Array.isArray(list) ? list : [list]).filter(isObject);
  return (
    items.find((item) => {
      const primary = memberOf(item, 'primary');
      return primary !== undefined && primary !== null && toBoolean(primary, `${what}.primary`);
    }) ?? items[0]
  );
}

/** en_US (POSIX) → en-US; "en-US,en;q=0.9" (Accept-Language) → en-US; blank → the default, en. */
function languageTag(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const tag = value.split(',')[0]!.split(';')[0]!.trim().replaceAll('_', '-');
  return tag === '' ? 'en' : tag;
}

/** The type and primary of a multi-valued attribute's element, as the client gave them. */
function labelOf(element: Json | undefined, what: string): Json | undefined {
  if (element === undefined) return undefined;
  const type = memberOf(element, 'type');
  const primary = memberOf(element, 'primary');
  const label: Json = {};
  if (type !== undefined && type !== null) label.type = type;
  if (primary !== undefined && primary !== null)
    label.primary = toBoolean(primary, `${what}.primary`);
  return label;
}

/**
 * Of two attributes that carry one Tessera field, the one to take: the first, unless a PATCH
 * (`before` is the resource it started from) changed only the second.
 */
function eitherOf(body: Json, before: Json | undefined, first: string, second: string): unknown {
  const value = memberOf(body, first);
  if (before !== undefined) {
    const other = memberOf(body, second);
    const changed = (name: string, now: unknown) =>
      JSON.stringify(now) !== JSON.stringify(memberOf(before, name));
    if (!changed(first, value) && changed(second, other) && other !== undefined && other !== null)
      return other;
  }
  return value ?? memberOf(body, second);
}

/**
 * The user's full name: displayName, else name.formatted, else given and family names, else
 * userName, shortened to the longest name allowed (directories keep longer ones). After a
 * PATCH that changed name.formatted but not displayName, name.formatted.
 */
function fullName(body: Json, userName: unknown, before: Json | undefined): unknown {
  const name = memberOf(body, 'name');
  const parts = isObject(name) ? name : {};
  const given = [memberOf(parts, 'givenName'), memberOf(parts, 'familyName')]
    .filter((part): part is string => typeof part === 'string' && part.trim() !== '')
    .join(' ');
  const beforeName = before === undefined ? undefined : memberOf(before, 'name');
  const formatted = eitherOf(
    { displayName: memberOf(body, 'displayName'), formatted: memberOf(parts, 'formatted') },
    before === undefined
      ? undefined
      : {
          displayName: memberOf(before, 'displayName'),
          formatted: isObject(beforeName) ? memberOf(beforeName, 'formatted') : undefined,
        },
    'displayName',
    'formatted',
  );
  const candidates = [formatted, given, userName];
  const chosen = candidates.find(
    (candidate) =>
      candidate !== undefined &&
      candidate !== null &&
      !(typeof candidate === 'string' && candidate.trim() === ''),
  );
  return typeof chosen === 'string' ? nameFromText(chosen) : chosen;
}

/**
 * The user a User body describes (POST, PUT, or a PATCH's result; then `before` is the User the
 * PATCH started from, so a change to preferredLanguage or name.formatted alone is taken).
 */
export function userInputFromScim(body: Json, before?: Json): ScimUserInput {
  const userName = memberOf(body, 'userName');
  const emailElement = primaryElement(memberOf(body, 'emails'), 'emails');
  const photoElement = primaryElement(memberOf(body, 'photos'), 'photos');
  const email = memberOf(emailElement ?? {}, 'value');
  const locale = eitherOf(body, before, 'locale', 'preferredLanguage');
  const active = memberOf(body, 'active');
  const emailLabel =
    email === undefined || email === null ? undefined : labelOf(emailElement, 'emails');
  const avatar = memberOf(photoElement ?? {}, 'value') ?? null;
  const avatarLabel = avatar === null ? undefined : labelOf(photoElement, 'photos');
  return {
    identifier: userName,
    name: fullName(body, userName, before),
    email:
      email ??
      (typeof userName === 'string' && isValidUserField.email(userName) ? userName : email),
    locale: locale === undefined || locale === null ? 'en' : languageTag(locale),
    avatar,
    external_id: memberOf(body, 'externalId') ?? null,
    labels:
      emailLabel === undefined && avatarLabel === undefined
        ? null
        : {
            ...(emailLabel === undefined ? {} : { email: emailLabel }),
            ...(avatarLabel === undefined ? {} : { avatar: avatarLabel }),
          },
    active: active === undefined || active === null ? undefined : toBoolean(active, 'active'),
  };
}

const DEFAULT_EMAIL_LABEL = { type: 'work', primary: true };
const DEFAULT_AVATAR_LABEL = { type: 'photo', primary: true };

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
  const labels = user.labels ?? null;
  resource.emails = [{ value: user.email, ...(labels?.email ?? DEFAULT_EMAIL_LABEL) }];
  resource.preferredLanguage = user.locale;
  resource.locale = user.locale;
  if (user.avatar !== null) {
    resource.photos = [{ value: user.avatar, ...(labels?.avatar ?? DEFAULT_AVATAR_LABEL) }];
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
