// Every role an API key can carry. The seed's four, the key-management pair, and the roles
// of later phases (access tokens, events, webhooks, authorization decisions), so that an
// all-roles key stays all-roles.
export const ROLES = [
  'applications:read',
  'applications:write',
  'users:read',
  'users:write',
  'keys:read',
  'keys:write',
  'tokens:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'decisions:read',
] as const;

export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
