// The only reader of process.env. The environment is checked against one schema; the typed
// Config is what loadConfig returns, so the two cannot drift apart.

import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
import { ROLES, type Role, isRole } from './roles.js';
import type { DatabaseConfig } from './store/open-store.js';
import { POSTGRES_DEFAULTS } from './store/postgres/postgres-defaults.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const BooleanText = Type.Unsafe<'true' | 'false'>({
  type: 'string',
  enum: ['true', 'false'],
  description: 'true or false',
});

const Environment = Type.Object({
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$', description: 'a TCP port, 0–65535' })),
  HOST: Type.Optional(Type.String({ minLength: 1, description: 'a listen address' })),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
      description: 'sqlite:<path>, sqlite::memory:, or postgres://…',
    }),
  ),
  IAM_BOOTSTRAP_API_KEY: Type.Optional(
    Type.String({
      // A short secret is found by guessing: 'Q9' took 6.8 s at 687 tries per second.
      pattern: '^[\\x21-\\x7e]{32,512}$',
      description:
        '32–512 visible ASCII characters without spaces (a long random secret; it travels in a header)',
    }),
  ),
  LOG_FORMAT: Type.Optional(
    Type.Unsafe<'json' | 'pretty'>({
      type: 'string',
      enum: ['json', 'pretty'],
      description:
        'json (one JSON object a line, the default) or pretty (for a person at a terminal)',
    }),
  ),
  IAM_METRICS_PORT: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,5}$', description: 'a TCP port, 0–65535' }),
  ),
  IAM_METRICS_HOST: Type.Optional(Type.String({ minLength: 1, description: 'a listen address' })),
  LOG_LEVEL: Type.Optional(
    Type.Unsafe<(typeof LOG_LEVELS)[number]>({
      type: 'string',
      enum: [...LOG_LEVELS],
      description: `one of ${LOG_LEVELS.join(', ')}`,
    }),
  ),
  IAM_RATE_LIMIT_PER_MINUTE: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,9}$',
      description: 'a whole number of requests per minute per API key (0 turns the limit off)',
    }),
  ),
  IAM_AUTH_FAILURES_PER_MINUTE: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,9}$',
      description:
        'a whole number of failed authentications per minute per client address (0 turns the limit off)',
    }),
  ),
  REDIS_URL: Type.Optional(
    Type.String({
      pattern: '^rediss?://.+',
      description: 'a redis:// or rediss:// URL',
    }),
  ),
  IAM_TRUST_PROXY: Type.Optional(BooleanText),
  IAM_WORKERS: Type.Optional(
    Type.String({
      pattern: '^(auto|[1-9][0-9]?)$',
      description: 'a whole number of processes from 1 to 99, or auto (one per core)',
    }),
  ),
  IAM_DATA_DIR: Type.Optional(Type.String({ minLength: 1, description: 'a directory path' })),
  IAM_DB_POOL_SIZE: Type.Optional(
    Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'a whole number from 1 to 999' }),
  ),
  IAM_DB_CONNECT_TIMEOUT_MS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'a whole number of milliseconds from 1 to 999999',
    }),
  ),
  IAM_DB_POOL_WAIT_MS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'a whole number of milliseconds from 1 to 999999',
    }),
  ),
  IAM_DB_STATEMENT_TIMEOUT_MS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'a whole number of milliseconds from 1 to 999999',
    }),
  ),
  IAM_TOKEN_ALG: Type.Optional(
    Type.Unsafe<'ES256' | 'EdDSA' | 'RS256'>({
      type: 'string',
      enum: ['ES256', 'EdDSA', 'RS256'],
      description: 'ES256, EdDSA or RS256',
    }),
  ),
  IAM_ISSUER: Type.Optional(
    Type.String({
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*[^/?#\\s])?$',
      description: 'an http(s) URL without query, fragment or trailing slash',
    }),
  ),
  IAM_ALLOW_INSECURE_JWKS: Type.Optional(BooleanText),
  IAM_ALLOW_INSECURE_WEBHOOKS: Type.Optional(BooleanText),
  IAM_SECRET_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{43}=?$|^[A-Za-z0-9_-]{43}$',
      description: '32 bytes in base64 (openssl rand -base64 32)',
    }),
  ),
  IAM_SECRET_KEY_PREVIOUS: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{43}=?$|^[A-Za-z0-9_-]{43}$',
      description: '32 bytes in base64, the IAM_SECRET_KEY before the current one',
    }),
  ),
  IAM_EVENT_RETENTION_DAYS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,4}$',
      description: 'a whole number of days from 1 to 99999',
    }),
  ),
  IAM_ACCESS_LOG: Type.Optional(BooleanText),
  IAM_CONSOLE_IDLE_TIMEOUT_SECONDS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'a whole number of seconds from 1 to 999999',
    }),
  ),
  IAM_BACKUP_DIR: Type.Optional(Type.String({ minLength: 1, description: 'a directory path' })),
  IAM_BACKUP_INTERVAL: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}[smhd]$',
      description: 'a whole number and a unit, s, m, h or d (such as 6h, 30m or 1d)',
    }),
  ),
  IAM_BACKUP_KEEP: Type.Optional(
    Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: 'a whole number from 1 to 9999' }),
  ),
  IAM_CONSOLE_SESSION_LIFETIME_SECONDS: Type.Optional(
    Type.String({
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'a whole number of seconds from 1 to 999999',
    }),
  ),
  IAM_CONSOLE_OIDC_ISSUER: Type.Optional(
    Type.String({
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$',
      description: "an http(s) URL without query or fragment: the OpenID provider's issuer",
    }),
  ),
  IAM_CONSOLE_OIDC_CLIENT_ID: Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', description: 'a client id' }),
  ),
  IAM_CONSOLE_OIDC_CLIENT_SECRET: Type.Optional(
    Type.String({ pattern: '^[\\x20-\\x7e]{1,1024}$', description: 'a client secret' }),
  ),
  IAM_CONSOLE_OIDC_NAME: Type.Optional(
    Type.String({ maxLength: 60, description: 'a name of up to 60 characters' }),
  ),
  IAM_CONSOLE_OIDC_SCOPES: Type.Optional(
    Type.String({
      pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+( [\\x21\\x23-\\x5b\\x5d-\\x7e]+)*$',
      description: 'scopes separated by spaces',
    }),
  ),
  IAM_CONSOLE_OIDC_ROLES_CLAIM: Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', description: 'a claim name' }),
  ),
  IAM_CONSOLE_OIDC_ROLE_MAP: Type.Optional(
    Type.String({
      maxLength: 8192,
      description: 'entries VALUE=ROLE,ROLE (or VALUE=*) separated by semicolons',
    }),
  ),
  IAM_CONSOLE_OIDC_APPLICATIONS_CLAIM: Type.Optional(
    Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', description: 'a claim name' }),
  ),
  IAM_CONSOLE_OIDC_REDIRECT_URI: Type.Optional(
    Type.String({
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?/console/oidc/callback$',
      description: "an http(s) URL ending in /console/oidc/callback: this console's callback",
    }),
  ),
});

