// The reads of authorization decisions (SqlUserRepository hands them here): an application with
// the users a batch of decisions names, in one statement whatever the batch's size, and the
// active users a grant admits, in the users' list order.

import { type CompiledQuery, sql } from 'kysely';
import type {
  ApplicationRecord,
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
  toApplicationRecord,
  toUserRecord,
} from './rows.js';
import { stablePlaceholder } from './sql-user-query.js';
import { encodeUserKey } from './tables.js';

/** Distinct statement shapes kept compiled; past this many the cache starts over. */
const SHAPES_KEPT = 200;

type UserAlias = `user_${(typeof USER_RECORD_COLUMNS)[number]}`;
/** Each user column and the name it has in the joined row. */
const ALIASES = USER_RECORD_COLUMNS.map(
  (column) => [column, `user_${column}` satisfies UserAlias] as const,
);

export class SqlUserDecisionReads {
  /** Compiled by shape: how many identities and how many ids the statement names. */
  readonly #withUsers = new Map<string, (...args: unknown[]) => CompiledQuery>();

  constructor(private readonly sql: SqlExecutor) {}

  async findApplicationWithUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: UserRecord[] } | undefined> {
    const keys = [
      ...new Set(refs.identities.map((ref) => encodeUserKey(ref.provider, ref.identifier))),
    ];
    const ids = [...new Set(refs.ids)];
    const shape = `${keys.length}|${ids.length}`;
    let compiled = this.#withUsers.get(shape);
    if (compiled === undefined) {
      compiled = precompile((arg) => this.withUsers(arg, keys.length, ids.length));
      if (this.#withUsers.size >= SHAPES_KEPT) this.#withUsers.clear();
      this.#withUsers.set(shape, compiled);
    }
    const rows = (await this.sql.select(compiled(clientId, ...keys, ...ids))) as (Record<
      string,
      unknown
    > &
      Parameters<typeof toApplicationRecord>[0])[];
    const [first] = rows;
    if (first === undefined) return undefined;
    const users: UserRecord[] = [];
    const seen = new Set<unknown>();
    for (const row of rows) {
      // A user named both by identity and by id comes from both lookups: kept once.
      if (row.user_id === null || seen.has(row.user_id)) continue;
      seen.add(row.user_id);
      const user: Record<string, unknown> = {};
      for (const [column, alias] of ALIASES) user[column] = row[alias];
      users.push(toUserRecord(user as unknown as UserRow));
    }
    return { application: toApplicationRecord(first), users };
  }

  /**
   * One row per user found (one row with null user columns when none is): the application's
   * row joined with its users whose key or id is among those bound from slot 1 on (`keys` user
   * keys, then `ids` ids). The users come from a union of one lookup per index, the primary key
   * (application, user_key) and users_id (application, id): an OR of the two in the join is,
   * to SQLite's planner, a walk through all the application's users.
   */
  private withUsers(arg: Parameter, keys: number, ids: number) {
    const { db } = this.sql;
    const text = (index: number) => stablePlaceholder(this.sql.kind, arg(index), 'text') as never;
    const keySlots = Array.from({ length: keys }, (_, index) => text(1 + index));
    const idSlots = Array.from({ length: ids }, (_, index) => text(1 + keys + index));
    const lookups = [
      ...(keySlots.length === 0 ? [] : [['user_key', keySlots] as const]),
      ...(idSlots.length === 0 ? [] : [['id', idSlots] as const]),
    ].map(([column, slots]) =>
      db
        .selectFrom('users')
        .select(USER_RECORD_COLUMNS)
        .where('application', '=', text(0))
        .where(column, 'in', slots),
    );
    const query = db.selectFrom('applications').selectAll('applications');
    const [first, ...others] = lookups;
    if (first === undefined) {
      return query
        .select(USER_RECORD_COLUMNS.map((column) => sql<null>`null`.as(`user_${column}`)))
        .where('applications.client_id', '=', text(0));
    }
    // UNION ALL, duplicates dropped by the caller: SQLite's UNION sorts the rows on every
    // column to find them, 5.6 ms for 100 users against 0.3 ms (issue 31's batch bench).
    const found = others.reduce((union, lookup) => union.unionAll(lookup), first).as('found');
    return query
      .leftJoin(found, (join) => join.onTrue())
      .select(
        USER_RECORD_COLUMNS.map(
          (column) =>
            `found.${column} as user_${column}` as `found.${typeof column} as ${UserAlias}`,
        ),
      )
      .where('applications.client_id', '=', text(0));
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
