import type {
  ApplicationFilter,
  ApplicationRecord,
  ApplicationRepository,
  NewEvent,
  PageQuery,
} from '../store.js';
import { type CompiledQuery, sql } from 'kysely';
import type { SqlExecutor } from './sql-executor.js';
import { precompile } from './precompiled.js';
import { toApplicationRecord, toApplicationRow, toEventRow } from './rows.js';
import { providerKeyRange } from './tables.js';

/**
 * The range of client_ids that start with a prefix, on the primary key (byte order on both
 * engines): every client_id character sorts below U+007F, so [prefix, prefix + U+007F) holds
 * exactly the client_ids with that prefix. Null: no prefix asked.
 */
function prefixRange(prefix: string | null | undefined): { from: string; to: string } | null {
  if (prefix === null || prefix === undefined || prefix === '') return null;
  return { from: prefix, to: `${prefix}\u007f` };
}

export class SqlApplicationRepository implements ApplicationRepository {
  readonly #findApplication;

  constructor(private readonly sql: SqlExecutor) {
    this.#findApplication = precompile((arg) =>
      sql.db.selectFrom('applications').selectAll().where('client_id', '=', arg<string>(0)),
    );
  }

  async insertApplication(
    application: ApplicationRecord,
    events: readonly NewEvent[],
  ): Promise<void> {
    await this.sql.write(
      [this.sql.db.insertInto('applications').values(toApplicationRow(application)).compile()],
      { events: events.map(toEventRow) },
    );
  }

  async findApplication(clientId: string): Promise<ApplicationRecord | undefined> {
    const rows = await this.sql.select(this.#findApplication(clientId));
    return rows[0] && toApplicationRecord(rows[0]);
  }

  async listApplications(
    filter: ApplicationFilter,
    page: PageQuery<string>,
  ): Promise<ApplicationRecord[]> {
    if (filter.clientIds?.length === 0) return [];
    let query = this.sql.db.selectFrom('applications').selectAll();
    if (filter.clientIds) query = query.where('client_id', 'in', [...filter.clientIds]);
    const range = prefixRange(filter.clientIdPrefix);
    if (range) query = query.where('client_id', '>=', range.from).where('client_id', '<', range.to);
    if (page.after !== null) query = query.where('client_id', '>', page.after);
    const rows = await this.sql.select(query.orderBy('client_id').limit(page.limit).compile());
    return rows.map(toApplicationRecord);
  }

  async countApplications(filter: ApplicationFilter): Promise<number> {
    if (filter.clientIds?.length === 0) return 0;
    let query = this.sql.db
      .selectFrom('applications')
      .select((eb) => eb.fn.countAll<number | string>().as('count'));
    if (filter.clientIds) query = query.where('client_id', 'in', [...filter.clientIds]);
    const range = prefixRange(filter.clientIdPrefix);
    if (range) query = query.where('client_id', '>=', range.from).where('client_id', '<', range.to);
    const [row] = await this.sql.select(query.compile());
    return Number(row?.count ?? 0);
  }

  async replaceApplication(
    next: ApplicationRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const { client_id: clientId, created_at: _createdAt, ...changes } = toApplicationRow(next);
    const update = this.sql.db
      .updateTable('applications')
      .set(changes)
      .where('client_id', '=', clientId)
      .where('etag', '=', expectedEtag)
      .compile();
    // The stored version tells whether the SCIM provider changes: if that version is still the
    // expected one when the update runs, so is its provider (a change would have moved the etag).
    const stored = await this.findApplication(clientId);
    const rekey =
      stored !== undefined &&
      stored.etag === expectedEtag &&
      stored.scimProvider !== next.scimProvider;
    const statements = rekey ? [...this.rekeyStatements(next, expectedEtag), update] : [update];
    const changed = await this.sql.write(statements, {
      events: events.map(toEventRow),
      decisive: statements.length - 1,
    });
    return changed.at(-1) === 1;
  }

  /**
   * A new SCIM provider moves the users' SCIM userName keys (sql-users.ts) in the write's own
   * transaction: the former provider's users lose theirs, the new one's get theirs, and two of
   * them whose identifiers differ only in ASCII case make it fail (DuplicateError, index
   * users_scim_user_name). Keys are cleared before any is set: the index is checked row by row.
   * On PostgreSQL the application's row is locked first, against the key share a user insert
   * takes as it reads the provider: an insert that read the former one commits before the keys
   * move, and one that comes after reads the new one.
   */
  private rekeyStatements(next: ApplicationRecord, expectedEtag: string): CompiledQuery[] {
    const { db, kind } = this.sql;
    const current = db
      .selectFrom('applications')
      .select('client_id')
      .where('client_id', '=', next.clientId)
      .where('etag', '=', expectedEtag);
    const statements: CompiledQuery[] = [];
    if (kind === 'postgres') {
      statements.push(current.forUpdate().compile());
    }
    statements.push(
      db
        .updateTable('users')
        .set({ scim_user_name: null })
        .where('application', '=', current)
        .where('scim_user_name', 'is not', null)
        .compile(),
    );
    if (next.scimProvider !== null) {
      const range = providerKeyRange(next.scimProvider);
      statements.push(
        db
          .updateTable('users')
          .set({ scim_user_name: sql`identifier_folded` })
          .where('application', '=', current)
          .where('user_key', '>=', range.from)
          .where('user_key', '<', range.to)
          .compile(),
      );
    }
    return statements;
  }

  async deleteApplicationCascade(
    clientId: string,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    // users.application references applications ON DELETE CASCADE: one statement removes
    // the application and its users atomically, and only if the etag still matches.
    const [changed] = await this.sql.write(
      [
        this.sql.db
          .deleteFrom('applications')
          .where('client_id', '=', clientId)
          .where('etag', '=', expectedEtag)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return changed === 1;
  }
}