type Environment = Static<typeof Environment>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Config = ReturnType<typeof loadConfig>;

export const defaultDatabaseUrl = 'sqlite:./data/tessera.db';

/** Reads and checks the environment. Empty variables count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const relevant = Object.fromEntries(
    Object.keys(Environment.properties)
      .map((name) => [name, env[name]] as const)
      .filter(([, value]) => value !== undefined && value !== ''),
  );
  if (!Value.Check(Environment, relevant)) {
    // Name each variable and what it must be; never echo a value (one may be a secret).
    const invalid = new Set(
      Value.Errors(Environment, relevant).map((error) => error.instancePath.slice(1)),
    );
    const descriptions = Environment.properties as Record<string, { description?: string }>;
    const problems = [...invalid].map(
      (name) => `${name} must be ${descriptions[name]?.description ?? 'valid'}`,
    );
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const vars: Environment = relevant;

  const port = Number(vars.PORT ?? 8080);
  if (port > 65535) throw new ConfigError('invalid configuration: PORT must be at most 65535');
  const database = parseDatabaseUrl(vars.DATABASE_URL ?? defaultDatabaseUrl, {
    poolSize: Number(vars.IAM_DB_POOL_SIZE ?? POSTGRES_DEFAULTS.poolSize),
    connectTimeoutMs: Number(vars.IAM_DB_CONNECT_TIMEOUT_MS ?? POSTGRES_DEFAULTS.connectTimeoutMs),
    poolWaitMs: Number(vars.IAM_DB_POOL_WAIT_MS ?? POSTGRES_DEFAULTS.poolWaitMs),
    statementTimeoutMs: Number(
      vars.IAM_DB_STATEMENT_TIMEOUT_MS ?? POSTGRES_DEFAULTS.statementTimeoutMs,
    ),
  });

  const workers =
    vars.IAM_WORKERS === 'auto' ? availableParallelism() : Number(vars.IAM_WORKERS ?? 1);
  if (workers > 1 && database.kind === 'sqlite' && database.path === ':memory:') {
    throw new ConfigError(
      'invalid configuration: IAM_WORKERS must be 1 with DATABASE_URL=sqlite::memory: (each process would have a database of its own)',
    );
  }

  return {
    port,
    host: vars.HOST ?? '127.0.0.1',
    /** IAM_WORKERS: processes serving the one port (node:cluster); 1: this process alone. */
    workers,
    database,
    /** Scheduled backups of the SQLite database (IAM_BACKUP_*); null: none. */
    backups: scheduledBackups(vars, database),
    /** Where the first-start admin key file goes: beside the SQLite file, else ./data. */
    dataDir: resolve(
      vars.IAM_DATA_DIR ??
        (database.kind === 'sqlite' && database.path !== ':memory:'
          ? dirname(database.path)
          : './data'),
    ),
    bootstrapApiKey: vars.IAM_BOOTSTRAP_API_KEY ?? null,
    logLevel: vars.LOG_LEVEL ?? 'info',
    logFormat: vars.LOG_FORMAT ?? 'json',
    /**
     * IAM_METRICS_PORT: /metrics (and /healthz, /readyz) on a listener of their own, and
     * /metrics no longer on the public one; null: everything on PORT.
     */
    metricsListener: metricsListener(vars, port),
    rateLimitPerMinute: Number(vars.IAM_RATE_LIMIT_PER_MINUTE ?? 60_000),
    /** Failed authentications per minute per client address (API keys, /oauth2/token); 0: off. */
    authFailuresPerMinute: Number(vars.IAM_AUTH_FAILURES_PER_MINUTE ?? 60),
    /** Where rate-limit counters are shared between instances; null: in memory. */
    redisUrl: vars.REDIS_URL ?? null,
    trustProxy: vars.IAM_TRUST_PROXY === 'true',
    tokens: {
      algorithm: vars.IAM_TOKEN_ALG ?? 'ES256',
      issuer: vars.IAM_ISSUER ?? `http://${hostForUrl(vars.HOST ?? '127.0.0.1')}:${port}`,
      allowInsecureJwks: vars.IAM_ALLOW_INSECURE_JWKS === 'true',
      /** IAM_SECRET_KEY: seals private signing keys at rest (AES-256-GCM); null: kept in clear. */
      secretKey:
        vars.IAM_SECRET_KEY === undefined ? null : Buffer.from(vars.IAM_SECRET_KEY, 'base64'),
      /** IAM_SECRET_KEY_PREVIOUS: opens what the key before IAM_SECRET_KEY sealed; null: none. */
      previousSecretKey: previousSecretKey(vars),
    },
    webhooks: {
      /** IAM_ALLOW_INSECURE_WEBHOOKS: deliveries may go to http: and private addresses. */
      allowInsecure: vars.IAM_ALLOW_INSECURE_WEBHOOKS === 'true',
    },
    /**
     * The issuer was derived from a wildcard listen address (HOST=0.0.0.0 or ::): no verifier
     * can reach http://0.0.0.0:8080, so start-up warns.
     */
    issuerFromWildcardHost: vars.IAM_ISSUER === undefined && isWildcardHost(vars.HOST),
    /** IAM_SECRET_KEY: encrypts private signing keys at rest (AES-256-GCM); null: stored in clear. */
    secretKey:
      vars.IAM_SECRET_KEY === undefined ? null : Buffer.from(vars.IAM_SECRET_KEY, 'base64'),
    /** Events older than this many days are pruned in the background. */
    eventRetentionDays: Number(vars.IAM_EVENT_RETENTION_DAYS ?? 90),
    /** One info line per request (route, status, duration, request id, API key id). */
    accessLog: vars.IAM_ACCESS_LOG !== 'false',
    /** Admin console sessions: idle 30 min and 8 h at most, unless set. */
    console: {
      idleTimeoutMs: Number(vars.IAM_CONSOLE_IDLE_TIMEOUT_SECONDS ?? 1800) * 1000,
      absoluteTimeoutMs: Number(vars.IAM_CONSOLE_SESSION_LIFETIME_SECONDS ?? 28_800) * 1000,
    },
    /** Console sign-in through an OpenID provider (IAM_CONSOLE_OIDC_*); null: API keys only. */
    consoleOidc: consoleOidc(
      vars,
      vars.IAM_ISSUER ?? `http://${hostForUrl(vars.HOST ?? '127.0.0.1')}:${port}`,
    ),
  };
}

