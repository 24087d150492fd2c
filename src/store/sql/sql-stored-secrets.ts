import { ConditionFailedError } from '../errors.js';
import type { NewEvent, StoredSecret, StoredSecretRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { toEventRow } from './rows.js';

// The secrets sealed with IAM_SECRET_KEY live in two tables: signing_keys.private_jwk, and
// webhooks.secret and .previous_secret. A re-seal replaces them all in one transaction, each
// only if it is still the text that was read (a webhook whose secret was rotated meanwhile
// makes the whole re-seal try again), so no secret is ever left sealed with a key that is gone.
export class SqlStoredSecretRepository implements StoredSecretRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async listStoredSecrets(): Promise<StoredSecret[]> {
    const keys = await this.sql.select(
      this.sql.db
        .selectFrom('signing_keys')
        .select(['kid', 'private_jwk'])
        .orderBy('kid')
        .compile(),
    );
    const webhooks = await this.sql.select(
      this.sql.db
        .selectFrom('webhooks')
        .select(['id', 'secret', 'previous_secret'])
        .orderBy('id')
        .compile(),
    );
    return [
      ...keys.map((row): StoredSecret => ({
        kind: 'signing_key',
        id: row.kid,
        stored: row.private_jwk,
      })),
      ...webhooks.flatMap((row): StoredSecret[] => [
        { kind: 'webhook_secret', id: row.id, stored: row.secret },
        ...(row.previous_secret === null
          ? []
          : [
              { kind: 'webhook_previous_secret' as const, id: row.id, stored: row.previous_secret },
            ]),
      ]),
    ];
  }

  async replaceStoredSecrets(
    replacements: readonly { secret: StoredSecret; next: string }[],
    events: readonly NewEvent[],
  ): Promise<boolean> {
    if (replacements.length === 0) return true;
    const statements = replacements.map(({ secret, next }) => {
      switch (secret.kind) {
        case 'signing_key':
          return this.sql.db
            .updateTable('signing_keys')
            .set({ private_jwk: next })
            .where('kid', '=', secret.id)
            .where('private_jwk', '=', secret.stored)
            .compile();
        case 'webhook_secret':
          return this.sql.db
            .updateTable('webhooks')
            .set({ secret: next })
            .where('id', '=', secret.id)
            .where('secret', '=', secret.stored)
            .compile();
        case 'webhook_previous_secret':
          return this.sql.db
            .updateTable('webhooks')
            .set({ previous_secret: next })
            .where('id', '=', secret.id)
            .where('previous_secret', '=', secret.stored)
            .compile();
      }
    });
    try {
      await this.sql.write(statements, {
        everyStatementChanges: true,
        events: events.map(toEventRow),
      });
      return true;
    } catch (error) {
      if (error instanceof ConditionFailedError) return false;
      throw error;
    }
  }
}
