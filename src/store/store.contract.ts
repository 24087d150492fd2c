// The behaviour every Store backend owes its callers, written against the Store interface
// only: each backend's test file runs describeStoreContract with its own opener. The parts,
// one per repository, are in contract/.

import { afterEach, beforeEach, describe } from 'node:test';
import { describeApiKeysContract } from './contract/api-keys.js';
import { describeApplicationsContract } from './contract/applications.js';
import { describeEventsContract } from './contract/events.js';
import { describeConsoleSessionsContract } from './contract/console-sessions.js';
import type { ContractContext } from './contract/fixtures.js';
import { describeImportsContract } from './contract/imports.js';
import { describeLifecycleContract } from './contract/lifecycle.js';
import { describeLimitCountersContract } from './contract/limit-counters.js';
import { describeSettingsContract } from './contract/settings.js';
import { describeSigningKeysContract } from './contract/signing-keys.js';
import { describeStoredSecretsContract } from './contract/stored-secrets.js';
import { describeTokenReadsContract } from './contract/token-reads.js';
import { describeUserDecisionsContract } from './contract/user-decisions.js';
import { describeUserQueriesContract } from './contract/user-queries.js';
import { describeUsersContract } from './contract/users.js';
import { describeWebhooksContract } from './contract/webhooks.js';
import type { Store } from './store.js';

export function describeStoreContract(name: string, openStore: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    const ctx = { closed: false } as ContractContext;

    beforeEach(async () => {
      ctx.store = await openStore();
      ctx.closed = false;
      await ctx.store.migrate();
    });

    afterEach(async () => {
      if (!ctx.closed) await ctx.store.close();
    });

    describeApplicationsContract(ctx);
    describeUsersContract(ctx);
    describeUserQueriesContract(ctx);
    describeUserDecisionsContract(ctx);
    describeTokenReadsContract(ctx);
    describeImportsContract(ctx);
    describeApiKeysContract(ctx);
    describeSettingsContract(ctx);
    describeLimitCountersContract(ctx);
    describeSigningKeysContract(ctx);
    describeStoredSecretsContract(ctx);
    describeWebhooksContract(ctx);
    describeEventsContract(ctx);
    describeConsoleSessionsContract(ctx);
    describeLifecycleContract(ctx);
  });
}
