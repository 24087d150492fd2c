import type { SettingRepository } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';

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
