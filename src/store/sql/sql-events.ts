import type { EventFilter, EventRecord, EventRepository, PageQuery } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { parseEventId, toEventId, toEventRecord } from './rows.js';

export class SqlEventRepository implements EventRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async listEvents(filter: EventFilter, page: PageQuery<string>): Promise<EventRecord[]> {
    if (filter.visibleClientIds?.length === 0 || filter.types?.length === 0) return [];
    await this.sql.sequenceEvents?.();
    let query = this.sql.db.selectFrom('events').selectAll();
    if (page.after !== null) query = query.where('seq', '>', parseEventId(page.after) ?? 0);
    if (filter.visibleClientIds !== null) {
      query = query.where('client_id', 'in', [...filter.visibleClientIds]);
    }
    if (filter.clientId !== null) query = query.where('client_id', '=', filter.clientId);
    if (filter.actorId !== null) query = query.where('actor_id', '=', filter.actorId);
    if (filter.resourceType !== null) {
      query = query.where('resource_type', '=', filter.resourceType);
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
    const rows = await this.sql.select(query.orderBy('seq').limit(page.limit).compile());
    return rows.map(toEventRecord);
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
