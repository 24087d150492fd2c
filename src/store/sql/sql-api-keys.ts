import type {
  ApiKeyFilter,
  ApiKeyRecord,
  ApiKeyRepository,
  ApiKeySecretChange,
  NewEvent,
  PageQuery,
} from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { toApiKeyRecord, toApiKeyRow, toEventRow } from './rows.js';

export class SqlApiKeyRepository implements ApiKeyRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertApiKey(key: ApiKeyRecord, events: readonly NewEvent[]): Promise<void> {
    await this.sql.write([this.sql.db.insertInto('api_keys').values(toApiKeyRow(key)).compile()], {
      events: events.map(toEventRow),
    });
  }

  async insertFirstApiKey(key: ApiKeyRecord, events: readonly NewEvent[]): Promise<boolean> {
    const row = toApiKeyRow(key);
    const { db } = this.sql;
    // INSERT … SELECT … WHERE NOT EXISTS, under SERIALIZABLE: two instances starting at once
    // on an empty database cannot both see "no key" and both insert one.
    const statement = db
      .insertInto('api_keys')
      .columns([
        'id',
        'name',
        'secret_digest',
        'roles',
        'applications',
        'created_at',
        'updated_at',
        'expires_at',
        'last_used_at',
      ])
      .expression(
        db
          .selectNoFrom((eb) => [
            eb.cast<string>(eb.val(row.id), 'text').as('id'),
            eb.cast<string>(eb.val(row.name), 'text').as('name'),
            eb.cast<string>(eb.val(row.secret_digest), 'text').as('secret_digest'),
            eb.cast<string>(eb.val(row.roles), 'text').as('roles'),
            eb.cast<string | null>(eb.val(row.applications ?? null), 'text').as('applications'),
            eb.cast<number>(eb.val(row.created_at), 'bigint').as('created_at'),
            eb.cast<number>(eb.val(row.updated_at), 'bigint').as('updated_at'),
            eb.cast<number | null>(eb.val(row.expires_at ?? null), 'bigint').as('expires_at'),
            eb.cast<number | null>(eb.val(row.last_used_at ?? null), 'bigint').as('last_used_at'),
          ])
          .where((eb) => eb.not(eb.exists(db.selectFrom('api_keys').select('id')))),
      )
      .compile();
    const [inserted] = await this.sql.write([statement], {
      serializable: true,
      events: events.map(toEventRow),
    });
    return inserted === 1;
  }

  async findApiKeyByDigest(secretDigest: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.sql.select(
      this.sql.db
        .selectFrom('api_keys')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb('secret_digest', '=', secretDigest),
            eb('previous_secret_digest', '=', secretDigest),
          ]),
        )
        .compile(),
    );
    return rows[0] && toApiKeyRecord(rows[0]);
  }

  async findApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.sql.select(
      this.sql.db.selectFrom('api_keys').selectAll().where('id', '=', id).compile(),
    );
    return rows[0] && toApiKeyRecord(rows[0]);
  }

  async listApiKeys(filter: ApiKeyFilter, page: PageQuery<string>): Promise<ApiKeyRecord[]> {
    let query = this.sql.db.selectFrom('api_keys').selectAll();
    if (!filter.includeRevoked) query = query.where('revoked_at', 'is', null);
    if (page.after !== null) query = query.where('id', '>', page.after);
    const rows = await this.sql.select(query.orderBy('id').limit(page.limit).compile());
    return rows.map(toApiKeyRecord);
  }

  async countApiKeys(filter: ApiKeyFilter): Promise<number> {
    let query = this.sql.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number | string>().as('count'));
    if (!filter.includeRevoked) query = query.where('revoked_at', 'is', null);
    const [row] = await this.sql.select(query.compile());
    return Number(row?.count ?? 0);
  }

  async updateApiKeyGrants(
    id: string,
    grants: { roles: string[]; applications: string[] | null; updatedAt: number },
    events: readonly NewEvent[],
  ): Promise<void> {
    await this.sql.write(
      [
        this.sql.db
          .updateTable('api_keys')
          .set({
            roles: JSON.stringify(grants.roles),
            applications: grants.applications === null ? null : JSON.stringify(grants.applications),
            expires_at: null,
            updated_at: grants.updatedAt,
          })
          .where('id', '=', id)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
  }

  async touchApiKey(id: string, usedAt: number): Promise<void> {
    await this.sql.write([
      this.sql.db
        .updateTable('api_keys')
        .set({ last_used_at: usedAt })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', usedAt)]))
        .compile(),
    ]);
  }

  async rotateApiKeySecret(
    id: string,
    change: ApiKeySecretChange,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const [updated] = await this.sql.write(
      [
        this.sql.db
          .updateTable('api_keys')
          .set({
            secret_digest: change.secretDigest,
            previous_secret_digest: change.expectedDigest,
            previous_expires_at: change.previousExpiresAt,
            updated_at: change.updatedAt,
          })
          .where('id', '=', id)
          .where('secret_digest', '=', change.expectedDigest)
          .where('revoked_at', 'is', null)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return updated === 1;
  }

  async revokeApiKey(
    id: string,
    revokedAt: number,
    events: readonly NewEvent[],
    whileAnyWorks?: readonly string[],
  ): Promise<boolean> {
    const { db } = this.sql;
    let statement = db
      .updateTable('api_keys')
      .set({ revoked_at: revokedAt, updated_at: revokedAt })
      .where('id', '=', id)
      .where('revoked_at', 'is', null);
    if (whileAnyWorks !== undefined) {
      if (whileAnyWorks.length === 0) return false;
      statement = statement.where((eb) =>
        eb.exists(
          db
            .selectFrom('api_keys as other')
            .select('other.id')
            .where('other.id', 'in', [...whileAnyWorks])
            .where('other.revoked_at', 'is', null)
            .where((inner) =>
              inner.or([
                inner('other.expires_at', 'is', null),
                inner('other.expires_at', '>', revokedAt),
              ]),
            ),
        ),
      );
    }
    // Serializable: two revocations that each count on the other key still working cannot
    // both commit (PostgreSQL refuses one as a serialization failure, and it is run again).
    const [updated] = await this.sql.write([statement.compile()], {
      events: events.map(toEventRow),
      ...(whileAnyWorks === undefined ? {} : { serializable: true }),
    });
    return updated === 1;
  }
}
