// What an authorization decision is, as pure functions of an application's authorization model
// and a user's current record: no I/O, no HTTP. The service (authzen.service.ts) loads the
// records and asks here; the console's dry run asks here too, and shows the reason.
//
// The model (an application's `authorization`, checked by applications.domain.ts):
// - an action listed with `roles`: holders of any of them may take it on any resource;
// - with `owner_roles` and `owner`: holders of any of those may take it on a resource whose
//   `properties[owner.resource_property]` equals their `owner.user_attribute` (e-mail compared
//   ignoring case, as the users' email filter does; id and identifier exactly);
// - an action not listed is denied;
// - no model at all: an action whose name is a role the user holds is allowed.
// Unknown and inactive users are always denied.

import type { AuthorizationModel } from '../applications/applications.schemas.js';
import type { UserGrant, UserRecord } from '../../store/store.js';

/** What a decision looks at of a user. */
export type DecidingUser = Pick<UserRecord, 'id' | 'identifier' | 'email' | 'roles' | 'active'>;

/** Why a decision came out as it did (the console shows it; the API does not). */
export type DecisionReason =
  | 'role'
  | 'owner'
  | 'role_named_action'
  | 'unknown_application'
  | 'unknown_user'
  | 'inactive_user'
  | 'action_not_listed'
  | 'no_role'
  | 'not_owner';

export interface Decision {
  decision: boolean;
  reason: DecisionReason;
}

/** The properties of the resource an action is taken on (AuthZEN `resource.properties`). */
export type ResourceProperties = Readonly<Record<string, unknown>> | undefined;

const allow = (reason: DecisionReason): Decision => ({ decision: true, reason });
const deny = (reason: DecisionReason): Decision => ({ decision: false, reason });

/** May `user` take `action` on the resource, under `authorization`? */
export function decide(
  authorization: AuthorizationModel | null,
  user: DecidingUser | undefined,
  action: string,
  resource: ResourceProperties,
): Decision {
  if (user === undefined) return deny('unknown_user');
  if (!user.active) return deny('inactive_user');
  if (authorization === null) {
    return user.roles.includes(action) ? allow('role_named_action') : deny('no_role');
  }
  const grant = Object.hasOwn(authorization.actions, action)
    ? authorization.actions[action]
    : undefined;
  if (grant === undefined) return deny('action_not_listed');
  if (holdsAny(user, grant.roles)) return allow('role');
  if (grant.owner === undefined || !holdsAny(user, grant.owner_roles)) return deny('no_role');
  const owned = ownerValue(resource, grant.owner.resource_property);
  return owned !== undefined && sameOwner(user, grant.owner.user_attribute, owned)
    ? allow('owner')
    : deny('not_owner');
}

/** The actions `user` may take on the resource, in byte order. */
export function allowedActions(
  authorization: AuthorizationModel | null,
  user: DecidingUser | undefined,
  resource: ResourceProperties,
): string[] {
  if (user === undefined || !user.active) return [];
  const candidates = authorization === null ? user.roles : Object.keys(authorization.actions);
  return candidates
    .filter((action) => decide(authorization, user, action, resource).decision)
    .sort(byteOrder);
}

/** May `user` take `action` on every resource (a grant that does not depend on ownership)? */
export function mayActAnywhere(
  authorization: AuthorizationModel | null,
  user: DecidingUser | undefined,
  action: string,
): boolean {
  const decision = decide(authorization, user, action, undefined);
  return decision.decision && decision.reason !== 'owner';
}

/**
 * The users `action` on the resource is allowed to (the store reads them): holders of the
 * roles that may take it anywhere, plus owners of the resource when the action allows owners.
 * Null when nobody may take it.
 */
export function grantOf(
  authorization: AuthorizationModel | null,
  clientId: string,
  action: string,
  resource: ResourceProperties,
): UserGrant | null {
  if (authorization === null) return { clientId, roles: [action], owner: null };
  const grant = Object.hasOwn(authorization.actions, action)
    ? authorization.actions[action]
    : undefined;
  if (grant === undefined) return null;
  const owned = grant.owner && ownerValue(resource, grant.owner.resource_property);
  const owner =
    grant.owner === undefined || owned === undefined || grant.owner_roles === undefined
      ? null
      : { roles: grant.owner_roles, attribute: grant.owner.user_attribute, value: owned };
  const roles = grant.roles ?? [];
  return roles.length === 0 && owner === null ? null : { clientId, roles, owner };
}

function holdsAny(user: DecidingUser, roles: readonly string[] | undefined): boolean {
  return roles !== undefined && roles.some((role) => user.roles.includes(role));
}

/** The owner a resource names: a string property (any other value names nobody). */
function ownerValue(resource: ResourceProperties, property: string): string | undefined {
  const value =
    resource !== undefined && Object.hasOwn(resource, property) ? resource[property] : undefined;
  return typeof value === 'string' ? value : undefined;
}

function sameOwner(
  user: DecidingUser,
  attribute: 'email' | 'id' | 'identifier',
  owned: string,
): boolean {
  return attribute === 'email'
    ? user.email.toLowerCase() === owned.toLowerCase()
    : user[attribute] === owned;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
