// The reads of authorization decisions (SqlUserRepository hands them here): an application with
// the users a batch of decisions names, in one statement whatever the batch's size, and the
// active users a grant admits, in the users' list order.

import { type CompiledQuery, sql } from 'kysely';
import type {
  ApplicationRecord,
  DecidingUserRecord,
  PageQuery,
  UserGrant,
  UserPosition,
  UserRecord,
  UserRefs,
} from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { type Parameter, precompile } from './precompiled.js';
import {
  USER_RECORD_COLUMNS,
  type UserRow,
  normalizeEmail,
  parseStringArray,
  toApplicationRecord,
  toUserRecord,
} from './rows.js';
import { stablePlaceholder } from './sql-user-query.js';
import { type ApplicationsTable, encodeUserKey } from './tables.js';

/** Distinct statement shapes kept compiled; past this many the cache starts over. */
const SHAPES_KEPT = 200;
/** Application records kept for their next statement; past this many the memory starts over. */
const APPLICATIONS_KEPT = 1000;

/** The columns of an application's row (ApplicationsTable). */
const APPLICATION_COLUMNS = [
  'client_id',
  'display_name',
  'description',
  'mode',
  'jwt_expiration_in_minutes',
  'external_token_validation',
  'scim_provider',
  'authorization_model',
  'created_at',
  'updated_at',
  'etag',
] as const satisfies readonly (keyof ApplicationsTable)[];

/** The value, and every object and array in it, frozen (a record shared between callers). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/**
 * Application records by client_id, each kept while its version (etag) is the one last read,
 * so a read that finds the same version does not parse the row's JSON columns again. The
 * version is read in the same statement as what the record is used with, so a change made
 * through any instance is seen by the very next read. Records are shared between callers, so
 * they are frozen, JSON members included.
 */
export class ApplicationRecords {
  readonly #kept = new Map<string, ApplicationRecord>();

  /** The record kept for this version of the application, or undefined. */
  current(clientId: string, etag: string): ApplicationRecord | undefined {
    const kept = this.#kept.get(clientId);
    return kept !== undefined && kept.etag === etag ? kept : undefined;
  }

  /** The record of this row: the kept one when its version is the same, else made and kept. */
  of(row: Parameters<typeof toApplicationRecord>[0]): ApplicationRecord {
    const kept = this.current(row.client_id, row.etag);
    if (kept !== undefined) return kept;
    const application = deepFreeze(toApplicationRecord(row));
    if (this.#kept.size >= APPLICATIONS_KEPT) this.#kept.clear();
    this.#kept.set(row.client_id, application);
    return application;
  }
}

type UserAlias = `user_${(typeof USER_RECORD_COLUMNS)[number]}`;
/** Each user column and the name it has in the joined row. */
const ALIASES = USER_RECORD_COLUMNS.map(
  (column) => [column, `user_${column}` satisfies UserAlias] as const,
);

/**
 * The user columns each read takes: the whole record, or what a decision looks at (a batch of
 * 100 then reads 6 values a user instead of 16).
 */
const USER_COLUMNS = {
  records: USER_RECORD_COLUMNS,
  deciding: ['id', 'provider', 'identifier', 'email', 'roles', 'active'],
} as const satisfies Record<string, readonly (typeof USER_RECORD_COLUMNS)[number][]>;

export class SqlUserDecisionReads {
  /** Compiled by shape: how many identities and how many ids the statement names. */
  readonly #withUsers = new Map<string, (...args: unknown[]) => CompiledQuery>();
  constructor(
    private readonly sql: SqlExecutor,
    /** Shared with the token read (SqlUserRepository), which keeps records the same way. */
    private readonly applications: ApplicationRecords = new ApplicationRecords(),
  ) {}

  async findApplicationWithUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: UserRecord[] } | undefined> {
    return this.read(clientId, refs, 'records', (row) => {
      const user: Record<string, unknown> = {};
      for (const [column, alias] of ALIASES) user[column] = row[alias];
      return toUserRecord(user as unknown as UserRow);
    });
  }

