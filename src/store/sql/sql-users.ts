import type {
  ApplicationRecord,
  DecidingUserRecord,
  NewEvent,
  PageQuery,
  TokenUserRecord,
  UserGrant,
  UserRefs,
  UserFilter,
  UserIdentity,
  UserPageText,
  UserPosition,
  UserQuery,
  UserQueryPage,
  UserRecord,
  UserRepository,
} from '../store.js';
import { CompiledQuery, type Insertable, type RawBuilder, type Updateable, sql } from 'kysely';
import type { UserPredicate } from '../user-predicate.js';
import type { SqlExecutor } from './sql-executor.js';
import { type Parameter, precompile } from './precompiled.js';
import {
  type UserRow,
  normalizeEmail,
  parseStringArray,
  toEventRow,
  toUserRecord,
  toUserRow,
} from './rows.js';
import {
  type Bind,
  compileUserPredicate,
  predicateShape,
  predicateValues,
  stablePlaceholder,
  storedType,
} from './sql-user-query.js';
import { type UsersTable, decodeUserKey, encodeUserKey, providerKeyRange } from './tables.js';
import { ApplicationRecords, SqlUserDecisionReads } from './sql-user-decisions.js';

// Rows per INSERT statement: 18 parameters a row stays below SQLite's limit of 32,766 bound
// parameters and PostgreSQL's of 65,535.
const ROWS_PER_INSERT = 1000;
// Row counts whose bulk INSERT is kept compiled (a full chunk, an import's batch, the last ones).
const BULK_INSERT_SHAPES_KEPT = 16;
// Ids per IN list when users are read by id.
const IDS_PER_SELECT = 500;
// Distinct query shapes kept compiled; past this many the cache starts over.
const QUERY_SHAPES_KEPT = 500;

/** Every column of a users row, in the order precompiled writes bind them. */
const ROW_COLUMNS = [
  'application',
  'user_key',
  'provider',
  'identifier',
  'name',
  'avatar',
  'email',
  'email_normalized',
  'locale',
  'roles',
  'scopes',
  'active',
  'external_id',
  'labels',
  'identifier_folded',
  'id',
  'created_at',
  'updated_at',
  'etag',
] as const satisfies readonly (keyof UsersTable)[];

type Column = (typeof ROW_COLUMNS)[number];

function columnsWithout(...excluded: Column[]): Column[] {
  return ROW_COLUMNS.filter((column) => !excluded.includes(column));
}

/** What a user record is made of; the derived columns are not read. */
const USER_COLUMNS = columnsWithout('user_key', 'email_normalized', 'identifier_folded');

/** The columns a replace changes: all but the application, the id and the creation time. */
const CHANGED_COLUMNS = columnsWithout('application', 'id', 'created_at');

/**
 * The columns a replace that keeps the user's identity changes: not its key, provider,
 * identifier or their folded forms. SQLite rewrites the entry of every index that has a
 * column the UPDATE assigns, changed or not: leaving these out spares the primary key,
 * users_identifier_folded and users_scim_user_name (a find and replace of one user among
 * 100,000 in one transaction: 44 µs of CPU instead of 64).
 */
const PROFILE_COLUMNS = columnsWithout(
  'application',
  'id',
  'created_at',
  'user_key',
  'provider',
  'identifier',
  'identifier_folded',
);

/** `{ column: arg(i) }` for the columns, in order from `first`. */
function boundColumns(columns: readonly string[], arg: Parameter, first = 0) {
  return Object.fromEntries(columns.map((column, index) => [column, arg(first + index)]));
}

/**
 * A new user's scim_user_name: its folded identifier when its provider is its application's SCIM
 * provider, else NULL (the unique index on it then never clashes). Read in the insert itself; on
 * PostgreSQL the read locks the application's row as the foreign key check does, so a change of
 * the application's SCIM provider, which takes the row FOR UPDATE first (sql-applications.ts),
 * either waits for this insert to commit and then re-keys it, or comes first and is seen here.
 */
function scimUserNameOnInsert(
  kind: 'sqlite' | 'postgres',
  application: unknown,
  provider: unknown,
  folded: unknown,
): RawBuilder<string | null> {
  const lock = kind === 'postgres' ? sql` for key share` : sql``;
  return sql<
    string | null
  >`case when ${provider} = (select scim_provider from applications where client_id = ${application}${lock}) then ${folded} end`;
}

/** A replaced user's scim_user_name: a rename keeps a SCIM user's key current; others have none. */
function scimUserNameOnReplace(folded: unknown): RawBuilder<string | null> {
  return sql<string | null>`case when scim_user_name is not null then ${folded} end`;
}

