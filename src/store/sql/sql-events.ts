import type { EventFilter, EventRecord, EventRepository, PageQuery } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { parseEventId, toEventId, toEventRecord } from './rows.js';

export class SqlEventRepository implements EventRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async listEvents(filter: EventFilter, page: PageQuery<string>): Promise<EventRecord[]> {
    const query = await this.#matching(filter);
    if (query === null) return [];
    const after = page.after === null ? null : (parseEventId(page.after) ?? 0);
    const rows = await this.sql.select(
      (after === null ? query : query.where('seq', '>', after))
        .orderBy('seq')
        .limit(page.limit)
        .compile(),
    );
    return rows.map(toEventRecord);
  }

  async listEventsNewestFirst(
    filter: EventFilter,
    page: { before: string | null; limit: number },
  ): Promise<EventRecord[]> {
    const query = await this.#matching(filter);
    if (query === null) return [];
    const before = page.before === null ? null : (parseEventId(page.before) ?? 0);
    const rows = await this.sql.select(
      (before === null ? query : query.where('seq', '<', before))
        .orderBy('seq', 'desc')
        .limit(page.limit)
        .compile(),
    );
    return rows.map(toEventRecord);
  }

  async findEvent(id: string): Promise<EventRecord | undefined> {
    const seq = parseEventId(id);
    if (seq === undefined) return undefined;
    await this.sql.sequenceEvents?.();
    const rows = await this.sql.select(
      this.sql.db.selectFrom('events').selectAll().where('seq', '=', seq).compile(),
    );
    return rows[0] && toEventRecord(rows[0]);
  }

  /** The events the filter lets through, unordered; null when it lets none through. */
  async #matching(filter: EventFilter) {
    if (filter.visibleClientIds?.length === 0 || filter.types?.length === 0) return null;
    await this.sql.sequenceEvents?.();
    let query = this.sql.db.selectFrom('events').selectAll();
    if (filter.visibleClientIds !== null) {
      query = query.where('client_id', 'in', [...filter.visibleClientIds]);
    }
    if (filter.clientId !== null) query = query.where('client_id', '=', filter.clientId);
    if (filter.actorId !== null) query = query.where('actor_id', '=', filter.actorId);
    if (filter.resourceType !== null) {
      query = query.where('resource_type', '=', filter.resourceType);
    }
    const resourceId = filter.resourceId ?? null;
    if (resourceId !== null) {
      // resource_id is the JSON text of the resource's identifying members, written with `id`
      // first wherever a resource has one (modules/changes.ts): `{"id":"<id>"` followed by `,`
      // or `}`, so the closing quote keeps a longer id from matching. Compared with substr, the
      // same on both databases, rather than each one's JSON functions.
      const prefix = `{"id":${JSON.stringify(resourceId)}`;
      query = query.where((eb) =>
        eb(eb.fn<string>('substr', ['resource_id', eb.val(1), eb.val(prefix.length)]), '=', prefix),
      );
    }
    if (filter.since !== null) query = query.where('occurred_at', '>=', filter.since);
    if (filter.until !== null) query = query.where('occurred_at', '<', filter.until);
    const types = filter.types;
    if (types !== null) {
      // `user.*` arrives as the prefix `user.`: compared with substr, not LIKE, whose `_`
      // would match any character (api_key.*).
      query = query.where((eb) =>
        eb.or(
          types.map((type) =>
            type.endsWith('.')
              ? eb(eb.fn<string>('substr', ['type', eb.val(1), eb.val(type.length)]), '=', type)
              : eb('type', '=', type),
          ),
        ),
      );
    }
    return query;
  }

  async lastEventId(): Promise<string | null> {
    await this.sql.sequenceEvents?.();
    const [row] = await this.sql.select(
      this.sql.db
        .selectFrom('events')
        .select((eb) => eb.fn.max('seq').as('last'))
        .compile(),
    );
    return row?.last === null || row?.last === undefined ? null : toEventId(row.last);
  }

  watchEvents(onCommitted: () => void): () => void {
    return this.sql.watchEvents(onCommitted);
  }

  async pruneEvents(before: number, limit: number): Promise<number> {
    // Every event committed so far is in events (not still pending) before any is judged old.
    await this.sql.sequenceEvents?.();
    const { db } = this.sql;
    const [deleted] = await this.sql.write([
      db
        .deleteFrom('events')
        .where('seq', 'in', (eb) =>
          eb
            .selectFrom('events')
            .select('seq')
            .where('occurred_at', '<', before)
            .orderBy('seq')
            .limit(limit),
        )
        .compile(),
    ]);
    return deleted ?? 0;
  }
}
