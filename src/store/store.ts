// The storage seam of Tessera. Modules depend on these interfaces only; each backend
// (sqlite/, postgres/) implements them and is run by the same contract suite
// (store.contract.ts). Records are the domain's shape, not the wire's: timestamps are
// epoch milliseconds and `etag` is the opaque version token a conditional write compares.
//
// Error contract shared by every method:
// - DuplicateError: a unique key already exists (client_id, user identity, key digest).
// - MissingParentError: the application a user or group belongs to does not exist.
// - StoreUnavailableError: the database cannot answer now (gone, busy, full, read-only).
//
// Every write method takes, as its last argument, the events that record its change (the
// audit trail). They are written in the write's own transaction, and only when the write
// changes what it was asked to: a write that fails or finds a version moved on records none.

import type { EventRepository, NewEvent } from './event-records.js';
import type {
  ImportCounts,
  ImportErrorPosition,
  ImportErrorRecord,
  ImportJobRecord,
  ImportStatus,
} from './import-records.js';
import type { PageQuery } from './page-query.js';
import type { UserPredicate } from './user-predicate.js';
import type { WebhookRepository } from './webhook-records.js';

export type * from './event-records.js';
export type * from './import-records.js';
export type * from './page-query.js';
export type * from './webhook-records.js';

export type ApplicationMode = 'internal' | 'external';

export interface ApplicationRecord {
  clientId: string;
  displayName: string;
  description: string;
  mode: ApplicationMode;
  jwtExpirationInMinutes: number;
  /** Any JSON object, kept exactly as given; null when unset. */
  externalTokenValidation: Record<string, unknown> | null;
  /** The provider label of the users a SCIM client provisions; null: SCIM is off. */
  scimProvider: string | null;
  /**
   * Who may take which action (authorization decisions): a JSON object the services check
   * against the authorization model before every write, kept exactly as given; null when unset.
   */
  authorization: Record<string, unknown> | null;
  createdAt: number;
  updatedAt: number;
  etag: string;
}

export interface UserIdentity {
  clientId: string;
  provider: string;
  identifier: string;
}

/** The `type` and `primary` a client gave one value of a user (SCIM's emails, photos). */
export interface ValueLabel {
  type?: string;
  primary?: boolean;
}

/** The labels of a user's e-mail address and avatar, each as its client sent it. */
export interface UserLabels {
  email?: ValueLabel;
  avatar?: ValueLabel;
}

export interface UserRecord extends UserIdentity {
  /** Immutable and unique within the application; kept when the identifier is renamed. */
  id: string;
  name: string;
  avatar: string | null;
  email: string;
  locale: string;
  roles: string[];
  scopes: string[];
  /** Inactive users are kept and listed, but get no access tokens. */
  active: boolean;
  /** The id a provisioning client (SCIM) keeps for this user; null when none was given. */
  externalId: string | null;
  /**
   * How a provisioning client (SCIM) labelled the e-mail address and the avatar (their `type`
   * and `primary`), kept to be returned as sent; undefined or null when none did.
   */
  labels?: UserLabels | null;
  createdAt: number;
  updatedAt: number;
  etag: string;
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  /** Hex SHA-256 of the secret; the secret itself is never stored. */
  secretDigest: string;
  roles: string[];
  /** The client_ids the key is restricted to; null means every application. */
  applications: string[] | null;
  createdAt: number;
  /** Changes when the key's grants or secret change, or when it is revoked. */
  updatedAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
  /** Hex SHA-256 of the secret a rotation replaced, or null; it works until previousExpiresAt. */
  previousSecretDigest: string | null;
  previousExpiresAt: number | null;
  /** When the key was revoked; a revoked key is kept (for the audit trail) and never works again. */
  revokedAt: number | null;
}

export interface ApiKeyFilter {
  /** Also revoked keys. */
  includeRevoked: boolean;
}

export interface ApiKeySecretChange {
  /** The digest the key must still have: a concurrent rotation makes this one fail. */
  expectedDigest: string;
  secretDigest: string;
  /** Until when the replaced secret keeps working. */
  previousExpiresAt: number;
  updatedAt: number;
}