  async findApplicationWithDecidingUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: DecidingUserRecord[] } | undefined> {
    return this.read(clientId, refs, 'deciding', (row) => ({
      id: row.user_id as string,
      provider: row.user_provider as string,
      identifier: row.user_identifier as string,
      email: row.user_email as string,
      roles: parseStringArray(row.user_roles as string),
      active: row.user_active === 1,
    }));
  }

  /** The application and the users `refs` names, each made by `toUser` from its row. */
  private async read<User>(
    clientId: string,
    refs: UserRefs,
    columns: keyof typeof USER_COLUMNS,
    toUser: (row: Record<string, unknown>) => User,
  ): Promise<{ application: ApplicationRecord; users: User[] } | undefined> {
    const keys = [
      ...new Set(refs.identities.map((ref) => encodeUserKey(ref.provider, ref.identifier))),
    ];
    const ids = [...new Set(refs.ids)];
    const shape = `${columns}|${keys.length}|${ids.length}`;
    let compiled = this.#withUsers.get(shape);
    if (compiled === undefined) {
      compiled = precompile((arg) =>
        this.withUsers(arg, USER_COLUMNS[columns], keys.length, ids.length),
      );
      if (this.#withUsers.size >= SHAPES_KEPT) this.#withUsers.clear();
      this.#withUsers.set(shape, compiled);
    }
    const rows = (await this.sql.select(compiled(clientId, ...keys, ...ids))) as (Record<
      string,
      unknown
    > &
      Parameters<typeof toApplicationRecord>[0])[];
    let application: ApplicationRecord | undefined;
    const users: User[] = [];
    const seen = new Set<unknown>();
    for (const row of rows) {
      // The application's row is the one whose client_id is set; a user's row has it null.
      if (row.client_id !== null) {
        application = this.applicationOf(row);
        continue;
      }
      // A user named both by identity and by id comes from both lookups: kept once.
      if (seen.has(row.user_id)) continue;
      seen.add(row.user_id);
      users.push(toUser(row));
    }
    return application === undefined ? undefined : { application, users };
  }

  /** The application's record from its row (ApplicationRecords). */
  private applicationOf(row: Parameters<typeof toApplicationRecord>[0]): ApplicationRecord {
    return this.applications.of(row);
  }

  /**
   * The application's row, then one row per user found: the users whose key or id is among
   * those bound from slot 1 on (`keys` user keys, then `ids` ids), from one lookup per index,
   * the primary key (application, user_key) and users_id (application, id): an OR of the two
   * is, to SQLite's planner, a walk through all the application's users. The application's
   * columns are null in the users' rows (and the users' in its row): read once per statement,
   * not once per user (a batch of 100 read them 100 times).
   */
  private withUsers(
    arg: Parameter,
    columns: readonly (typeof USER_RECORD_COLUMNS)[number][],
    keys: number,
    ids: number,
  ) {
    const { db } = this.sql;
    const text = (index: number) => stablePlaceholder(this.sql.kind, arg(index), 'text') as never;
    const keySlots = Array.from({ length: keys }, (_, index) => text(1 + index));
    const idSlots = Array.from({ length: ids }, (_, index) => text(1 + keys + index));
    const noApplication = APPLICATION_COLUMNS.map((column) => sql<null>`null`.as(column));
    const lookups = [
      ...(keySlots.length === 0 ? [] : [['user_key', keySlots] as const]),
      ...(idSlots.length === 0 ? [] : [['id', idSlots] as const]),
    ].map(([column, slots]) =>
      db
        .selectFrom('users')
        .select([
          ...noApplication,
          ...ALIASES.map(
            ([user, alias]) => `${user} as ${alias}` as `${typeof user} as ${UserAlias}`,
          ),
        ])
        .where('application', '=', text(0))
        .where(column, 'in', slots),
    );
    const application = db
      .selectFrom('applications')
      .select([...APPLICATION_COLUMNS, ...ALIASES.map(([, alias]) => sql<null>`null`.as(alias))])
      .where('client_id', '=', text(0));
    // UNION ALL, duplicates dropped by the caller: SQLite's UNION sorts the rows on every
    // column to find them, 5.6 ms for 100 users against 0.3 ms (issue 31's batch bench).
    return lookups.reduce(
      (union, lookup) => union.unionAll(lookup as never),
      application as typeof application,
    );
  }

  async listGrantedUsers(grant: UserGrant, page: PageQuery<UserPosition>): Promise<UserRecord[]> {
    const owner = grant.owner;
    if (grant.roles.length === 0 && (owner === null || owner.roles.length === 0)) return [];
    const { db, flavor } = this.sql;
    let query = db
      .selectFrom('users')
      .select(USER_RECORD_COLUMNS)
      .where('application', '=', grant.clientId)
      .where('active', '=', 1)
      .where((eb) => {
        const holdsAny = (roles: readonly string[]) =>
          eb.or(roles.map((role) => flavor.jsonArrayContains('users.roles', role)));
        const admitted: ReturnType<typeof holdsAny>[] = [];
        if (grant.roles.length > 0) admitted.push(holdsAny(grant.roles));
        if (owner !== null && owner.roles.length > 0) {
          const attribute =
            owner.attribute === 'email'
              ? eb('email_normalized', '=', normalizeEmail(owner.value))
              : eb(owner.attribute, '=', owner.value);
          admitted.push(eb.and([attribute, holdsAny(owner.roles)]));
        }
        return eb.or(admitted);
      });
    // The primary key's order, as listUsers: a later page starts where the last one ended.
    if (page.after !== null) {
      query = query.where(
        'user_key',
        '>',
        encodeUserKey(page.after.provider, page.after.identifier),
      );
    }
    const rows = await this.sql.select(query.orderBy('user_key').limit(page.limit).compile());
    return rows.map(toUserRecord);
  }
}