/** The slots of an inserted row's values that its scim_user_name is made of. */
const SCIM_USER_NAME_SOURCES = (['application', 'provider', 'identifier_folded'] as const).map(
  (column) => ROW_COLUMNS.indexOf(column),
) as [number, number, number];

/**
 * SQLite's INSERT of `rows` users: `insert … select … from (values …)`, the SCIM provider read
 * by one correlated subquery over the VALUES. The same subquery written into each row of a
 * multi-row VALUES (what insertedRow builds) is run as a subprogram of its own per row and cost
 * about 20 µs of CPU a row, three times the rest of a bulk insert (issue 25's check in
 * bench/README.md); this form costs next to nothing. SQLite names the VALUES' columns column1…
 * in ROW_COLUMNS' order, and binds the values of each row in that order.
 */
function sqliteBulkInsert(rows: number): string {
  const column = (name: (typeof ROW_COLUMNS)[number]) => `column${ROW_COLUMNS.indexOf(name) + 1}`;
  const row = `(${ROW_COLUMNS.map(() => '?').join(', ')})`;
  return (
    `insert into "users" (${ROW_COLUMNS.map((name) => `"${name}"`).join(', ')}, "scim_user_name") ` +
    `select ${ROW_COLUMNS.map(column).join(', ')}, ` +
    `case when ${column('provider')} = (select "scim_provider" from "applications" ` +
    `where "client_id" = ${column('application')}) then ${column('identifier_folded')} end ` +
    `from (values ${Array.from({ length: rows }, () => row).join(', ')})`
  );
}

/** findUsersForImport's read of the application's users whose `column` is in a list. */
function importLookup(kind: 'sqlite' | 'postgres', column: 'user_key' | 'id'): string {
  const columns = USER_COLUMNS.map((name) => `"${name}"`).join(', ');
  return kind === 'sqlite'
    ? `select ${columns} from "users" where "application" = ? and "${column}" in (select value from json_each(?))`
    : `select ${columns} from "users" where "application" = $1 and "${column}" = any($2::text[])`;
}

export class SqlUserRepository implements UserRepository {
  readonly #findUser;
  readonly #findUserById;
  readonly #insertUser;
  readonly #replaceUser;
  readonly #replaceProfile;
  readonly #queries = new Map<string, (...args: unknown[]) => CompiledQuery<UserRow>>();
  /** Bulk INSERTs by row count (#bulkInsert). */
  readonly #bulkInserts = new Map<number, (values: unknown[]) => CompiledQuery>();
  readonly #pages = new Map<string, (...args: unknown[]) => CompiledQuery<UserRow>>();
  readonly #textPages = new Map<string, (...args: unknown[]) => CompiledQuery<UserPageTextRow>>();
  readonly #scimQueries = new Map<
    string,
    (...args: unknown[]) => CompiledQuery<UserRow & { held_groups: unknown }>
  >();

  readonly #decisions: SqlUserDecisionReads;
  readonly #findTokenUser;
  readonly #findApplication;
  /** Application records by version, shared by the token read and the decisions' reads. */
  readonly #applications = new ApplicationRecords();

