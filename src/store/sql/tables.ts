// The relational schema as Kysely sees it, shared by every SQL dialect. sql/migrations.ts
// creates these tables, with each dialect's column types.

export interface ApplicationsTable {
  client_id: string;
  display_name: string;
  description: string;
  mode: string;
  jwt_expiration_in_minutes: number;
  /** JSON text, or null. */
  external_token_validation: string | null;
  scim_provider: string | null;
  /** JSON text of the application's authorization model, or null. */
  authorization_model: string | null;
  /** Epoch milliseconds (PostgreSQL returns BIGINT as a string, hence the union). */
  created_at: number | string;
  updated_at: number | string;
  etag: string;
}

export interface UsersTable {
  application: string;
  /** provider + U+001F + identifier: one column whose byte order is (provider, identifier). */
  user_key: string;
  provider: string;
  identifier: string;
  name: string;
  avatar: string | null;
  email: string;
  email_normalized: string;
  locale: string;
  /** JSON array text. */
  roles: string;
  scopes: string;
  /** 1 or 0. */
  active: number;
  external_id: string | null;
  /** JSON text of the record's labels, or NULL. */
  labels: string | null;
  /** The identifier with A–Z folded to a–z (case-insensitive userName lookups). */
  identifier_folded: string;
  /**
   * identifier_folded for users of the application's SCIM provider, NULL for the others: a
   * unique index on (application, scim_user_name) keeps SCIM userNames apart ignoring case.
   */
  scim_user_name: string | null;
  id: string;
  created_at: number | string;
  updated_at: number | string;
  etag: string;
}

export interface ScimGroupsTable {
  application: string;
  id: string;
  display_name: string;
  external_id: string | null;
  created_at: number | string;
  updated_at: number | string;
  etag: string;
}

export interface ApiKeysTable {
  id: string;
  name: string;
  secret_digest: string;
  roles: string;
  applications: string | null;
  created_at: number | string;
  updated_at: number | string;
  expires_at: number | string | null;
  last_used_at: number | string | null;
  previous_secret_digest: string | null;
  previous_expires_at: number | string | null;
  revoked_at: number | string | null;
}

export interface SettingsTable {
  name: string;
  value: string;
}

export interface SigningKeysTable {
  kid: string;
  generation: number;
  algorithm: string;
  /** JWK JSON text. */
  public_jwk: string;
  /** JWK JSON text of the private key (a secret), or that text sealed with IAM_SECRET_KEY. */
  private_jwk: string;
  created_at: number | string;
  activates_at: number | string;
  revoked_at: number | string | null;
}

export interface WebhooksTable {
  id: string;
  url: string;
  /** JSON array text. */
  event_types: string;
  /** JSON array text, or null (every application). */
  client_ids: string | null;
  description: string;
  /** 1 or 0. */
  enabled: number;
  disabled_reason: string | null;
  /** A secret (sealed with IAM_SECRET_KEY when set): never logged. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | string | null;
  created_at: number | string;
  updated_at: number | string;
  etag: string;
  cursor: string | null;
  generation: number;
  lease_owner: string | null;
  lease_until: number | string | null;
}

export interface WebhookDeliveriesTable {
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  first_attempt_at: number | string;
  last_attempt_at: number | string;
  next_attempt_at: number | string | null;
  /** JSON array text of the latest attempts. */
  attempt_log: string;
}

export interface EventsTable {
  /** Commit order: SQLite's AUTOINCREMENT rowid; on PostgreSQL taken from event_sequence. */
  seq: number | string;
  type: string;
  occurred_at: number | string;
  actor_type: string;
  actor_id: string | null;
  client_id: string | null;
  resource_type: string;
  /** JSON text of the resource's identifying members. */
  resource_id: string;
  /** JSON text of the changed members, or null. */
  changes: string | null;
  request_id: string | null;
}

/** PostgreSQL only: one row whose `last` is the last event seq handed out. */
export interface EventSequenceTable {
  id: number;
  last: number | string;
}

export interface ConsoleSessionsTable {
  id_digest: string;
  api_key_id: string | null;
  key_digest: string | null;
  /** JSON of ConsoleOperator, or null (a session of an API key). */
  operator: string | null;
  csrf_token: string;
  created_at: number | string;
  last_seen_at: number | string;
}

/** Console sign-ins through the OpenID provider, begun and not yet finished. */
export interface ConsoleSignInsTable {
  state_digest: string;
  browser_digest: string;
  nonce: string;
  code_verifier: string;
  created_at: number | string;
}

/** Limit counters shared by instances (failed authentications, requests per key). */
export interface LimitCountersTable {
  key: string;
  count: number;
  /** Epoch milliseconds: when the counter's fixed window ends. */
  resets_at: number | string;
}

/** A bulk import job (import-records.ts); its counts move on with each batch it writes. */
export interface ImportJobsTable {
  id: string;
  application: string;
  format: string;
  /** 1 or 0. */
  dry_run: number;
  on_conflict: string;
  status: string;
  lines_read: number;
  created_count: number;
  updated_count: number;
  unchanged_count: number;
  skipped_count: number;
  invalid_count: number;
  failure: string | null;
  started_by: string | null;
  created_at: number | string;
  updated_at: number | string;
  finished_at: number | string | null;
}

/** One error of one line of an import; `position` orders a line's errors. */
export interface ImportErrorsTable {
  job_id: string;
  line: number;
  position: number;
  pointer: string;
  detail: string;
}

export interface Tables {
  import_jobs: ImportJobsTable;
  import_errors: ImportErrorsTable;
  events: EventsTable;
  event_sequence: EventSequenceTable;
  applications: ApplicationsTable;
  users: UsersTable;
  scim_groups: ScimGroupsTable;
  api_keys: ApiKeysTable;
  settings: SettingsTable;
  signing_keys: SigningKeysTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  console_sessions: ConsoleSessionsTable;
  console_sign_ins: ConsoleSignInsTable;
  limit_counters: LimitCountersTable;
}

// U+001F sorts below every character a provider may contain ('-' is the smallest), so the
// byte order of user_key equals the byte order of the pair (provider, identifier), and one
// provider's users form the contiguous range [provider + U+001F, provider + U+0020).
// Identifiers never contain control characters, so the encoding is also unambiguous.
const SEPARATOR = '\u001f';
const AFTER_SEPARATOR = '\u0020';

export function encodeUserKey(provider: string, identifier: string): string {
  return provider + SEPARATOR + identifier;
}

/** encodeUserKey's provider and identifier (a provider label holds no separator). */
export function decodeUserKey(key: string): { provider: string; identifier: string } {
  const at = key.indexOf(SEPARATOR);
  return { provider: key.slice(0, at), identifier: key.slice(at + 1) };
}

export function providerKeyRange(provider: string): { from: string; to: string } {
  return { from: provider + SEPARATOR, to: provider + AFTER_SEPARATOR };
}