const CONSOLE_OIDC_VARIABLES = [
  'IAM_CONSOLE_OIDC_CLIENT_ID',
  'IAM_CONSOLE_OIDC_CLIENT_SECRET',
  'IAM_CONSOLE_OIDC_NAME',
  'IAM_CONSOLE_OIDC_SCOPES',
  'IAM_CONSOLE_OIDC_ROLES_CLAIM',
  'IAM_CONSOLE_OIDC_ROLE_MAP',
  'IAM_CONSOLE_OIDC_APPLICATIONS_CLAIM',
  'IAM_CONSOLE_OIDC_REDIRECT_URI',
] as const;

function isLoopbackUrl(url: URL): boolean {
  return (
    url.hostname === 'localhost' ||
    url.hostname === '[::1]' ||
    /^127\.\d+\.\d+\.\d+$/.test(url.hostname)
  );
}

/**
 * IAM_CONSOLE_OIDC_*: the OpenID provider operators sign in to the console through. The issuer,
 * client id and secret go together; the provider is reached over https (plain http only on a
 * loopback address, for a provider on the same machine).
 */
function consoleOidc(vars: Environment, tesseraUrl: string) {
  const issuer = vars.IAM_CONSOLE_OIDC_ISSUER;
  if (issuer === undefined) {
    const stray = CONSOLE_OIDC_VARIABLES.find((name) => vars[name] !== undefined);
    if (stray !== undefined) {
      throw new ConfigError(
        `invalid configuration: ${stray} is set but IAM_CONSOLE_OIDC_ISSUER is not; set IAM_CONSOLE_OIDC_ISSUER to the OpenID provider's issuer`,
      );
    }
    return null;
  }
  for (const name of ['IAM_CONSOLE_OIDC_CLIENT_ID', 'IAM_CONSOLE_OIDC_CLIENT_SECRET'] as const) {
    if (vars[name] === undefined) {
      throw new ConfigError(
        `invalid configuration: IAM_CONSOLE_OIDC_ISSUER is set but ${name} is not; the console signs in as a confidential client of the provider`,
      );
    }
  }
  const issuerUrl = new URL(issuer);
  if (issuerUrl.protocol === 'http:' && !isLoopbackUrl(issuerUrl)) {
    throw new ConfigError(
      'invalid configuration: IAM_CONSOLE_OIDC_ISSUER must be an https URL (plain http only on a loopback address)',
    );
  }
  const scopes = (vars.IAM_CONSOLE_OIDC_SCOPES ?? 'openid profile email').split(' ');
  return {
    issuer,
    clientId: vars.IAM_CONSOLE_OIDC_CLIENT_ID!,
    clientSecret: vars.IAM_CONSOLE_OIDC_CLIENT_SECRET!,
    redirectUri:
      vars.IAM_CONSOLE_OIDC_REDIRECT_URI ??
      `${tesseraUrl.replace(/\/$/, '')}/console/oidc/callback`,
    providerName: vars.IAM_CONSOLE_OIDC_NAME?.trim() || issuerUrl.host,
    scopes: scopes.includes('openid') ? scopes : ['openid', ...scopes],
    rolesClaim: vars.IAM_CONSOLE_OIDC_ROLES_CLAIM ?? 'roles',
    roleMap: parseRoleMap(vars.IAM_CONSOLE_OIDC_ROLE_MAP ?? ''),
    applicationsClaim: vars.IAM_CONSOLE_OIDC_APPLICATIONS_CLAIM ?? null,
    allowHttp: issuerUrl.protocol === 'http:',
  };
}