  constructor(private readonly sql: SqlExecutor) {
    this.#decisions = new SqlUserDecisionReads(sql, this.#applications);
    // The application's version and what a token reads of the user: one row of 9 values where
    // the application's row and the whole user's took two rows of 27 columns, whose
    // description the driver parses on every statement.
    this.#findTokenUser = precompile((arg) =>
      sql.db
        .selectFrom('applications')
        .leftJoin('users', (join) =>
          join
            .onRef('users.application', '=', 'applications.client_id')
            .on('users.user_key', '=', arg<string>(1)),
        )
        .select([
          'applications.etag as application_etag',
          'users.provider',
          'users.identifier',
          'users.name',
          'users.email',
          'users.locale',
          'users.roles',
          'users.scopes',
          'users.active',
        ])
        .where('applications.client_id', '=', arg<string>(0)),
    );
    this.#findApplication = precompile((arg) =>
      sql.db.selectFrom('applications').selectAll().where('client_id', '=', arg<string>(0)),
    );
    this.#findUser = precompile((arg) =>
      sql.db
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('application', '=', arg<string>(0))
        .where('user_key', '=', arg<string>(1)),
    );
    this.#findUserById = precompile((arg) =>
      sql.db
        .selectFrom('users')
        .select(USER_COLUMNS)
        .where('application', '=', arg<string>(0))
        .where('id', '=', arg<string>(1)),
    );
    this.#insertUser = precompile((arg) =>
      sql.db.insertInto('users').values(this.insertedRow(arg, 0)),
    );
    this.#replaceUser = precompile((arg) =>
      sql.db
        .updateTable('users')
        .set({
          ...(boundColumns(CHANGED_COLUMNS, arg) as Updateable<UsersTable>),
          scim_user_name: scimUserNameOnReplace(arg(CHANGED_COLUMNS.indexOf('identifier_folded'))),
        } as unknown as Updateable<UsersTable>)
        .where('application', '=', arg<string>(CHANGED_COLUMNS.length))
        .where('id', '=', arg<string>(CHANGED_COLUMNS.length + 1))
        .where('etag', '=', arg<string>(CHANGED_COLUMNS.length + 2)),
    );
    this.#replaceProfile = precompile((arg) =>
      sql.db
        .updateTable('users')
        .set(boundColumns(PROFILE_COLUMNS, arg) as Updateable<UsersTable>)
        .where('application', '=', arg<string>(PROFILE_COLUMNS.length))
        .where('id', '=', arg<string>(PROFILE_COLUMNS.length + 1))
        .where('etag', '=', arg<string>(PROFILE_COLUMNS.length + 2))
        // A caller mistaken about the identity changes nothing rather than half of it.
        .where('user_key', '=', arg<string>(PROFILE_COLUMNS.length + 3)),
    );
  }

  /** The values of one inserted row, bound from slot `first` on (ROW_COLUMNS' order). */
  private insertedRow(arg: Parameter, first: number): Insertable<UsersTable> {
    const [application, provider, folded] = SCIM_USER_NAME_SOURCES;
    return {
      ...boundColumns(ROW_COLUMNS, arg, first),
      scim_user_name: scimUserNameOnInsert(
        this.sql.kind,
        arg(first + application),
        arg(first + provider),
        arg(first + folded),
      ),
    } as unknown as Insertable<UsersTable>;
  }

  async insertUser(user: UserRecord, events: readonly NewEvent[]): Promise<void> {
    const row = toUserRow(user);
    await this.sql.write([this.#insertUser(...ROW_COLUMNS.map((column) => row[column]))], {
      events: events.map(toEventRow),
    });
  }

  async insertUsers(users: readonly UserRecord[], events: readonly NewEvent[]): Promise<void> {
    if (users.length === 0) return;
    await this.sql.write(this.insertStatements(users), { events: events.map(toEventRow) });
  }

  /**
   * The INSERTs of insertUsers (one per `rowsPerStatement` users, at most ROWS_PER_INSERT), for
   * writes that do more. Each statement's text is made once per row count.
   */
  insertStatements(
    users: readonly UserRecord[],
    rowsPerStatement: number = ROWS_PER_INSERT,
  ): CompiledQuery[] {
    const size = Math.min(rowsPerStatement, ROWS_PER_INSERT);
    const statements = [];
    for (let start = 0; start < users.length; start += size) {
      const rows = users.slice(start, start + size).map(toUserRow);
      const values: unknown[] = [];
      for (const row of rows) for (const column of ROW_COLUMNS) values.push(row[column]);
      statements.push(this.#bulkInsert(rows.length)(values));
    }
    return statements;
  }

  /** The INSERT of `count` users, binding their ROW_COLUMNS values row after row. */
  #bulkInsert(count: number): (values: unknown[]) => CompiledQuery {
    let insert = this.#bulkInserts.get(count);
    if (insert === undefined) {
      if (this.#bulkInserts.size >= BULK_INSERT_SHAPES_KEPT) this.#bulkInserts.clear();
      if (this.sql.kind === 'sqlite') {
        const text = sqliteBulkInsert(count);
        insert = (values) => CompiledQuery.raw(text, values);
      } else {
        const compiled = precompile((arg) =>
          this.sql.db
            .insertInto('users')
            .values(
              Array.from({ length: count }, (_, index) =>
                this.insertedRow(arg, index * ROW_COLUMNS.length),
              ),
            ),
        );
        insert = (values) => compiled(...values);
      }
      this.#bulkInserts.set(count, insert);
    }
    return insert;
  }

  async *exportUsers(filter: UserFilter, pageSize: number): AsyncIterableIterator<UserRecord[]> {
    const snapshot = await this.sql.openSnapshot();
    try {
      let after: UserPosition | null = null;
      for (;;) {
        const rows: UserRow[] = await snapshot.select(
          this.#pageQuery(filter, { after, limit: pageSize }),
        );
        if (rows.length === 0) return;
        const users: UserRecord[] = rows.map(toUserRecord);
        const last: UserRecord = users[users.length - 1]!;
        after = { provider: last.provider, identifier: last.identifier };
        yield users;
        if (rows.length < pageSize) return;
      }
    } finally {
      await snapshot.close();
    }
  }

  async findUser(identity: UserIdentity): Promise<UserRecord | undefined> {
    const rows = await this.sql.select(
      this.#findUser(identity.clientId, encodeUserKey(identity.provider, identity.identifier)),
    );
    return rows[0] && toUserRecord(rows[0]);
  }

  async findApplicationWithTokenUser(
    identity: UserIdentity,
  ): Promise<{ application: ApplicationRecord; user: TokenUserRecord | undefined } | undefined> {
    const { clientId } = identity;
    const [row] = await this.sql.select(
      this.#findTokenUser(clientId, encodeUserKey(identity.provider, identity.identifier)),
    );
    if (row === undefined) return undefined;
    let application = this.#applications.current(clientId, row.application_etag);
    if (application === undefined) {
      // A version not seen before (first read, or the application changed): its whole row.
      const [whole] = await this.sql.select(this.#findApplication(clientId));
      if (whole === undefined) return undefined;
      application = this.#applications.of(whole);
    }
    // The user's columns are null when the join found no user (provider is never null).
    if (row.provider === null) return { application, user: undefined };
    return {
      application,
      user: {
        clientId,
        provider: row.provider,
        identifier: row.identifier!,
        name: row.name!,
        email: row.email!,
        locale: row.locale!,
        roles: parseStringArray(row.roles!),
        scopes: parseStringArray(row.scopes!),
        active: row.active === 1,
      },
    };
  }

  async findUserById(clientId: string, id: string): Promise<UserRecord | undefined> {
    const rows = await this.sql.select(this.#findUserById(clientId, id));
    return rows[0] && toUserRecord(rows[0]);
  }

  async findUsersByIds(clientId: string, ids: readonly string[]): Promise<UserRecord[]> {
    const users: UserRecord[] = [];
    const unique = [...new Set(ids)];
    for (let start = 0; start < unique.length; start += IDS_PER_SELECT) {
      const rows = await this.sql.select(
        this.sql.db
          .selectFrom('users')
          .select(USER_COLUMNS)
          .where('application', '=', clientId)
          .where('id', 'in', unique.slice(start, start + IDS_PER_SELECT))
          .compile(),
      );
      users.push(...rows.map(toUserRecord));
    }
    return users;
  }

  /**
   * One read per index whatever the number of refs: the keys (and ids) travel as one parameter,
   * an array on PostgreSQL and a JSON array on SQLite, so each store keeps one plan. The union
   * of one lookup per ref that findApplicationWithUsers compiles grew slower with the table on
   * PostgreSQL (bench/README.md).
   */
  async findUsersForImport(clientId: string, refs: UserRefs): Promise<UserRecord[] | undefined> {
    const keys = [
      ...new Set(refs.identities.map((ref) => encodeUserKey(ref.provider, ref.identifier))),
    ];
    const ids = [...new Set(refs.ids)];
    const users: UserRecord[] = [];
    const seen = new Set<string>();
    for (const [column, values] of [
      ['user_key', keys],
      ['id', ids],
    ] as const) {
      if (values.length === 0) continue;
      const rows = await this.sql.select<UserRow>(
        CompiledQuery.raw(importLookup(this.sql.kind, column), [
          clientId,
          this.sql.kind === 'sqlite' ? JSON.stringify(values) : values,
        ]),
      );
      for (const row of rows) {
        const user = toUserRecord(row);
        if (seen.has(user.id)) continue;
        seen.add(user.id);
        users.push(user);
      }
    }
    if (users.length > 0) return users;
    const [application] = await this.sql.select(
      this.sql.db
        .selectFrom('applications')
        .select('client_id')
        .where('client_id', '=', clientId)
        .compile(),
    );
    return application === undefined ? undefined : users;
  }

  findApplicationWithUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: UserRecord[] } | undefined> {
    return this.#decisions.findApplicationWithUsers(clientId, refs);
  }

  findApplicationWithDecidingUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: DecidingUserRecord[] } | undefined> {
    return this.#decisions.findApplicationWithDecidingUsers(clientId, refs);
  }

  listGrantedUsers(grant: UserGrant, page: PageQuery<UserPosition>): Promise<UserRecord[]> {
    return this.#decisions.listGrantedUsers(grant, page);
  }

  async queryUsers(query: UserQuery, page: UserQueryPage): Promise<UserRecord[]> {
    const paged = page.offset === undefined ? (page.after === null ? 'first' : 'after') : 'offset';
    const shape = `${predicateShape(query.predicate)}|${paged}`;
    let compiled = this.#queries.get(shape);
    if (compiled === undefined) {
      compiled = precompile((arg) => {
        const stable = (index: number, type: 'text' | 'integer') =>
          stablePlaceholder(this.sql.kind, arg(index), type) as never;
        let next = FIXED_QUERY_ARGUMENTS;
        let built = this.queried(query, arg, (value) => stable(next++, storedType(value)));
        // Within one provider, user_key order is identifier byte order.
        if (paged === 'after') built = built.where('user_key', '>', stable(next++, 'text'));
        let ordered = built
          .select(USER_COLUMNS)
          .orderBy('user_key')
          .limit(stable(next++, 'integer'));
        if (paged === 'offset') ordered = ordered.offset(stable(next++, 'integer'));
        return ordered;
      });
      if (this.#queries.size >= QUERY_SHAPES_KEPT) this.#queries.clear();
      this.#queries.set(shape, compiled);
    }
    const args = queryArguments(query);
    if (paged === 'after') args.push(encodeUserKey(query.provider, page.after!));
    args.push(page.limit);
    if (paged === 'offset') args.push(page.offset);
    const rows = await this.sql.select(compiled(...args));
    return rows.map(toUserRecord);
  }

  async queryScimUsers(
    clientId: string,
    predicate: UserPredicate,
    page: { offset: number; limit: number },
  ): Promise<{ user: UserRecord; groups: { id: string; displayName: string }[] }[] | undefined> {
    if (!hasIndexedEquality(predicate)) return undefined;
    const shape = `scim|${predicateShape(predicate)}`;
    let compiled = this.#scimQueries.get(shape);
    if (compiled === undefined) {
      compiled = precompile((arg) => {
        const stable = (index: number, type: 'text' | 'integer') =>
          stablePlaceholder(this.sql.kind, arg(index), type) as never;
        let next = 2;
        // The provider is the application's scim_provider: none (no row) when SCIM is off.
        return this.sql.db
          .selectFrom('users')
          .where('application', '=', stable(0, 'text'))
          .where((eb) =>
            eb(
              'provider',
              '=',
              eb
                .selectFrom('applications')
                .select('scim_provider')
                .where('client_id', '=', stable(1, 'text')) as never,
            ),
          )
          .where((eb) =>
            compileUserPredicate(eb, predicate, this.sql.flavor, (value) =>
              stable(next++, storedType(value)),
            ),
          )
          .select(USER_COLUMNS)
          .select(this.sql.kind === 'sqlite' ? SQLITE_HELD_GROUPS : POSTGRES_HELD_GROUPS)
          .orderBy('user_key')
          .limit(stable(next++, 'integer'))
          .offset(stable(next++, 'integer'));
      });
      if (this.#scimQueries.size >= QUERY_SHAPES_KEPT) this.#scimQueries.clear();
      this.#scimQueries.set(shape, compiled);
    }
    const rows = await this.sql.select(
      compiled(clientId, clientId, ...predicateValues(predicate), page.limit, page.offset),
    );
    return rows.map((row) => {
      const held = (
        typeof row.held_groups === 'string' ? JSON.parse(row.held_groups) : (row.held_groups ?? [])
      ) as [string, string][];
      const groups = held
        .map(([id, displayName]) => ({ id, displayName }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return { user: toUserRecord(row), groups };
    });
  }

  async countQueriedUsers(query: UserQuery): Promise<number> {
    const args = queryArguments(query);
    let next = FIXED_QUERY_ARGUMENTS;
    const [row] = await this.sql.select(
      this.queried(
        query,
        (index) => args[index] as never,
        (value) => stablePlaceholder(this.sql.kind, args[next++], storedType(value)),
      )
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .compile(),
    );
    return Number(row?.count ?? 0);
  }

  async findUserNameClashes(
    clientId: string,
    provider: string,
    limit: number,
  ): Promise<UserRecord[]> {
    const { db } = this.sql;
    const rows = await this.sql.select(
      db
        .selectFrom('users as u')
        .select(USER_COLUMNS.map((column) => `u.${column}` as const))
        .where('u.application', '=', clientId)
        .where('u.provider', '=', provider)
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('users as v')
              .select(sql`1`.as('one'))
              .whereRef('v.application', '=', 'u.application')
              .whereRef('v.provider', '=', 'u.provider')
              .whereRef('v.identifier_folded', '=', 'u.identifier_folded')
              .whereRef('v.user_key', '<>', 'u.user_key'),
          ),
        )
        .orderBy('u.identifier_folded')
        .orderBy('u.user_key')
        .limit(limit)
        .compile(),
    );
    return rows.map(toUserRecord);
  }

  async listUsers(filter: UserFilter, page: PageQuery<UserPosition>): Promise<UserRecord[]> {
    const rows = await this.sql.select(this.#pageQuery(filter, page));
    return rows.map(toUserRecord);
  }

  /** A page of listUsers, compiled once per combination of filters (and first or later page). */
  #pageQuery(filter: UserFilter, page: PageQuery<UserPosition>): CompiledQuery<UserRow> {
    const shape = `${filterShape(filter)}${page.after === null ? '' : 'after'}`;
    let query = this.#pages.get(shape);
    if (query === undefined) {
      query = precompile((arg) => {
        let built = this.filtered(filter, arg);
        // Keyset condition in the `application = ? AND user_key > ?` form, so the engine
        // walks the primary-key range: a deep page costs what the first one does.
        if (page.after !== null) built = built.where('user_key', '>', arg<string>(AFTER));
        return built.select(USER_COLUMNS).orderBy('user_key').limit(arg<number>(LIMIT));
      });
      this.#pages.set(shape, query);
    }
    return query(...filterArguments(filter, page.after, page.limit));
  }

  async listUsersText(
    filter: UserFilter,
    page: PageQuery<UserPosition>,
  ): Promise<UserPageText | null> {
    // SQLite's JSON functions cost what building the objects in JavaScript does (bench/README.md,
    // "Lists built by the database"); pg's parsing of every column of every row does not.
    if (this.sql.kind !== 'postgres') return null;
    // One user more than the page tells whether more follow.
    const fetchedLimit = page.limit + 1;
    // The limit is written into the text, and the position read through a subquery, so that
    // PostgreSQL plans each statement once: with `limit $n` its generic plan expects a tenth of
    // the table, and with `user_key > $n` a third of it, against 101 rows when it sees the
    // values, so it planned every page anew (custom_plans in pg_prepared_statements), about a
    // fifth of the database's CPU a page (bench/README.md, "Lists from the database: plans").
    const shape = `${filterShape(filter)}${page.after === null ? '' : 'after'}:${fetchedLimit}`;
    let query = this.#textPages.get(shape);
    if (query === undefined) {
      if (this.#textPages.size >= TEXT_PAGE_SHAPES_KEPT) this.#textPages.clear();
      query = precompile((arg) => {
        let rows = this.filtered(filter, arg);
        if (page.after !== null) {
          rows = rows.where('user_key', '>', sql<string>`(select ${arg<string>(AFTER)}::text)`);
        }
        // n numbers the users in key order.
        const fetched = rows
          .select([
            ...USER_COLUMNS,
            'user_key',
            sql<number>`row_number() over (order by user_key)`.as('n'),
          ])
          .orderBy('user_key')
          .limit(sql.lit(fetchedLimit));
        const inPage = sql`u.n < ${sql.lit(fetchedLimit)}`;
        return this.sql.db.selectFrom(fetched.as('u')).select([
          sql<string>`coalesce(string_agg(${POSTGRES_USER_JSON}, ',' order by u.n) filter (where ${inPage}), '')`.as(
            'items',
          ),
          sql<number>`count(*)::int`.as('fetched'),
          // The page's last user: the largest key (COLLATE "C", the list's order). Two
          // array_aggs ordered by n sorted the page twice: 80 µs of the backend's CPU a page
          // (580–820 → 500–587 µs, in-process, 20,000 users, 5 rounds of 1,500 pages).
          sql<string | null>`max(u.user_key) filter (where ${inPage})`.as('last_key'),
          sql<boolean>`coalesce(bool_and(u.created_at >= 0 and u.created_at < ${sql.lit(FOUR_DIGIT_YEARS_END)} and u.updated_at >= 0 and u.updated_at < ${sql.lit(FOUR_DIGIT_YEARS_END)}), true)`.as(
            'representable',
          ),
        ]);
      });
      this.#textPages.set(shape, query);
    }
    const [row] = await this.sql.select(
      query(...filterArguments(filter, page.after, fetchedLimit)),
    );
    if (row === undefined || !row.representable) return null;
    return {
      items: row.items,
      count: Math.min(row.fetched, page.limit),
      last: row.last_key === null ? null : decodeUserKey(row.last_key),
      more: row.fetched > page.limit,
    };
  }

  async countUsers(filter: UserFilter): Promise<number> {
    const args = filterArguments(filter, null, 0);
    const [row] = await this.sql.select(
      this.filtered(filter, (index) => args[index] as never)
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .compile(),
    );
    return Number(row?.count ?? 0);
  }

  async replaceUser(
    next: UserRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
    options: { keepsIdentity?: boolean } = {},
  ): Promise<boolean> {
    const statement =
      options.keepsIdentity === true
        ? this.#replaceProfileStatement(next, expectedEtag)
        : this.replaceStatement(next, expectedEtag);
    const [changed] = await this.sql.write([statement], { events: events.map(toEventRow) });
    return changed === 1;
  }

  /** The UPDATE of a replace that keeps the identity (PROFILE_COLUMNS). */
  #replaceProfileStatement(next: UserRecord, expectedEtag: string): CompiledQuery {
    const row = toUserRow(next);
    return this.#replaceProfile(
      ...PROFILE_COLUMNS.map((column) => row[column]),
      row.application,
      row.id,
      expectedEtag,
      row.user_key,
    );
  }

  /** The conditional UPDATE of replaceUser, for transactions that change several rows. */
  replaceStatement(next: UserRecord, expectedEtag: string): CompiledQuery {
    const row = toUserRow(next);
    return this.#replaceUser(
      ...CHANGED_COLUMNS.map((column) => row[column]),
      row.application,
      row.id,
      expectedEtag,
    );
  }

  async deleteUser(
    identity: UserIdentity,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const [changed] = await this.sql.write(
      [
        this.sql.db
          .deleteFrom('users')
          .where('application', '=', identity.clientId)
          .where('user_key', '=', encodeUserKey(identity.provider, identity.identifier))
          .where('etag', '=', expectedEtag)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return changed === 1;
  }

  /** The users of filter.clientId matching every filter; values come from `arg` (see filterArguments). */
  private filtered(filter: UserFilter, arg: Parameter) {
    let query = this.sql.db.selectFrom('users').where('application', '=', arg<string>(CLIENT_ID));
    if (filter.provider !== null) {
      query = query
        .where('user_key', '>=', arg<string>(PROVIDER_FROM))
        .where('user_key', '<', arg<string>(PROVIDER_TO));
    }
    if (filter.email !== null) {
      query = query.where('email_normalized', '=', arg<string>(EMAIL));
    }
    if (filter.role !== null) {
      query = query.where(this.sql.flavor.jsonArrayContains('users.roles', arg<string>(ROLE)));
    }
    if (filter.scope !== null) {
      query = query.where(this.sql.flavor.jsonArrayContains('users.scopes', arg<string>(SCOPE)));
    }
    if (filter.active !== null) {
      query = query.where('active', '=', arg<number>(ACTIVE));
    }
    return query;
  }

  /**
   * The users of one provider of one application matching the predicate. The application,
   * the provider and its key range come from `arg` 0–3; the predicate's values from `bind`, in
   * order. The key range lets the primary key serve the identifier order.
   */
  private queried(query: UserQuery, arg: Parameter, bind: Bind) {
    // Placeholders SQLite's planner does not read, so the statement stays prepared.
    const text = (index: number) =>
      stablePlaceholder(this.sql.kind, arg<string>(index), 'text') as never;
    let built = this.sql.db
      .selectFrom('users')
      .where('application', '=', text(0))
      .where('provider', '=', text(1));
    // Without an equality an index serves, the primary key's range of the provider is the
    // cheapest path (and gives the order). With one, that range would lure the planner away
    // from the index: `userName eq` must be a lookup, not a walk through the provider.
    if (!hasIndexedEquality(query.predicate)) {
      built = built.where('user_key', '>=', text(2)).where('user_key', '<', text(3));
    }
    return built.where((eb) => compileUserPredicate(eb, query.predicate, this.sql.flavor, bind));
  }
}

interface UserPageTextRow {
  items: string;
  fetched: number;
  last_key: string | null;
  representable: boolean;
}

// Timestamps from the epoch to the end of year 9999 are written YYYY-MM-DDTHH:MM:SS.mmmZ (as
// the API's toTimestamp does); others take JavaScript's expanded years, so such a page is not
// built as text.
const FOUR_DIGIT_YEARS_END = Date.UTC(10_000, 0, 1);

function postgresTimestamp(column: string) {
  // Whole seconds and the milliseconds apart: a millisecond count times an interval goes
  // through a double and can come out a millisecond short.
  const millis = sql.ref(column);
  return sql`to_char(to_timestamp(${millis} / 1000) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '.' || lpad((${millis} % 1000)::text, 3, '0') || 'Z'`;
}

// A user's JSON object as the API writes it (toUserResource, then JSON.stringify): members in
// the schema's order, no spaces. to_json of text escapes as JSON.stringify does (\" \\ \b \f
// \n \r \t and \u00xx for the other control characters; PostgreSQL text holds no NUL and
// no lone surrogate); roles and scopes are stored as JSON.stringify wrote them.
const POSTGRES_USER_JSON = sql<string>`'{"id":' || to_json(u.id)::text || ',"identifier":' || to_json(u.identifier)::text || ',"provider":' || to_json(u.provider)::text || ',"name":' || to_json(u.name)::text || ',"avatar":' || coalesce(to_json(u.avatar)::text, 'null') || ',"email":' || to_json(u.email)::text || ',"locale":' || to_json(u.locale)::text || ',"roles":' || u.roles || ',"scopes":' || u.scopes || ',"active":' || (case when u.active = 1 then 'true' else 'false' end) || ',"created_at":"' || ${postgresTimestamp('u.created_at')} || '","updated_at":"' || ${postgresTimestamp('u.updated_at')} || '"}'`;

/** listUsersText's statements kept, one per filter shape and page size in use. */
const TEXT_PAGE_SHAPES_KEPT = 200;

const FIXED_QUERY_ARGUMENTS = 4;

// The application's groups a user holds (display name among its roles), as a JSON array of
// [id, display name] pairs: text on SQLite, parsed by pg on PostgreSQL. Null when the
// application has no groups: one index probe, where the pairs cost json_each over the roles
// and a probe per role (4 µs of a 30 µs lookup on a million users, SQLite).
const SQLITE_HELD_GROUPS =
  sql<string>`(case when exists (select 1 from scim_groups a where a.application = users.application) then (select json_group_array(json_array(g.id, g.display_name)) from scim_groups g where g.application = users.application and g.display_name in (select value from json_each(users.roles))) end)`.as(
    'held_groups',
  );
const POSTGRES_HELD_GROUPS =
  sql<unknown>`(case when exists (select 1 from scim_groups a where a.application = users.application) then (select coalesce(json_agg(json_build_array(g.id, g.display_name)), '[]'::json) from scim_groups g where g.application = users.application and g.display_name in (select jsonb_array_elements_text(users.roles::jsonb))) end)`.as(
    'held_groups',
  );

/** Attributes with an index (application, provider, …) or (application, id). */
const INDEXED = new Set(['identifier', 'externalId', 'id']);

/** True when the predicate requires `eq` on an indexed attribute (alone or in an AND). */
function hasIndexedEquality(predicate: UserQuery['predicate']): boolean {
  if (predicate.kind === 'compare') {
    return predicate.operator === 'eq' && INDEXED.has(predicate.attribute);
  }
  return predicate.kind === 'and' && predicate.operands.some(hasIndexedEquality);
}

/** The values `queried` binds: application, provider, the provider's key range, then the predicate's. */
function queryArguments(query: UserQuery): unknown[] {
  const range = providerKeyRange(query.provider);
  return [
    query.clientId,
    query.provider,
    range.from,
    range.to,
    ...predicateValues(query.predicate),
  ];
}

// Positions of the values a user query binds (filterArguments).
const CLIENT_ID = 0;
const PROVIDER_FROM = 1;
const PROVIDER_TO = 2;
const EMAIL = 3;
const ROLE = 4;
const SCOPE = 5;
const ACTIVE = 6;
const AFTER = 7;
const LIMIT = 8;

function filterArguments(filter: UserFilter, after: UserPosition | null, limit: number): unknown[] {
  const range = filter.provider === null ? null : providerKeyRange(filter.provider);
  return [
    filter.clientId,
    range?.from,
    range?.to,
    filter.email === null ? null : normalizeEmail(filter.email),
    filter.role,
    filter.scope,
    filter.active === null ? null : filter.active ? 1 : 0,
    after === null ? null : encodeUserKey(after.provider, after.identifier),
    limit,
  ];
}

function filterShape(filter: UserFilter): string {
  return [filter.provider, filter.email, filter.role, filter.scope, filter.active]
    .map((value) => (value === null ? '-' : '+'))
    .join('');
}
