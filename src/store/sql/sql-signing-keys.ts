import type { Selectable } from 'kysely';
import type { SigningKeyRecord, SigningKeyRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import type { SigningKeysTable } from './tables.js';

// The private JWK is stored as JSON text like every other column: protecting it is the
// database's job (access control, encrypted disks and backups). See docs/decisions.md.
export class SqlSigningKeyRepository implements SigningKeyRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertSigningKey(key: SigningKeyRecord): Promise<void> {
    await this.sql.write([
      this.sql.db
        .insertInto('signing_keys')
        .values({
          kid: key.kid,
          generation: key.generation,
          algorithm: key.algorithm,
          public_jwk: JSON.stringify(key.publicJwk),
          private_jwk: JSON.stringify(key.privateJwk),
          created_at: key.createdAt,
          activates_at: key.activatesAt,
        })
        .compile(),
    ]);
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    const rows = await this.sql.select(
      this.sql.db.selectFrom('signing_keys').selectAll().orderBy('generation').compile(),
    );
    return rows.map(toSigningKeyRecord);
  }
}

function toSigningKeyRecord(row: Selectable<SigningKeysTable>): SigningKeyRecord {
  return {
    kid: row.kid,
    generation: Number(row.generation),
    algorithm: row.algorithm as SigningKeyRecord['algorithm'],
    publicJwk: JSON.parse(row.public_jwk) as Record<string, unknown>,
    privateJwk: JSON.parse(row.private_jwk) as Record<string, unknown>,
    createdAt: Number(row.created_at),
    activatesAt: Number(row.activates_at),
  };
}