export interface ApplicationFilter {
  /** When set, only these client_ids are visible (an API key's restriction). */
  clientIds: readonly string[] | null;
  /** When set, only client_ids that start with it (the console's search). */
  clientIdPrefix?: string | null;
}

export interface UserFilter {
  clientId: string;
  provider: string | null;
  /** Compared case-insensitively (Unicode lower case). */
  email: string | null;
  role: string | null;
  scope: string | null;
  active: boolean | null;
}

/** A page of users as JSON text (UserRepository.listUsersText). */
export interface UserPageText {
  /** The users' JSON objects joined by commas: the inside of the page's `items` array. */
  items: string;
  /** How many users `items` holds. */
  count: number;
  /** The position of its last user; null when empty. */
  last: UserPosition | null;
  /** True when more users follow the page. */
  more: boolean;
}

export interface UserPosition {
  provider: string;
  identifier: string;
}

/** Users of one provider in one application that match a predicate (SCIM queries). */
export interface UserQuery {
  clientId: string;
  provider: string;
  predicate: UserPredicate;
}

/** A page of a UserQuery, in identifier byte order: after a position, or skipping `offset` rows. */
export type UserQueryPage =
  | { after: string | null; offset?: undefined; limit: number }
  | { after?: undefined; offset: number; limit: number };

/** Users named by id or by identity, for reading many at once (authorization decisions). */
export interface UserRefs {
  ids: readonly string[];
  identities: readonly { provider: string; identifier: string }[];
}

/** What an access token reads of a user (findApplicationWithTokenUser). */
export type TokenUserRecord = Pick<
  UserRecord,
  | 'clientId'
  | 'provider'
  | 'identifier'
  | 'name'
  | 'email'
  | 'locale'
  | 'roles'
  | 'scopes'
  | 'active'
>;

/** What an authorization decision reads of a user (findApplicationWithDecidingUsers). */
export type DecidingUserRecord = Pick<
  UserRecord,
  'id' | 'provider' | 'identifier' | 'email' | 'roles' | 'active'
>;

/**
 * The users of one application that an authorization grant admits: active ones holding any of
 * `roles`, or any of `owner.roles` with `owner.attribute` equal to `owner.value` (e-mail
 * compared as the email filter does, ignoring case).
 */
export interface UserGrant {
  clientId: string;
  roles: readonly string[];
  owner: {
    roles: readonly string[];
    attribute: 'email' | 'id' | 'identifier';
    value: string;
  } | null;
}

/** A user whose stored version must still be `expectedEtag` for a write to happen. */
export interface UserChange {
  next: UserRecord;
  expectedEtag: string;
}

/** A SCIM Group: one of the application's roles, with the identity SCIM clients keep. */
export interface GroupRecord {
  clientId: string;
  /** Immutable, unique within the application. */
  id: string;
  /** The role name; unique within the application. */
  displayName: string;
  externalId: string | null;
  createdAt: number;
  updatedAt: number;
  etag: string;
}

