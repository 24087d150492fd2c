import type { NewEvent, SettingRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { toEventRow } from './rows.js';

export class SqlSettingRepository implements SettingRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async getOrCreateSetting(name: string, initial: string): Promise<string> {
    await this.sql.write([
      this.sql.db
        .insertInto('settings')
        .values({ name, value: initial })
        .onConflict((oc) => oc.column('name').doNothing())
        .compile(),
    ]);
    const value = await this.findSetting(name);
    if (value === undefined) throw new Error(`setting ${name} vanished after it was written`);
    return value;
  }

  async findSetting(name: string): Promise<string | undefined> {
    const [row] = await this.sql.select(
      this.sql.db.selectFrom('settings').select('value').where('name', '=', name).compile(),
    );
    return row?.value;
  }

  async changeSetting(name: string, value: string, events: readonly NewEvent[]): Promise<boolean> {
    const { db } = this.sql;
    // A conditional upsert: a row that has this value already is not touched, so its event is
    // not written either (an event goes with a write that changed a row).
    const [changed] = await this.sql.write(
      [
        db
          .insertInto('settings')
          .values({ name, value })
          .onConflict((oc) =>
            oc
              .column('name')
              .doUpdateSet((eb) => ({ value: eb.ref('excluded.value') }))
              .where('settings.value', '!=', value),
          )
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return (changed ?? 0) > 0;
  }

  async putSetting(name: string, value: string): Promise<void> {
    await this.sql.write([
      this.sql.db
        .insertInto('settings')
        .values({ name, value })
        .onConflict((oc) =>
          oc.column('name').doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })),
        )
        .compile(),
    ]);
  }
}
