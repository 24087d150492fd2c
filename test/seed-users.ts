// Many users in one application, written straight through the store's bulk insert (10,000 a
// statement): how the backup specs and the benchmarks get a large database quickly.

import { newVersion } from '../src/modules/conditional-writes.js';
import type { Store, UserRecord } from '../src/store/store.js';

/** The identifier of seeded user n: 15 digits, so row n is known. */
export function seededIdentifier(n: number): string {
  return `1${String(n).padStart(14, '0')}`;
}

/** Seeded user n of `clientId` (provider google_oauth2). */
export function seededUser(clientId: string, n: number, now: number): UserRecord {
  return {
    clientId,
    provider: 'google_oauth2',
    identifier: seededIdentifier(n),
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name: `Seeded User ${n}`,
    avatar: null,
    email: `user${n}@example.com`,
    locale: 'en-GB',
    roles: ['member', 'billing:read'],
    scopes: ['org:acme'],
    active: true,
    externalId: null,
    createdAt: now,
    updatedAt: now,
    etag: newVersion(),
  };
}

/** Creates the application `clientId` in a migrated store and `count` users in it. */
export async function seedUsers(store: Store, clientId: string, count: number): Promise<void> {
  const now = Date.now();
  await store.applications.insertApplication(
    {
      clientId,
      displayName: clientId,
      description: '',
      mode: 'internal',
      jwtExpirationInMinutes: 60,
      externalTokenValidation: null,
      scimProvider: null,
      authorization: null,
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    },
    [],
  );
  let pending: Promise<void> = Promise.resolve();
  for (let start = 0; start < count; start += 10_000) {
    const batch: UserRecord[] = [];
    for (let n = start; n < Math.min(count, start + 10_000); n++) {
      batch.push(seededUser(clientId, n, now));
    }
    // The next batch is built while the previous one is written.
    await pending;
    pending = store.users.insertUsers(batch, []);
  }
  await pending;
}