export interface ApplicationRepository {
  /** Inserts a new application. DuplicateError when the client_id exists. */
  insertApplication(application: ApplicationRecord, events: readonly NewEvent[]): Promise<void>;
  /** The application, or undefined. */
  findApplication(clientId: string): Promise<ApplicationRecord | undefined>;
  /** Applications ordered by client_id (byte order), after the given client_id. */
  listApplications(
    filter: ApplicationFilter,
    page: PageQuery<string>,
  ): Promise<ApplicationRecord[]>;
  /** How many applications match the filter. */
  countApplications(filter: ApplicationFilter): Promise<number>;
  /**
   * Replaces the stored application when its etag still equals `expectedEtag`.
   * False when it does not (changed meanwhile, or gone); nothing is written then. A new SCIM
   * provider makes its users' identifiers unique regardless of ASCII case, in the same
   * transaction: DuplicateError (USER_NAME_INDEX) when two of them are not, and nothing changes.
   */
  replaceApplication(
    next: ApplicationRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /**
   * Deletes the application and all its users in one transaction, when its etag still
   * equals `expectedEtag`. False when it does not (changed meanwhile, or gone).
   */
  deleteApplicationCascade(
    clientId: string,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean>;
}

/**
 * Users are unique by identity (application, provider, identifier), and the users of an
 * application's SCIM provider also by identifier regardless of ASCII case (SCIM's userName): a
 * write that would break the second rule fails with DuplicateError whose index is
 * USER_NAME_INDEX, on every instance sharing the database.
 */
export interface UserRepository {
  /**
   * Inserts a user. DuplicateError for an existing identity, or for a userName taken in another
   * ASCII case under the application's SCIM provider; MissingParentError without its application.
   */
  insertUser(user: UserRecord, events: readonly NewEvent[]): Promise<void>;
  /**
   * Inserts many users in one transaction (imports, seeding): all of them, or none when any
   * fails, with insertUser's errors.
   */
  insertUsers(users: readonly UserRecord[], events: readonly NewEvent[]): Promise<void>;
  /** The user, or undefined. */
  findUser(identity: UserIdentity): Promise<UserRecord | undefined>;
  /** Users of one application matching every given filter, ordered by (provider, identifier) in byte order. */
  listUsers(filter: UserFilter, page: PageQuery<UserPosition>): Promise<UserRecord[]>;
  /** How many users match the filter. */
  countUsers(filter: UserFilter): Promise<number>;
  /**
   * listUsers' page (up to `page.limit` users) as the API's JSON text of its users, built by
   * the database, and whether more users follow it, or null where the store builds rows faster than text (SQLite) or a user's
   * timestamp falls outside the years 1970–9999 (the API then writes them from rows).
   */
  listUsersText(filter: UserFilter, page: PageQuery<UserPosition>): Promise<UserPageText | null>;
  /**
   * Every user matching the filter, in listUsers' order, in pages of up to `pageSize`, all read
   * from one consistent snapshot (a user written meanwhile is in it as it was when the
   * iteration started, or not at all); memory stays one page whatever the number of users.
   * The snapshot is released when the iteration ends, or is left early (return()).
   */
  exportUsers(filter: UserFilter, pageSize: number): AsyncIterableIterator<UserRecord[]>;
  /** The user with this id in the application, or undefined. */
  findUserById(clientId: string, id: string): Promise<UserRecord | undefined>;
  /** Users of `ids` in the application, in no particular order; unknown ids are left out. */
  findUsersByIds(clientId: string, ids: readonly string[]): Promise<UserRecord[]>;
  /**
   * The application and those of its users that `refs` names (by id or by identity), read in
   * one statement whatever the number of refs; undefined when there is no such application.
   * Users in no particular order, each once; unknown refs are left out.
   */
  findApplicationWithUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: UserRecord[] } | undefined>;
  /**
   * Those users of the application that `refs` names (by id or by identity), for a batch of an
   * import: one read per kind of ref whatever their number. Users in no particular order, each
   * once; unknown refs are left out; undefined when there is no such application.
   */
  findUsersForImport(clientId: string, refs: UserRefs): Promise<UserRecord[] | undefined>;
  /**
   * The application and the user of one identity, with only what an access token reads of the
   * user, in one statement; undefined when there is no such application. The application's
   * record is the one made the last time its row had the same version (etag), shared between
   * calls (it is frozen); the statement reads its version, so a change is seen by the next call.
   */
  findApplicationWithTokenUser(
    identity: UserIdentity,
  ): Promise<{ application: ApplicationRecord; user: TokenUserRecord | undefined } | undefined>;
  /**
   * findApplicationWithUsers with only what an authorization decision reads of each user; the
   * application's record may be shared between calls (it is frozen).
   */
  findApplicationWithDecidingUsers(
    clientId: string,
    refs: UserRefs,
  ): Promise<{ application: ApplicationRecord; users: DecidingUserRecord[] } | undefined>;
  /** The users the grant admits, ordered by (provider, identifier) in byte order. */
  listGrantedUsers(grant: UserGrant, page: PageQuery<UserPosition>): Promise<UserRecord[]>;
  /** Users matching the query, ordered by identifier in byte order. */
  queryUsers(query: UserQuery, page: UserQueryPage): Promise<UserRecord[]>;
  /**
   * queryUsers for the users of the application's SCIM provider (its scimProvider), each with
   * the application's groups it holds (display name among its roles; ordered by id), in one
   * statement. Empty when the application does not exist or has SCIM off. Undefined when this
   * query cannot be served so (a predicate without an equality on id, identifier or
   * externalId, or a page after a position): use the separate reads.
   */
  queryScimUsers(
    clientId: string,
    predicate: UserPredicate,
    page: { offset: number; limit: number },
  ): Promise<{ user: UserRecord; groups: { id: string; displayName: string }[] }[] | undefined>;
  /** How many users match the query. */
  countQueriedUsers(query: UserQuery): Promise<number>;
  /**
   * Up to `limit` users of the provider whose identifiers equal another one's ignoring ASCII
   * case (what stops the provider from becoming the application's SCIM provider), by identifier.
   */
  findUserNameClashes(clientId: string, provider: string, limit: number): Promise<UserRecord[]>;
  /**
   * Replaces the user with next.id when its etag still equals `expectedEtag`; false otherwise.
   * The identifier may change (a rename): DuplicateError when the new identity is taken, or
   * (a user of the SCIM provider) the new userName in another case. `keepsIdentity`: the
   * caller knows that next has the provider and identifier of the version it replaces, so the
   * store need not rewrite them (and their indexes); a user whose identity differs is then
   * left as it is (false).
   */
  replaceUser(
    next: UserRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
    options?: { keepsIdentity?: boolean },
  ): Promise<boolean>;
  /** Deletes the user when its etag still equals `expectedEtag`; false otherwise. */
  deleteUser(
    identity: UserIdentity,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean>;
}

export interface ApiKeyRepository {
  /** Inserts a key. DuplicateError when the id or the secret digest exists. */
  insertApiKey(key: ApiKeyRecord, events: readonly NewEvent[]): Promise<void>;
  /**
   * Inserts the key only when the store holds no API key at all (revoked ones count);
   * returns whether it did. Atomic across instances sharing the database: two racing callers
   * never both insert.
   */
  insertFirstApiKey(key: ApiKeyRecord, events: readonly NewEvent[]): Promise<boolean>;
  /**
   * The key whose secret, or previous secret, has this digest, revoked or not, or undefined.
   * Deciding whether that secret still works is the caller's.
   */
  findApiKeyByDigest(secretDigest: string): Promise<ApiKeyRecord | undefined>;
  /** The key, revoked or not, or undefined. */
  findApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  /** Keys ordered by id, after the given id; revoked ones only when the filter asks. */
  listApiKeys(filter: ApiKeyFilter, page: PageQuery<string>): Promise<ApiKeyRecord[]>;
  /** How many keys the filter matches. */
  countApiKeys(filter: ApiKeyFilter): Promise<number>;
  /** Sets the key's roles and restriction and clears its expiry (the bootstrap key's contract). */
  updateApiKeyGrants(
    id: string,
    grants: { roles: string[]; applications: string[] | null; updatedAt: number },
    events: readonly NewEvent[],
  ): Promise<void>;
  /**
   * Gives an unrevoked key a new secret when its digest is still `change.expectedDigest`; the
   * replaced digest becomes the previous one (a former previous one is dropped). False when
   * the key is gone, revoked or rotated meanwhile: nothing is written then.
   */
  rotateApiKeySecret(
    id: string,
    change: ApiKeySecretChange,
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /** Records a use; never moves last_used_at backwards. */
  touchApiKey(id: string, usedAt: number): Promise<void>;
  /**
   * Revokes the key at `revokedAt`, keeping its record; false when it does not exist or was
   * revoked already (the first revocation time stays). With `whileAnyWorks`, only while at
   * least one of those other keys is unrevoked and unexpired at `revokedAt` (else false,
   * nothing written): atomic across instances, so two racing revocations never both take the
   * last of them.
   */
  revokeApiKey(
    id: string,
    revokedAt: number,
    events: readonly NewEvent[],
    whileAnyWorks?: readonly string[],
  ): Promise<boolean>;
}

export interface GroupRepository {
  /**
   * Inserts a group and, in the same transaction, replaces its first members (each only if its
   * etag is still the expected one; false and nothing written otherwise). DuplicateError when
   * its id or display name exists in the application.
   */
  insertGroup(
    group: GroupRecord,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /** The group, or undefined. */
  findGroup(clientId: string, id: string): Promise<GroupRecord | undefined>;
  /** Every group of the application, ordered by id. */
  listGroups(clientId: string): Promise<GroupRecord[]>;
  /**
   * The application and every group of it (ordered by id), read in one statement (what every
   * SCIM user response needs); undefined when there is no such application.
   */
  findApplicationWithGroups(
    clientId: string,
  ): Promise<{ application: ApplicationRecord; groups: GroupRecord[] } | undefined>;
  /**
   * In one transaction: replaces the group when its etag still equals `expectedEtag`, and
   * replaces each user of `members` when its etag still equals its expectedEtag. All of it,
   * or nothing (false) when any version moved on. DuplicateError for a taken display name.
   */
  replaceGroup(
    next: GroupRecord,
    expectedEtag: string,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /** Like replaceGroup, deleting the group instead. */
  deleteGroup(
    group: GroupRecord,
    expectedEtag: string,
    members: readonly UserChange[],
    events: readonly NewEvent[],
  ): Promise<boolean>;
}

/** One batch of an import, recorded in one transaction. */
export interface ImportBatch {
  /** The job's counts after this batch (totals, not increments). */
  counts: ImportCounts;
  /** The batch's error lines, stored with it. */
  errors: readonly ImportErrorRecord[];
  /** New users. */
  inserts: readonly UserRecord[];
  /** Changed users, each written only if its version is still the expected one. */
  changes: readonly UserChange[];
  /** When the batch was recorded (the job's updatedAt). */
  recordedAt: number;
}

export interface ImportJobRepository {
  /** Inserts a job. DuplicateError when its id exists; MissingParentError without its application. */
  insertImportJob(job: ImportJobRecord): Promise<void>;
  /** The job, or undefined. */
  findImportJob(id: string): Promise<ImportJobRecord | undefined>;
  /**
   * In one transaction: the batch's new users and changed users with their events, its error
   * lines, and the job's counts. Only while the job is running and every changed user's version
   * is still the expected one: false otherwise, and nothing is written. DuplicateError or
   * MissingParentError as insertUsers, and then nothing is written either.
   */
  recordImportBatch(
    jobId: string,
    batch: ImportBatch,
    events: readonly NewEvent[],
  ): Promise<boolean>;
  /**
   * Ends a running job with `status` (and, for a failure, why); false when it is not running
   * any more (finished, cancelled) or does not exist.
   */
  finishImportJob(
    id: string,
    status: Exclude<ImportStatus, 'running'>,
    finishedAt: number,
    failure: string | null,
  ): Promise<boolean>;
  /** Records that a running job still runs (its updatedAt), when no batch did lately. */
  touchImportJob(id: string, at: number): Promise<void>;
  /** The job's error lines in (line, index) order, after the given position. */
  listImportErrors(
    jobId: string,
    page: PageQuery<ImportErrorPosition>,
  ): Promise<(ImportErrorRecord & ImportErrorPosition)[]>;
}

/** A counter of a fixed window, as it stands after a change. */
export interface LimitCount {
  /** The count in the current window, after the points just added. */
  count: number;
  /** Epoch ms: when the window ends (the next count after it starts a new one). */
  resetsAt: number;
}

/** Counters of the limits, shared by every instance on the database (when no Redis is). */
export interface LimitCounterRepository {
  /**
   * Adds `points` to the counter `key` and returns it. A counter counts in fixed windows of
   * `windowMs`: the first count after a window ended (or ever) starts a new one at `now`.
   * Atomic across instances: concurrent additions are all counted, each sees its own sum.
   */
  addToCounter(key: string, points: number, now: number, windowMs: number): Promise<LimitCount>;
  /** Deletes up to `limit` counters whose window ended before `before`; returns how many. */
  pruneCounters(before: number, limit: number): Promise<number>;
}

export interface SettingRepository {
  /**
   * The stored value of a setting, creating it from `initial` when absent. Every caller,
   * on every instance, gets the same value (the first one written wins).
   */
  getOrCreateSetting(name: string, initial: string): Promise<string>;
  /** The stored value of a setting, or undefined. */
  findSetting(name: string): Promise<string | undefined>;
  /** Stores a setting, replacing any value it had. */
  putSetting(name: string, value: string): Promise<void>;
  /**
   * Stores a setting an operator changed, with the events that record the change; nothing
   * (and no event) when it has that value already. Whether it changed.
   */
  changeSetting(name: string, value: string, events: readonly NewEvent[]): Promise<boolean>;
}

/** An asymmetric key Tessera signs access tokens with. */
export interface SigningKeyRecord {
  /** The JWS `kid`: random, unique. */
  kid: string;
  /** 1 for the first key, then one more per rotation: the order of keys, unique. */
  generation: number;
  algorithm: 'ES256' | 'EdDSA' | 'RS256';
  /** The public key as a JWK (no private members). */
  publicJwk: Record<string, unknown>;
  /**
   * The private key as stored: JWK JSON text, or that text sealed with IAM_SECRET_KEY. A
   * secret: never logged, never leaves the store but to sign. The store keeps it as given.
   */
  privateKey: string;
  createdAt: number;
  /** When it starts signing; it is published from createdAt on. */
  activatesAt: number;
  /** When it was revoked (an emergency: it left the JWKS at once), or null. */
  revokedAt: number | null;
}

export interface SigningKeyRepository {
  /**
   * Inserts a key. DuplicateError when its kid or its generation exists: of two instances
   * adding "generation n" at once, exactly one succeeds.
   */
  insertSigningKey(key: SigningKeyRecord, events: readonly NewEvent[]): Promise<void>;
  /** Every key, ordered by generation (oldest first). */
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Marks the key revoked; false when it does not exist or was revoked already. */
  revokeSigningKey(kid: string, revokedAt: number, events: readonly NewEvent[]): Promise<boolean>;
  /**
   * Replaces the stored private key when it is still `expected` (sealing a key stored in
   * clear); false when it is not, or the key is gone.
   */
  replacePrivateKey(kid: string, expected: string, next: string): Promise<boolean>;
}

/**
 * A secret as stored: text sealed with IAM_SECRET_KEY (or the key before it), or in clear.
 * Never logged, never given out.
 */
export interface StoredSecret {
  /** A signing key's private key, a webhook's secret, or a webhook's rotated-out secret. */
  kind: 'signing_key' | 'webhook_secret' | 'webhook_previous_secret';
  /** The signing key's kid, or the webhook's id. */
  id: string;
  stored: string;
}

/** Every secret sealed at rest, across the tables that hold them: what a re-seal works on. */
export interface StoredSecretRepository {
  /** Every private signing key, webhook secret and rotated-out webhook secret still stored. */
  listStoredSecrets(): Promise<StoredSecret[]>;
  /**
   * Replaces each secret's stored text with `next`, all in one transaction with `events`, only
   * when every one is still as listed; false, and nothing written, when any changed or is gone.
   */
  replaceStoredSecrets(
    replacements: readonly { secret: StoredSecret; next: string }[],
    events: readonly NewEvent[],
  ): Promise<boolean>;
}

/**
 * A person signed in to the console through the organisation's OpenID provider: who they are
 * there and the powers the provider's claims gave them at sign-in (kept for the session).
 */
export interface ConsoleOperator {
  /** The provider's issuer identifier and the person's subject there. */
  issuer: string;
  subject: string;
  /** What the console shows: their name, else their e-mail address, else the subject. */
  name: string;
  /** Tessera roles, from the provider's roles claim. */
  roles: string[];
  /** The client_ids they may act on, from the provider's applications claim; null: all. */
  applications: string[] | null;
}

/** A signed-in session of the admin console. */
export interface ConsoleSessionRecord {
  /** Hex SHA-256 of the session id the browser's cookie carries; the id itself is never stored. */
  idDigest: string;
  /**
   * The API key the session acts with (its current roles and restriction, on each request);
   * null for an operator's session.
   */
  apiKeyId: string | null;
  /**
   * Hex SHA-256 of the key's secret signed in with: the session ends when that secret stops
   * working; null for an operator's session.
   */
  keyDigest: string | null;
  /** The operator the session acts for (signed in through OpenID Connect), or null. */
  operator: ConsoleOperator | null;
  /** The synchronizer token every state-changing request of the session must carry. */
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
}

/**
 * A console sign-in through the OpenID provider, begun and not yet finished: what the callback
 * must find to accept the provider's answer. Taken (read and deleted) at most once.
 */
export interface ConsoleSignInRecord {
  /** Hex SHA-256 of the `state` sent to the provider. */
  stateDigest: string;
  /** Hex SHA-256 of the value of the cookie set in the browser that began the sign-in. */
  browserDigest: string;
  /** The `nonce` the ID token must carry. */
  nonce: string;
  /** The PKCE code verifier the code is redeemed with. */
  codeVerifier: string;
  createdAt: number;
}

export interface ConsoleSessionRepository {
  /** Inserts a session. DuplicateError when its id digest exists. */
  insertConsoleSession(session: ConsoleSessionRecord): Promise<void>;
  /** The session, or undefined. */
  findConsoleSession(idDigest: string): Promise<ConsoleSessionRecord | undefined>;
  /** Records activity; never moves last_seen_at backwards. */
  touchConsoleSession(idDigest: string, lastSeenAt: number): Promise<void>;
  /** Ends a session; false when there was none. */
  deleteConsoleSession(idDigest: string): Promise<boolean>;
  /** Deletes sessions last seen before `idleSince` or created before `createdSince`; how many. */
  deleteExpiredConsoleSessions(idleSince: number, createdSince: number): Promise<number>;
  /** Records a sign-in begun. DuplicateError when its state digest exists. */
  insertConsoleSignIn(signIn: ConsoleSignInRecord): Promise<void>;
  /**
   * Deletes the sign-in of a state digest and returns it, or undefined when there is none:
   * of two callers racing for one, only one gets it.
   */
  takeConsoleSignIn(stateDigest: string): Promise<ConsoleSignInRecord | undefined>;
  /** Deletes sign-ins begun before `createdSince`; how many. */
  deleteExpiredConsoleSignIns(createdSince: number): Promise<number>;
}

export interface Store {
  /** The audit trail: every write above records its events in the same transaction. */
  readonly events: EventRepository;
  readonly applications: ApplicationRepository;
  readonly users: UserRepository;
  readonly groups: GroupRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly settings: SettingRepository;
  /** Counters of the limits shared by instances (failed authentications, requests per key). */
  readonly limits: LimitCounterRepository;
  readonly signingKeys: SigningKeyRepository;
  /** The secrets sealed with IAM_SECRET_KEY, across signing keys and webhooks. */
  readonly storedSecrets: StoredSecretRepository;
  /** Webhooks, their delivery state and log (webhook-records.ts). */
  readonly webhooks: WebhookRepository;
  readonly consoleSessions: ConsoleSessionRepository;
  /** Bulk import jobs, their error lines, and the batches they write (import-records.ts). */
  readonly imports: ImportJobRepository;
  /** Which backend this is, for logs and health output. */
  readonly kind: 'sqlite' | 'postgres';
  /** Resolves when the database answers a trivial query; StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /**
   * Applies pending migrations; safe to call from several processes at once. NewerSchemaError
   * (nothing applied) when the database holds a migration this build does not know.
   */
  migrate(): Promise<void>;
  /** Which migrations the database has and which it lacks; changes nothing. */
  schemaStatus(): Promise<SchemaStatus>;
  /** Finishes acknowledged work and releases the database. */
  close(): Promise<void>;
  /** The connection pool's occupancy, for metrics; null where there is no pool (SQLite). */
  poolStats?(): PoolStats | null;
  /** Tells `observer` what the store does, for metrics; absent where there is nothing to tell. */
  observe?(observer: StoreObserver): void;
}

/** A migration as the database recorded it. */
export interface AppliedMigration {
  name: string;
  /** When it was applied (RFC 3339). */
  appliedAt: string;
}

/** The database's schema against the migrations this build knows. */
export interface SchemaStatus {
  /** Migrations this build knows that the database has, in name order. */
  applied: AppliedMigration[];
  /** Migrations this build knows that the database lacks: the next migrate applies them. */
  pending: string[];
  /** Migrations the database has that this build does not know: a newer Tessera wrote it. */
  unknown: AppliedMigration[];
}

export interface PoolStats {
  /** Connections open. */
  total: number;
  /** Open connections not serving a query. */
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface StoreObserver {
  /** A write transaction was made durable; `seconds` is how long its COMMIT took. */
  committed?(seconds: number): void;
}
