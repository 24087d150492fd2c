import type {
  PageQuery,
  UserFilter,
  UserIdentity,
  UserPosition,
  UserRecord,
  UserRepository,
} from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { normalizeEmail, toUserRecord, toUserRow } from './rows.js';
import { encodeUserKey, providerKeyRange } from './tables.js';

// Rows per INSERT statement: 14 parameters a row stays below SQLite's limit of 32,766 bound
// parameters and PostgreSQL's of 65,535.
const ROWS_PER_INSERT = 1000;

export class SqlUserRepository implements UserRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertUser(user: UserRecord): Promise<void> {
    await this.sql.write([this.sql.db.insertInto('users').values(toUserRow(user)).compile()]);
  }

  async insertUsers(users: readonly UserRecord[]): Promise<void> {
    if (users.length === 0) return;
    const statements = [];
    for (let start = 0; start < users.length; start += ROWS_PER_INSERT) {
      const rows = users.slice(start, start + ROWS_PER_INSERT).map(toUserRow);
      statements.push(this.sql.db.insertInto('users').values(rows).compile());
    }
    await this.sql.write(statements);
  }

  async findUser(identity: UserIdentity): Promise<UserRecord | undefined> {
    const rows = await this.sql.select(
      this.sql.db
        .selectFrom('users')
        .selectAll()
        .where('application', '=', identity.clientId)
        .where('user_key', '=', encodeUserKey(identity.provider, identity.identifier))
        .compile(),
    );
    return rows[0] && toUserRecord(rows[0]);
  }

  async listUsers(filter: UserFilter, page: PageQuery<UserPosition>): Promise<UserRecord[]> {
    let query = this.filtered(filter);
    // Keyset condition in the `application = ? AND user_key > ?` form, so the engine walks
    // the primary-key range: a deep page costs what the first one does.
    if (page.after !== null) {
      query = query.where(
        'user_key',
        '>',
        encodeUserKey(page.after.provider, page.after.identifier),
      );
    }
    const rows = await this.sql.select(
      query.selectAll().orderBy('user_key').limit(page.limit).compile(),
    );
    return rows.map(toUserRecord);
  }

  async countUsers(filter: UserFilter): Promise<number> {
    const [row] = await this.sql.select(
      this.filtered(filter)
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .compile(),
    );
    return Number(row?.count ?? 0);
  }

  async replaceUser(next: UserRecord, expectedEtag: string): Promise<boolean> {
    const {
      application,
      user_key: userKey,
      provider: _provider,
      identifier: _identifier,
      created_at: _createdAt,
      ...changes
    } = toUserRow(next);
    const [changed] = await this.sql.write([
      this.sql.db
        .updateTable('users')
        .set(changes)
        .where('application', '=', application)
        .where('user_key', '=', userKey)
        .where('etag', '=', expectedEtag)
        .compile(),
    ]);
    return changed === 1;
  }

  async deleteUser(identity: UserIdentity, expectedEtag: string): Promise<boolean> {
    const [changed] = await this.sql.write([
      this.sql.db
        .deleteFrom('users')
        .where('application', '=', identity.clientId)
        .where('user_key', '=', encodeUserKey(identity.provider, identity.identifier))
        .where('etag', '=', expectedEtag)
        .compile(),
    ]);
    return changed === 1;
  }

  private filtered(filter: UserFilter) {
    let query = this.sql.db.selectFrom('users').where('application', '=', filter.clientId);
    if (filter.provider !== null) {
      const range = providerKeyRange(filter.provider);
      query = query.where('user_key', '>=', range.from).where('user_key', '<', range.to);
    }
    if (filter.email !== null) {
      query = query.where('email_normalized', '=', normalizeEmail(filter.email));
    }
    if (filter.role !== null) {
      query = query.where(this.sql.flavor.jsonArrayContains('users.roles', filter.role));
    }
    if (filter.scope !== null) {
      query = query.where(this.sql.flavor.jsonArrayContains('users.scopes', filter.scope));
    }
    return query;
  }
}
