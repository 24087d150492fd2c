// Conversions between the domain records and table rows, shared by every SQL dialect.

import type { Insertable, Selectable } from 'kysely';
import type {
  ApiKeyRecord,
  ApplicationMode,
  ApplicationRecord,
  EventChange,
  EventRecord,
  EventResourceType,
  GroupRecord,
  NewEvent,
  UserLabels,
  UserRecord,
} from '../store.js';
import { foldAsciiCase } from '../user-predicate.js';
import type {
  ApiKeysTable,
  ApplicationsTable,
  EventsTable,
  ScimGroupsTable,
  UsersTable,
} from './tables.js';
import { encodeUserKey } from './tables.js';

export function toMillis(value: number | string): number {
  return typeof value === 'number' ? value : Number(value);
}

export function toOptionalMillis(value: number | string | null): number | null {
  return value === null ? null : toMillis(value);
}

export function normalizeEmail(email: string): string {
  return email.toLowerCase();
}

export function toApplicationRecord(row: Selectable<ApplicationsTable>): ApplicationRecord {
  return {
    clientId: row.client_id,
    displayName: row.display_name,
    description: row.description,
    mode: row.mode as ApplicationMode,
    jwtExpirationInMinutes: row.jwt_expiration_in_minutes,
    externalTokenValidation:
      row.external_token_validation === null
        ? null
        : (JSON.parse(row.external_token_validation) as Record<string, unknown>),
    scimProvider: row.scim_provider,
    authorization:
      row.authorization_model === null
        ? null
        : (JSON.parse(row.authorization_model) as Record<string, unknown>),
    createdAt: toMillis(row.created_at),
    updatedAt: toMillis(row.updated_at),
    etag: row.etag,
  };
}

export function toApplicationRow(record: ApplicationRecord): Insertable<ApplicationsTable> {
  return {
    client_id: record.clientId,
    display_name: record.displayName,
    description: record.description,
    mode: record.mode,
    jwt_expiration_in_minutes: record.jwtExpirationInMinutes,
    external_token_validation:
      record.externalTokenValidation === null
        ? null
        : JSON.stringify(record.externalTokenValidation),
    scim_provider: record.scimProvider,
    authorization_model:
      record.authorization === null ? null : JSON.stringify(record.authorization),
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    etag: record.etag,
  };
}

/** The columns a UserRecord is read from. */
export type UserRow = Omit<
  Selectable<UsersTable>,
  'user_key' | 'email_normalized' | 'identifier_folded' | 'scim_user_name'
>;

/** The columns of a UserRow. */
export const USER_RECORD_COLUMNS = [
  'application',
  'provider',
  'identifier',
  'name',
  'avatar',
  'email',
  'locale',
  'roles',
  'scopes',
  'active',
  'external_id',
  'labels',
  'id',
  'created_at',
  'updated_at',
  'etag',
] as const satisfies readonly (keyof UserRow)[];

// Users mostly share a few sets of roles and scopes: a page of 100 users parsed the same
// JSON text 200 times. Parsed arrays are kept by text and handed out as copies (callers may
// change their record). Bounded: texts up to 512 characters, and past 1,000 distinct ones the
// memory starts over (at most about 1 MB).
const STRING_ARRAYS_KEPT = 1000;
const STRING_ARRAY_TEXT_KEPT = 512;
const stringArrays = new Map<string, readonly string[]>();

/** JSON.parse of a stored array of strings, from the memory above when it was seen before. */
export function parseStringArray(text: string): string[] {
  if (text.length > STRING_ARRAY_TEXT_KEPT) return JSON.parse(text) as string[];
  let parsed = stringArrays.get(text);
  if (parsed === undefined) {
    parsed = JSON.parse(text) as string[];
    if (stringArrays.size >= STRING_ARRAYS_KEPT) stringArrays.clear();
    stringArrays.set(text, parsed);
  }
  return parsed.slice();
}

export function toUserRecord(row: UserRow): UserRecord {
  const record: UserRecord = {
    clientId: row.application,
    provider: row.provider,
    identifier: row.identifier,
    id: row.id,
    name: row.name,
    avatar: row.avatar,
    email: row.email,
    locale: row.locale,
    roles: parseStringArray(row.roles),
    scopes: parseStringArray(row.scopes),
    active: row.active === 1,
    externalId: row.external_id,
    createdAt: toMillis(row.created_at),
    updatedAt: toMillis(row.updated_at),
    etag: row.etag,
  };
  // Only users a provisioning client labelled have labels (most have none).
  if (row.labels !== null) record.labels = JSON.parse(row.labels) as UserLabels;
  return record;
}