/** `tessera-admins=*;support=users:read,users:write` → value → roles (`*`: every role). */
export function parseRoleMap(text: string): Map<string, Role[]> {
  const map = new Map<string, Role[]>();
  for (const entry of text.split(';')) {
    if (entry.trim() === '') continue;
    const separator = entry.lastIndexOf('=');
    const value = entry.slice(0, separator).trim();
    const roles = entry
      .slice(separator + 1)
      .split(',')
      .map((role) => role.trim())
      .filter((role) => role !== '');
    const unknown = roles.filter((role) => role !== '*' && !isRole(role));
    if (separator <= 0 || value === '' || roles.length === 0 || unknown.length > 0) {
      throw new ConfigError(
        `invalid configuration: IAM_CONSOLE_OIDC_ROLE_MAP must be entries VALUE=ROLE,ROLE (or VALUE=*) separated by semicolons, with roles among ${ROLES.join(', ')}${unknown.length > 0 ? ` (not a role: ${unknown.join(', ')})` : ''}`,
      );
    }
    map.set(value, roles.includes('*') ? [...ROLES] : (roles as Role[]));
  }
  return map;
}

/** IAM_METRICS_PORT and IAM_METRICS_HOST (default: HOST's address). */
function metricsListener(vars: Environment, publicPort: number) {
  if (vars.IAM_METRICS_PORT === undefined) {
    if (vars.IAM_METRICS_HOST !== undefined) {
      throw new ConfigError(
        'invalid configuration: IAM_METRICS_HOST is set but IAM_METRICS_PORT is not; set IAM_METRICS_PORT to serve /metrics on a listener of its own',
      );
    }
    return null;
  }
  const port = Number(vars.IAM_METRICS_PORT);
  if (port > 65535) {
    throw new ConfigError('invalid configuration: IAM_METRICS_PORT must be at most 65535');
  }
  if (port === publicPort && port !== 0) {
    throw new ConfigError(
      'invalid configuration: IAM_METRICS_PORT must differ from PORT (it opens a listener of its own)',
    );
  }
  return { port, host: vars.IAM_METRICS_HOST ?? vars.HOST ?? '127.0.0.1' };
}

