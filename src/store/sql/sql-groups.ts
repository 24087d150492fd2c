import type { CompiledQuery, Selectable } from 'kysely';
import type { ScimGroupsTable } from './tables.js';
import { ConditionFailedError } from '../errors.js';
import type { GroupRecord, GroupRepository, NewEvent, UserChange } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import type { SqlUserRepository } from './sql-users.js';
import { precompile } from './precompiled.js';
import { stablePlaceholder } from './sql-user-query.js';
import { toEventRow, toGroupRecord, toGroupRow } from './rows.js';

export class SqlGroupRepository implements GroupRepository {
  #listGroups: ((...args: unknown[]) => CompiledQuery<Selectable<ScimGroupsTable>>) | undefined;

  constructor(
    private readonly sql: SqlExecutor,
    private readonly users: SqlUserRepository,
  ) {}

  insertGroup(
    group: GroupRecord,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean> {
    return this.writeWithMembers(
      this.sql.db.insertInto('scim_groups').values(toGroupRow(group)).compile(),
      members,
      events,
    );
  }

  async findGroup(clientId: string, id: string): Promise<GroupRecord | undefined> {
    const rows = await this.sql.select(
      this.sql.db
        .selectFrom('scim_groups')
        .selectAll()
        .where('application', '=', clientId)
        .where('id', '=', id)
        .compile(),
    );
    return rows[0] && toGroupRecord(rows[0]);
  }

  async listGroups(clientId: string): Promise<GroupRecord[]> {
    // Read on every SCIM user response: compiled once, with a placeholder SQLite keeps prepared.
    this.#listGroups ??= precompile((arg) =>
      this.sql.db
        .selectFrom('scim_groups')
        .selectAll()
        .where('application', '=', stablePlaceholder(this.sql.kind, arg(0), 'text') as never)
        .orderBy('id'),
    );
    const rows = await this.sql.select(this.#listGroups(clientId));
    return rows.map(toGroupRecord);
  }

  replaceGroup(
    next: GroupRecord,
    expectedEtag: string,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const { application, id, created_at: _createdAt, ...changes } = toGroupRow(next);
    return this.writeWithMembers(
      this.sql.db
        .updateTable('scim_groups')
        .set(changes)
        .where('application', '=', application)
        .where('id', '=', id)
        .where('etag', '=', expectedEtag)
        .compile(),
      members,
      events,
    );
  }

  deleteGroup(
    group: GroupRecord,
    expectedEtag: string,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean> {
    return this.writeWithMembers(
      this.sql.db
        .deleteFrom('scim_groups')
        .where('application', '=', group.clientId)
        .where('id', '=', group.id)
        .where('etag', '=', expectedEtag)
        .compile(),
      members,
      events,
    );
  }

  /** The group's conditional write and its members', all in one transaction or none. */
  private async writeWithMembers(
    groupStatement: CompiledQuery,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const statements = [
      groupStatement,
      ...members.map((change) => this.users.replaceStatement(change.next, change.expectedEtag)),
    ];
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
