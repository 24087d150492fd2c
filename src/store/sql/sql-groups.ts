import type { CompiledQuery, Selectable } from 'kysely';
import type { ApplicationsTable, ScimGroupsTable } from './tables.js';
import { ConditionFailedError } from '../errors.js';
import type {
  ApplicationRecord,
  GroupRecord,
  GroupRepository,
  NewEvent,
  UserChange,
} from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import type { SqlUserRepository } from './sql-users.js';
import { precompile } from './precompiled.js';
import { stablePlaceholder } from './sql-user-query.js';
import { toApplicationRecord, toEventRow, toGroupRecord, toGroupRow } from './rows.js';

type ApplicationWithGroupRow = Selectable<ApplicationsTable> & {
  group_id: string | null;
  group_display_name: string | null;
  group_external_id: string | null;
  group_created_at: number | string | null;
  group_updated_at: number | string | null;
  group_etag: string | null;
};

export class SqlGroupRepository implements GroupRepository {
  #applicationWithGroups:
    ((...args: unknown[]) => CompiledQuery<ApplicationWithGroupRow>) | undefined;
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

  async findApplicationWithGroups(
    clientId: string,
  ): Promise<{ application: ApplicationRecord; groups: GroupRecord[] } | undefined> {
    // One row per group (one row with null group columns when there is none).
    this.#applicationWithGroups ??= precompile((arg) =>
      this.sql.db
        .selectFrom('applications')
        .leftJoin('scim_groups', 'scim_groups.application', 'applications.client_id')
        .selectAll('applications')
        .select([
          'scim_groups.id as group_id',
          'scim_groups.display_name as group_display_name',
          'scim_groups.external_id as group_external_id',
          'scim_groups.created_at as group_created_at',
          'scim_groups.updated_at as group_updated_at',
          'scim_groups.etag as group_etag',
        ])
        .where(
          'applications.client_id',
          '=',
          stablePlaceholder(this.sql.kind, arg(0), 'text') as never,
        )
        .orderBy('scim_groups.id'),
    );
    const rows = await this.sql.select(this.#applicationWithGroups(clientId));
    const [first] = rows;
    if (first === undefined) return undefined;
    const groups: GroupRecord[] = [];
    for (const row of rows) {
      if (row.group_id === null) continue;
      groups.push(
        toGroupRecord({
          application: row.client_id,
          id: row.group_id,
          display_name: row.group_display_name!,
          external_id: row.group_external_id,
          created_at: row.group_created_at!,
          updated_at: row.group_updated_at!,
          etag: row.group_etag!,
        }),
      );
    }
    return { application: toApplicationRecord(first), groups };
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