/** IAM_SECRET_KEY_PREVIOUS, which only makes sense beside a different IAM_SECRET_KEY. */
function previousSecretKey(vars: Environment): Buffer | null {
  if (vars.IAM_SECRET_KEY_PREVIOUS === undefined) return null;
  const previous = Buffer.from(vars.IAM_SECRET_KEY_PREVIOUS, 'base64');
  if (vars.IAM_SECRET_KEY === undefined) {
    throw new ConfigError(
      'invalid configuration: IAM_SECRET_KEY_PREVIOUS is set but IAM_SECRET_KEY is not; set IAM_SECRET_KEY to the new key',
    );
  }
  if (previous.equals(Buffer.from(vars.IAM_SECRET_KEY, 'base64'))) {
    throw new ConfigError(
      'invalid configuration: IAM_SECRET_KEY_PREVIOUS is the same key as IAM_SECRET_KEY; it must be the key before it',
    );
  }
  return previous;
}

const DURATION_UNITS_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** IAM_BACKUP_DIR, IAM_BACKUP_INTERVAL (default 24h) and IAM_BACKUP_KEEP (default 7). */
function scheduledBackups(vars: Environment, database: DatabaseConfig) {
  if (vars.IAM_BACKUP_DIR === undefined) {
    const stray = (['IAM_BACKUP_INTERVAL', 'IAM_BACKUP_KEEP'] as const).find(
      (name) => vars[name] !== undefined,
    );
    if (stray !== undefined) {
      throw new ConfigError(
        `invalid configuration: ${stray} is set but IAM_BACKUP_DIR is not; set IAM_BACKUP_DIR to schedule backups`,
      );
    }
    return null;
  }
  if (database.kind === 'postgres') {
    throw new ConfigError(
      'invalid configuration: IAM_BACKUP_DIR schedules backups of a SQLite database; on PostgreSQL back up with pg_dump (docs/operations.md)',
    );
  }
  if (database.path === ':memory:') {
    throw new ConfigError(
      'invalid configuration: IAM_BACKUP_DIR is set but DATABASE_URL is sqlite::memory:, which has no file to back up',
    );
  }
  const interval = vars.IAM_BACKUP_INTERVAL ?? '24h';
  return {
    directory: resolve(vars.IAM_BACKUP_DIR),
    intervalMs:
      Number(interval.slice(0, -1)) *
      DURATION_UNITS_MS[interval.slice(-1) as keyof typeof DURATION_UNITS_MS],
    keep: Number(vars.IAM_BACKUP_KEEP ?? 7),
  };
}

function isWildcardHost(host: string | undefined): boolean {
  return host !== undefined && ['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0'].includes(host);
}

/** An IPv6 listen address goes in brackets in a URL. */
function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** `sqlite:<path>`, `sqlite:///abs/path`, `sqlite::memory:`, `postgres://…`, `postgresql://…`. */
export function parseDatabaseUrl(
  url: string,
  postgres: Omit<Extract<DatabaseConfig, { kind: 'postgres' }>, 'kind' | 'url'> = POSTGRES_DEFAULTS,
): DatabaseConfig {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      // Never echo the URL: it may carry a password.
      throw new ConfigError('invalid configuration: DATABASE_URL is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url, ...postgres };
  }
  if (url.startsWith('sqlite:')) {
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '')
      throw new ConfigError('invalid configuration: DATABASE_URL has no SQLite path');
    return { kind: 'sqlite', path: path === ':memory:' ? path : resolve(path) };
  }
  throw new ConfigError(
    'invalid configuration: DATABASE_URL must start with sqlite: or postgres://',
  );
}
