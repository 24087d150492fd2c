// Authentication and authorisation of API calls, decided in onRequest: before the body is
// read, before validation, before any lookup. A route states the role it needs in its config.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem } from '../problems.js';
import { type AuthFailureLimiter, retryAfterSeconds } from './auth-failures.js';
import type { AuthFailureReason } from './metrics.js';
import type { Role } from '../roles.js';
import type { ApiKeyRecord } from '../store/store.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The role a caller's API key must carry (each of them when several are listed; none but
     * a valid key when the list is empty); routes without one are public. The admin console's
     * routes declare theirs the same way, for the signed-in key (console.routes.ts).
     */
    role?: Role | readonly Role[];
  }
  interface FastifyRequest {
    /** The authenticated caller; set on every route that declares a role. */
    apiKey: ApiKeyRecord | null;
  }
}

/** The live key for a secret, or why there is none (for metrics; callers are never told). */
export type KeyCheck =
  | { ok: true; key: ApiKeyRecord }
  | { ok: false; reason: Exclude<AuthFailureReason, 'missing' | 'malformed'> };

export type Authenticate = (secret: string) => Promise<KeyCheck>;

// RFC 9110 credentials: an auth-scheme token, one or more spaces, then the key.
const CREDENTIALS = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) +([\x21-\x7e]+)$/;

/** How a scope of routes takes its API key: the schemes accepted, the one to challenge with. */
export interface CredentialSchemes {
  /** Lower-case scheme words, e.g. ['apikey'] or ['bearer', 'apikey']. */
  accepted: readonly string[];
  /** The WWW-Authenticate challenge of a 401. */
  challenge: string;
}

const API_KEY_SCHEME: CredentialSchemes = { accepted: ['apikey'], challenge: 'apikey' };

/** The key from `Authorization: <scheme> <KEY>` (scheme case-insensitive), or null. */
export function parseApiKeyHeader(
  header: string | undefined,
  schemes: readonly string[] = API_KEY_SCHEME.accepted,
): string | null {
  if (header === undefined) return null;
  const match = CREDENTIALS.exec(header);
  if (match === null || !schemes.includes(match[1]!.toLowerCase())) return null;
  return match[2]!;
}

function unauthenticated(schemes: CredentialSchemes) {
  // Uniform on purpose: never say whether the key was missing, unknown, revoked or expired.
  return problem(
    'unauthenticated',
    `A valid API key is required: Authorization: ${schemes.challenge} <KEY>.`,
    { headers: { 'www-authenticate': schemes.challenge } },
  );
}

/** The client_ids a caller may act on, or null for every application. */
export function allowedApplications(request: FastifyRequest): readonly string[] | null {
  return request.apiKey?.applications ?? null;
}

/** 403 unless the caller's key may act on this application. Call before any lookup. */
export function assertApplicationAllowed(request: FastifyRequest, clientId: string): void {
  const allowed = allowedApplications(request);
  if (allowed !== null && !allowed.includes(clientId)) {
    throw problem('forbidden', 'This API key is restricted to other applications.');
  }
}

/** 403 unless the key carries every role the route declares; the first one missing is named. */
export function assertRoles(held: readonly string[], required: Role | readonly Role[]): void {
  const roles: readonly Role[] = typeof required === 'string' ? [required] : required;
  const missing = roles.find((role) => !held.includes(role));
  if (missing !== undefined) {
    throw problem('forbidden', `This API key lacks the role ${missing}.`);
  }
}

/** 429 for an address past its failed-authentication limit. */
export function tooManyFailures(waitMs: number) {
  const seconds = retryAfterSeconds(waitMs);
  return problem(
    'rate-limited',
    `Too many failed authentications from this address; retry in ${seconds} s.`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

export function registerAuthentication(
  app: FastifyInstance,
  authenticate: Authenticate,
  failures: AuthFailureLimiter,
  schemes: CredentialSchemes = API_KEY_SCHEME,
  onFailure: (reason: AuthFailureReason) => void = () => {},
): void {
  if (!app.hasRequestDecorator('apiKey')) app.decorateRequest('apiKey', null);
  app.addHook('onRequest', async function authorizeRequest(request) {
    const role = request.routeOptions.config.role;
    if (role === undefined) return;
    // Checked before the key is even parsed: past the limit, a guess is not looked up.
    const waitMs = await failures.retryAfterMs(request.ip);
    if (waitMs > 0) throw tooManyFailures(waitMs);
    const header = request.headers.authorization;
    const secret = parseApiKeyHeader(header, schemes.accepted);
    const check: KeyCheck | { ok: false; reason: 'missing' | 'malformed' } =
      secret === null
        ? { ok: false, reason: header === undefined ? 'missing' : 'malformed' }
        : await authenticate(secret);
    if (!check.ok) {
      onFailure(check.reason);
      // Past the limit (counted by another instance until now): refused as over the limit.
      const waitMs = await failures.recordFailure(request.ip);
      if (waitMs > 0) throw tooManyFailures(waitMs);
      throw unauthenticated(schemes);
    }
    const key = check.key;
    request.apiKey = key;
    assertRoles(key.roles, role);
    // Checked before any lookup so a restricted key cannot learn whether another
    // application exists.
    const clientId = (request.params as { client_id?: unknown }).client_id;
    if (typeof clientId === 'string') assertApplicationAllowed(request, clientId);
  });
}
