import type { PoolStats, SchemaStatus, Store, StoreObserver } from '../store.js';
import type { SqlExecutor } from './sql-executor.js';
import { SqlApiKeyRepository } from './sql-api-keys.js';
import { SqlApplicationRepository } from './sql-applications.js';
import { SqlEventRepository } from './sql-events.js';
import { SqlConsoleSessionRepository } from './sql-console-sessions.js';
import { SqlGroupRepository } from './sql-groups.js';
import { SqlImportRepository } from './sql-imports.js';
import { SqlSettingRepository } from './sql-settings.js';
import { SqlLimitCounterRepository } from './sql-limit-counters.js';
import { SqlSigningKeyRepository } from './sql-signing-keys.js';
import { SqlStoredSecretRepository } from './sql-stored-secrets.js';
import { SqlUserRepository } from './sql-users.js';
import { SqlWebhookRepository } from './sql-webhooks.js';

/** The Store of every SQL dialect: repositories built on one dialect's executor. */
export class SqlStore implements Store {
  readonly events: SqlEventRepository;
  readonly applications: SqlApplicationRepository;
  readonly users: SqlUserRepository;
  readonly groups: SqlGroupRepository;
  readonly apiKeys: SqlApiKeyRepository;
  readonly settings: SqlSettingRepository;
  readonly limits: SqlLimitCounterRepository;
  readonly signingKeys: SqlSigningKeyRepository;
  readonly storedSecrets: SqlStoredSecretRepository;
  readonly webhooks: SqlWebhookRepository;
  readonly consoleSessions: SqlConsoleSessionRepository;
  readonly imports: SqlImportRepository;
  readonly kind: Store['kind'];

  constructor(private readonly sql: SqlExecutor) {
    this.kind = sql.kind;
    this.events = new SqlEventRepository(sql);
    this.applications = new SqlApplicationRepository(sql);
    this.users = new SqlUserRepository(sql);
    this.groups = new SqlGroupRepository(sql, this.users);
    this.apiKeys = new SqlApiKeyRepository(sql);
    this.settings = new SqlSettingRepository(sql);
    this.limits = new SqlLimitCounterRepository(sql);
    this.signingKeys = new SqlSigningKeyRepository(sql);
    this.storedSecrets = new SqlStoredSecretRepository(sql);
    this.webhooks = new SqlWebhookRepository(sql);
    this.consoleSessions = new SqlConsoleSessionRepository(sql);
    this.imports = new SqlImportRepository(sql, this.users);
  }

  ping(): Promise<void> {
    return this.sql.ping();
  }

  migrate(): Promise<void> {
    return this.sql.migrate();
  }

  schemaStatus(): Promise<SchemaStatus> {
    return this.sql.schemaStatus();
  }

  close(): Promise<void> {
    return this.sql.close();
  }

  poolStats(): PoolStats | null {
    return this.sql.poolStats?.() ?? null;
  }

  observe(observer: StoreObserver): void {
    this.sql.observe?.(observer);
  }
}
