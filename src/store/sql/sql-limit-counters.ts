import type { LimitCount, LimitCounterRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { toMillis } from './rows.js';

export class SqlLimitCounterRepository implements LimitCounterRepository {
  constructor(private readonly sql: SqlExecutor) {}

  // One upsert: the database serialises additions to one row, so each caller gets the count
  // its own addition made, on SQLite, PostgreSQL and its distributed cousins alike.
  async addToCounter(
    key: string,
    points: number,
    now: number,
    windowMs: number,
  ): Promise<LimitCount> {
    const [row] = await this.sql.writeReturning(
      this.sql.db
        .insertInto('limit_counters')
        .values({ key, count: points, resets_at: now + windowMs })
        .onConflict((oc) =>
          oc.column('key').doUpdateSet((eb) => {
            const ended = eb('limit_counters.resets_at', '<=', now);
            return {
              count: eb
                .case()
                .when(ended)
                .then(eb.ref('excluded.count'))
                .else(eb('limit_counters.count', '+', eb.ref('excluded.count')))
                .end(),
              resets_at: eb
                .case()
                .when(ended)
                .then(eb.ref('excluded.resets_at'))
                .else(eb.ref('limit_counters.resets_at'))
                .end(),
            };
          }),
        )
        .returning(['count', 'resets_at'])
        .compile(),
    );
    if (row === undefined) throw new Error(`the counter ${key} returned no row`);
    return { count: Number(row.count), resetsAt: toMillis(row.resets_at) };
  }

  async pruneCounters(before: number, limit: number): Promise<number> {
    const { db } = this.sql;
    const [deleted] = await this.sql.write([
      db
        .deleteFrom('limit_counters')
        .where('key', 'in', (eb) =>
          eb
            .selectFrom('limit_counters')
            .select('key')
            .where('resets_at', '<', before)
            .orderBy('resets_at')
            .limit(limit),
        )
        .compile(),
    ]);
    return deleted ?? 0;
  }
}
