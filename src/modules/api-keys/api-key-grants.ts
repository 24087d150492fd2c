// What a key may do to other keys: no key ever gains through another key a power it lacks.
// Creating, rotating and revoking follow one subset rule, so a leaked narrow key can neither
// mint a wider key, nor take over one (rotation hands out its new secret), nor lock out the
// administrators by revoking theirs.

import { problem } from '../../problems.js';
import type { ApiKeyRecord } from '../../store/store.js';

/** The caller acting on keys: an authenticated API key, or the operator (CLI, start-up). */
export type KeyCaller = ApiKeyRecord | 'operator';

/** The powers a key carries. */
export interface KeyGrants {
  roles: readonly string[];
  applications: readonly string[] | null;
  expiresAt: number | null;
}

export type KeyAction = 'create' | 'rotate' | 'revoke';

export function isUnrestricted(caller: KeyCaller): boolean {
  return caller === 'operator' || caller.applications === null;
}

/** Whether `caller` may see `key`: its restriction must lie within the caller's. */
export function isVisibleTo(caller: KeyCaller, key: ApiKeyRecord): boolean {
  if (isUnrestricted(caller)) return true;
  const allowed = (caller as ApiKeyRecord).applications!;
  return key.applications !== null && key.applications.every((id) => allowed.includes(id));
}

/**
 * 403 unless `grants` lie within the caller's own: roles a subset, restriction within its
 * own, and — when the caller obtains a secret (create, rotate) — a lifetime within its own.
 * Revoking hands out nothing, so a key that expires may still revoke a longer-lived one.
 */
export function assertWithinCaller(caller: KeyCaller, grants: KeyGrants, action: KeyAction): void {
  if (caller === 'operator') return;
  const subject = action === 'create' ? 'grant' : `${action} a key with`;
  const extraRoles = grants.roles.filter((role) => !caller.roles.includes(role));
  if (extraRoles.length > 0) {
    throw problem(
      'forbidden',
      `This API key cannot ${subject} roles it does not hold: ${extraRoles.join(', ')}.`,
    );
  }
  if (caller.applications !== null) {
    const allowed = caller.applications;
    if (grants.applications === null) {
      throw problem(
        'forbidden',
        action === 'create'
          ? 'This API key is restricted to some applications; a key it creates must be restricted to them too.'
          : `This API key is restricted to some applications; it cannot ${action} an unrestricted key.`,
      );
    }
    const outside = grants.applications.filter((id) => !allowed.includes(id));
    if (outside.length > 0) {
      throw problem(
        'forbidden',
        `This API key cannot ${subject} access to: ${outside.join(', ')}.`,
      );
    }
  }
  if (
    action !== 'revoke' &&
    caller.expiresAt !== null &&
    (grants.expiresAt === null || grants.expiresAt > caller.expiresAt)
  ) {
    const expires = new Date(caller.expiresAt).toISOString();
    throw problem(
      'forbidden',
      action === 'create'
        ? `This API key expires at ${expires}; a key it creates cannot outlive it.`
        : `This API key expires at ${expires}; it cannot rotate a key that outlives it.`,
    );
  }
}
