/**
 * The PostgreSQL pool's defaults (IAM_DB_*), apart from the store so that reading the
 * configuration does not load `pg` and the PostgreSQL store on SQLite.
 */
export const POSTGRES_DEFAULTS = {
  poolSize: 10,
  connectTimeoutMs: 2000,
  poolWaitMs: 10_000,
  statementTimeoutMs: 2000,
} as const;