export function toUserRow(record: UserRecord): Insertable<UsersTable> {
  return {
    application: record.clientId,
    user_key: encodeUserKey(record.provider, record.identifier),
    provider: record.provider,
    identifier: record.identifier,
    name: record.name,
    avatar: record.avatar,
    email: record.email,
    email_normalized: normalizeEmail(record.email),
    locale: record.locale,
    roles: JSON.stringify(record.roles),
    scopes: JSON.stringify(record.scopes),
    active: record.active ? 1 : 0,
    external_id: record.externalId,
    labels:
      record.labels === undefined || record.labels === null ? null : JSON.stringify(record.labels),
    identifier_folded: foldAsciiCase(record.identifier),
    id: record.id,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    etag: record.etag,
  };
}

export function toGroupRecord(row: Selectable<ScimGroupsTable>): GroupRecord {
  return {
    clientId: row.application,
    id: row.id,
    displayName: row.display_name,
    externalId: row.external_id,
    createdAt: toMillis(row.created_at),
    updatedAt: toMillis(row.updated_at),
    etag: row.etag,
  };
}

export function toGroupRow(record: GroupRecord): Insertable<ScimGroupsTable> {
  return {
    application: record.clientId,
    id: record.id,
    display_name: record.displayName,
    external_id: record.externalId,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    etag: record.etag,
  };
}

export function toApiKeyRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    secretDigest: row.secret_digest,
    roles: JSON.parse(row.roles) as string[],
    applications: row.applications === null ? null : (JSON.parse(row.applications) as string[]),
    createdAt: toMillis(row.created_at),
    updatedAt: toMillis(row.updated_at),
    expiresAt: toOptionalMillis(row.expires_at),
    lastUsedAt: toOptionalMillis(row.last_used_at),
    previousSecretDigest: row.previous_secret_digest,
    previousExpiresAt: toOptionalMillis(row.previous_expires_at),
    revokedAt: toOptionalMillis(row.revoked_at),
  };
}

export function toApiKeyRow(record: ApiKeyRecord): Insertable<ApiKeysTable> {
  return {
    id: record.id,
    name: record.name,
    secret_digest: record.secretDigest,
    roles: JSON.stringify(record.roles),
    applications: record.applications === null ? null : JSON.stringify(record.applications),
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    expires_at: record.expiresAt,
    last_used_at: record.lastUsedAt,
    previous_secret_digest: record.previousSecretDigest,
    previous_expires_at: record.previousExpiresAt,
    revoked_at: record.revokedAt,
  };
}

/** An events row before the store gives it its seq. */
export type EventRow = Omit<EventsTable, 'seq'> & { occurred_at: number };

/** The columns of an events row but its seq, in the order executors bind them. */
export const EVENT_COLUMNS = [
  'type',
  'occurred_at',
  'actor_type',
  'actor_id',
  'client_id',
  'resource_type',
  'resource_id',
  'changes',
  'request_id',
] as const satisfies readonly (keyof EventRow)[];

/** Event ids: the seq, zero-padded to a fixed width so that string order is commit order. */
const EVENT_ID_DIGITS = 16;

export function toEventId(seq: number | string): string {
  return String(seq).padStart(EVENT_ID_DIGITS, '0');
}

/** The seq of an event id (digits only, at most 16 of them), or undefined. */
export function parseEventId(id: string): number | undefined {
  return /^[0-9]{1,16}$/.test(id) ? Number(id) : undefined;
}

export function toEventRow(event: NewEvent): EventRow {
  return {
    type: event.type,
    occurred_at: event.occurredAt,
    actor_type: event.actor.type,
    actor_id: event.actor.id,
    client_id: event.clientId,
    resource_type: event.resource.type,
    resource_id: JSON.stringify(event.resource.id),
    changes: event.changes === null ? null : storedChanges(event.changes),
    request_id: event.requestId,
  };
}

type StoredChange = [member: string, before: unknown, after: unknown];

/**
 * How `changes` is stored: a JSON array of `[member, before, after]` triples. The key names
 * `member`, `before` and `after` spelled out in every element were half of a created user's
 * `changes` (410 of its 656-byte row, 208 as triples), a row PostgreSQL writes twice
 * (events_pending, then events).
 */
function storedChanges(changes: readonly EventChange[]): string {
  return JSON.stringify(changes.map((change) => [change.member, change.before, change.after]));
}

/** A stored `changes`: triples, or `{member, before, after}` objects in rows written before them. */
function parseChanges(text: string): EventChange[] {
  return (JSON.parse(text) as (StoredChange | EventChange)[]).map((change) =>
    Array.isArray(change) ? { member: change[0], before: change[1], after: change[2] } : change,
  );
}

export function toEventRecord(row: Selectable<EventsTable>): EventRecord {
  return {
    id: toEventId(row.seq),
    type: row.type,
    occurredAt: toMillis(row.occurred_at),
    actor: { type: row.actor_type as EventRecord['actor']['type'], id: row.actor_id },
    clientId: row.client_id,
    resource: {
      type: row.resource_type as EventResourceType,
      id: JSON.parse(row.resource_id) as Record<string, unknown>,
    },
    changes: row.changes === null ? null : parseChanges(row.changes),
    requestId: row.request_id,
  };
}
