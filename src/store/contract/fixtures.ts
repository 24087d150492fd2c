// Records and helpers shared by the parts of the store contract.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type {
  ApiKeyRecord,
  ApplicationRecord,
  Store,
  UserFilter,
  UserPosition,
  UserRecord,
} from '../store.js';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');

export function applicationRecord(
  clientId: string,
  overrides: Partial<ApplicationRecord> = {},
): ApplicationRecord {
  return {
    clientId,
    displayName: `Application ${clientId}`,
    description: '',
    mode: 'internal',
    jwtExpirationInMinutes: 60,
    externalTokenValidation: null,
    scimProvider: null,
    authorization: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `app-${clientId}-1`,
    ...overrides,
  };
}

export function userRecord(
  clientId: string,
  provider: string,
  identifier: string,
  overrides: Partial<UserRecord> = {},
): UserRecord {
  return {
    clientId,
    provider,
    identifier,
    id: `id:${provider}:${identifier}`,
    name: `User ${identifier}`,
    avatar: null,
    email: 'someone@example.com',
    locale: 'en',
    roles: [],
    scopes: [],
    active: true,
    externalId: null,
    createdAt: T0,
    updatedAt: T0,
    etag: `user-${provider}-${identifier}-1`,
    ...overrides,
  };
}

export function apiKeyRecord(id: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    name: `key ${id}`,
    secretDigest: createHash('sha256').update(`secret of ${id}`).digest('hex'),
    roles: ['applications:read'],
    applications: null,
    createdAt: T0,
    updatedAt: T0,
    expiresAt: null,
    lastUsedAt: null,
    previousSecretDigest: null,
    previousExpiresAt: null,
    revokedAt: null,
    ...overrides,
  };
}

/** A key id in the service's shape (UUID v7 text), ordered by `n`. */
export function keyId(n: number): string {
  return `0198a3c2-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;
}

export const byBytes = (a: string, b: string): number =>
  Buffer.compare(Buffer.from(a), Buffer.from(b));

export const byUserPosition = (a: UserPosition, b: UserPosition): number =>
  byBytes(a.provider, b.provider) || byBytes(a.identifier, b.identifier);

/** Walks a keyset-paged list to its end and returns the pages. */
export async function walkPages<Row, Position>(
  fetchPage: (after: Position | null) => Promise<Row[]>,
  positionOf: (row: Row) => Position,
  limit: number,
): Promise<Row[][]> {
  const pages: Row[][] = [];
  let after: Position | null = null;
  for (;;) {
    const page = await fetchPage(after);
    assert.ok(page.length <= limit, `a page holds at most ${limit} rows`);
    if (page.length === 0) return pages;
    pages.push(page);
    if (page.length < limit) return pages;
    after = positionOf(page[page.length - 1]!);
  }
}

export function pageSizes(total: number, limit: number): number[] {
  const sizes = Array.from({ length: Math.floor(total / limit) }, () => limit);
  return total % limit === 0 ? sizes : [...sizes, total % limit];
}

export const identityOf = (user: UserRecord) => ({
  clientId: user.clientId,
  provider: user.provider,
  identifier: user.identifier,
});

/** The store under test, replaced before each test by describeStoreContract. */
export interface ContractContext {
  store: Store;
  closed: boolean;
}

export function usersOf(clientId: string, filter: Partial<UserFilter> = {}): UserFilter {
  return {
    clientId,
    provider: null,
    email: null,
    role: null,
    scope: null,
    active: null,
    ...filter,
  };
}
