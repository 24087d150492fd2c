// The audit trail's vocabulary: who made a change (its origin) and the events that record it.
// Services build the events of each write here and hand them to the store, which writes them
// in the write's own transaction. Snapshots list the members an event may show: never a
// secret or a secret's digest.

import type {
  ApiKeyRecord,
  ApplicationRecord,
  EventActor,
  EventChange,
  EventResourceType,
  NewEvent,
  SigningKeyRecord,
  UserRecord,
} from '../store/store.js';

/** Who asks for a change, and in which request: a domain input of every write. */
export interface ChangeOrigin {
  actor: EventActor;
  requestId: string | null;
}

/** Changes Tessera makes itself (start-up, background work). */
export const SYSTEM_ORIGIN: ChangeOrigin = { actor: { type: 'system', id: null }, requestId: null };

/** Changes made by the `tessera` command line. */
export const CLI_ORIGIN: ChangeOrigin = { actor: { type: 'cli', id: null }, requestId: null };

/** The members an event shows of a resource, by their names in the API. */
export type Snapshot = Record<string, unknown>;

/** Before/after of each member whose value differs (compared as JSON). */
export function changesBetween(before: Snapshot | null, after: Snapshot | null): EventChange[] {
  const members = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  const changes: EventChange[] = [];
  for (const member of members) {
    const was = before?.[member] ?? null;
    const is = after?.[member] ?? null;
    if (JSON.stringify(was) !== JSON.stringify(is))
      changes.push({ member, before: was, after: is });
  }
  return changes;
}

/** One event about one resource. */
export function resourceEvent(options: {
  type: string;
  origin: ChangeOrigin;
  occurredAt: number;
  clientId: string | null;
  resource: { type: EventResourceType; id: Record<string, unknown> };
  changes: EventChange[] | null;
}): NewEvent {
  return {
    type: options.type,
    occurredAt: options.occurredAt,
    actor: options.origin.actor,
    clientId: options.clientId,
    resource: options.resource,
    changes: options.changes,
    requestId: options.origin.requestId,
  };
}

/** The event of a change from `before` to `after` (null before: created; null after: deleted). */
export function changeEvent(options: {
  type: string;
  origin: ChangeOrigin;
  occurredAt: number;
  clientId: string | null;
  resource: { type: EventResourceType; id: Record<string, unknown> };
  before: Snapshot | null;
  after: Snapshot | null;
}): NewEvent {
  return resourceEvent({ ...options, changes: changesBetween(options.before, options.after) });
}

export function applicationSnapshot(application: ApplicationRecord): Snapshot {
  return {
    display_name: application.displayName,
    description: application.description,
    mode: application.mode,
    jwt_expiration_in_minutes: application.jwtExpirationInMinutes,
    external_token_validation: application.externalTokenValidation,
    scim_provider: application.scimProvider,
    authorization: application.authorization,
  };
}

/**
 * Changes that widen or narrow what an application lets in, each recorded as an event of its
 * own besides application.updated: whose tokens it trusts (application.trust_changed), and who
 * may take which action (application.authorization_changed).
 */
const DISTINCT_CHANGES = [
  { type: 'application.trust_changed', members: new Set(['mode', 'external_token_validation']) },
  { type: 'application.authorization_changed', members: new Set(['authorization']) },
];

/**
 * application.created, application.updated (+ trust_changed, authorization_changed) or
 * application.deleted.
 */
export function applicationEvents(
  origin: ChangeOrigin,
  occurredAt: number,
  before: ApplicationRecord | null,
  after: ApplicationRecord | null,
): NewEvent[] {
  const clientId = (after ?? before)!.clientId;
  const resource = { type: 'application' as const, id: { client_id: clientId } };
  const changes = changesBetween(
    before && applicationSnapshot(before),
    after && applicationSnapshot(after),
  );
  const type =
    before === null
      ? 'application.created'
      : after === null
        ? 'application.deleted'
        : 'application.updated';
  const common = { origin, occurredAt, clientId, resource };
  const events = [resourceEvent({ ...common, type, changes })];
  if (type !== 'application.updated') return events;
  for (const distinct of DISTINCT_CHANGES) {
    const concerned = changes.filter((change) => distinct.members.has(change.member));
    if (concerned.length > 0) {
      events.push(resourceEvent({ ...common, type: distinct.type, changes: concerned }));
    }
  }
  return events;
}

export function userSnapshot(user: UserRecord): Snapshot {
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
  };
}

/**
 * user.created (or `createdAs`, e.g. user.registered), user.updated, user.deleted; a changed
 * identifier is a user.renamed, with user.updated in addition when other members changed.
 */
export function userEvents(
  origin: ChangeOrigin,
  occurredAt: number,
  before: UserRecord | null,
  after: UserRecord | null,
  createdAs = 'user.created',
): NewEvent[] {
  const user = (after ?? before)!;
  const resource = {
    type: 'user' as const,
    id: { id: user.id, provider: user.provider, identifier: user.identifier },
  };
  const common = { origin, occurredAt, clientId: user.clientId, resource };
  const changes = changesBetween(before && userSnapshot(before), after && userSnapshot(after));
  if (before === null) return [resourceEvent({ ...common, type: createdAs, changes })];
  if (after === null) return [resourceEvent({ ...common, type: 'user.deleted', changes })];
  if (before.identifier === after.identifier) {
    return [resourceEvent({ ...common, type: 'user.updated', changes })];
  }
  const renamed = changes.filter((change) => change.member === 'identifier');
  const others = changes.filter((change) => change.member !== 'identifier');
  const events = [resourceEvent({ ...common, type: 'user.renamed', changes: renamed })];
  if (others.length > 0)
    events.push(resourceEvent({ ...common, type: 'user.updated', changes: others }));
  return events;
}

/** What an event shows of an API key: never its secret or the secrets' digests. */
export function apiKeySnapshot(key: ApiKeyRecord): Snapshot {
  return {
    name: key.name,
    roles: key.roles,
    applications: key.applications,
    expires_at: isoOrNull(key.expiresAt),
    previous_expires_at: isoOrNull(key.previousExpiresAt),
    revoked_at: isoOrNull(key.revokedAt),
  };
}

export function apiKeyEvent(
  type: 'api_key.created' | 'api_key.rotated' | 'api_key.revoked' | 'api_key.updated',
  origin: ChangeOrigin,
  occurredAt: number,
  before: ApiKeyRecord | null,
  after: ApiKeyRecord,
): NewEvent {
  return changeEvent({
    type,
    origin,
    occurredAt,
    clientId: null,
    resource: { type: 'api_key', id: { id: after.id } },
    before: before && apiKeySnapshot(before),
    after: apiKeySnapshot(after),
  });
}

/** What an event shows of a signing key: never its private part. */
export function signingKeySnapshot(key: SigningKeyRecord): Snapshot {
  return {
    alg: key.algorithm,
    generation: key.generation,
    activates_at: isoOrNull(key.activatesAt),
    revoked_at: isoOrNull(key.revokedAt),
  };
}

export function signingKeyEvent(
  type: 'signing_key.rotated' | 'signing_key.revoked',
  origin: ChangeOrigin,
  occurredAt: number,
  before: SigningKeyRecord | null,
  after: SigningKeyRecord,
): NewEvent {
  return changeEvent({
    type,
    origin,
    occurredAt,
    clientId: null,
    resource: { type: 'signing_key', id: { kid: after.kid } },
    before: before && signingKeySnapshot(before),
    after: signingKeySnapshot(after),
  });
}

function isoOrNull(millis: number | null): string | null {
  return millis === null ? null : new Date(millis).toISOString();
}
