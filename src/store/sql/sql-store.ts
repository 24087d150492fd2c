import type { SettingRepository, Store } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { SqlApiKeyRepository } from './sql-api-keys.js';
import { SqlApplicationRepository } from './sql-applications.js';
import { SqlUserRepository } from './sql-users.js';

/** The Store of every SQL dialect: repositories built on one dialect's executor. */
export class SqlStore implements Store {
  readonly applications: SqlApplicationRepository;
  readonly users: SqlUserRepository;
  readonly apiKeys: SqlApiKeyRepository;
  readonly settings: SettingRepository;
  readonly kind: Store['kind'];

  constructor(private readonly sql: SqlExecutor) {
    this.kind = sql.kind;
    this.applications = new SqlApplicationRepository(sql);
    this.users = new SqlUserRepository(sql);
    this.apiKeys = new SqlApiKeyRepository(sql);
    this.settings = {
      getOrCreateSetting: (name, initial) => this.getOrCreateSetting(name, initial),
    };
  }

  ping(): Promise<void> {
    return this.sql.ping();
  }

  migrate(): Promise<void> {
    return this.sql.migrate();
  }

  close(): Promise<void> {
    return this.sql.close();
  }

  private async getOrCreateSetting(name: string, initial: string): Promise<string> {
    const { db } = this.sql;
    await this.sql.write([
      db
        .insertInto('settings')
        .values({ name, value: initial })
        .onConflict((oc) => oc.column('name').doNothing())
        .compile(),
    ]);
    const [row] = await this.sql.select(
      db.selectFrom('settings').select('value').where('name', '=', name).compile(),
    );
    if (!row) throw new Error(`setting ${name} vanished after it was written`);
    return row.value;
  }
}
