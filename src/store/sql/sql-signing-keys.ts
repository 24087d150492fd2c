import type { Selectable } from 'kysely';
import type { NewEvent, SigningKeyRecord, SigningKeyRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { toEventRow, toOptionalMillis } from './rows.js';
import type { SigningKeysTable } from './tables.js';

// The private key is stored as the text it is given: JWK JSON, or that JSON sealed with
// IAM_SECRET_KEY by the signing-keys service (the store never sees the secret key).
export class SqlSigningKeyRepository implements SigningKeyRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertSigningKey(key: SigningKeyRecord, events: readonly NewEvent[]): Promise<void> {
    await this.sql.write(
      [
        this.sql.db
          .insertInto('signing_keys')
          .values({
            kid: key.kid,
            generation: key.generation,
            algorithm: key.algorithm,
            public_jwk: JSON.stringify(key.publicJwk),
            private_jwk: key.privateKey,
            created_at: key.createdAt,
            activates_at: key.activatesAt,
            revoked_at: key.revokedAt,
          })
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    const rows = await this.sql.select(
      this.sql.db.selectFrom('signing_keys').selectAll().orderBy('generation').compile(),
    );
    return rows.map(toSigningKeyRecord);
  }

  async revokeSigningKey(
    kid: string,
    revokedAt: number,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const [updated] = await this.sql.write(
      [
        this.sql.db
          .updateTable('signing_keys')
          .set({ revoked_at: revokedAt })
          .where('kid', '=', kid)
          .where('revoked_at', 'is', null)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return updated === 1;
  }

  async replacePrivateKey(kid: string, expected: string, next: string): Promise<boolean> {
    const [updated] = await this.sql.write([
      this.sql.db
        .updateTable('signing_keys')
        .set({ private_jwk: next })
        .where('kid', '=', kid)
        .where('private_jwk', '=', expected)
        .compile(),
    ]);
    return updated === 1;
  }
}

function toSigningKeyRecord(row: Selectable<SigningKeysTable>): SigningKeyRecord {
  return {
    kid: row.kid,
    generation: Number(row.generation),
    algorithm: row.algorithm as SigningKeyRecord['algorithm'],
    publicJwk: JSON.parse(row.public_jwk) as Record<string, unknown>,
    privateKey: row.private_jwk,
    createdAt: Number(row.created_at),
    activatesAt: Number(row.activates_at),
    revokedAt: toOptionalMillis(row.revoked_at),
  };
}
