// The only reader of process.env. The environment is checked against one schema; the typed
// Config is what loadConfig returns, so the two cannot drift apart.

import { dirname, resolve } from 'node:path';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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
      pattern: '^[\\x21-\\x7e]{1,512}$',
      description: '1–512 visible ASCII characters without spaces (it travels in a header)',
    }),
  ),
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
  IAM_TRUST_PROXY: Type.Optional(
    Type.Unsafe<'true' | 'false'>({
      type: 'string',
      enum: ['true', 'false'],
      description: 'true or false',
    }),
  ),
  IAM_DATA_DIR: Type.Optional(Type.String({ minLength: 1, description: 'a directory path' })),
});

type Environment = Static<typeof Environment>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

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
  const database = parseDatabaseUrl(vars.DATABASE_URL ?? defaultDatabaseUrl);

  return {
    port,
    host: vars.HOST ?? '127.0.0.1',
    database,
    /** Where the first-start admin key file goes: beside the SQLite file, else ./data. */
    dataDir: resolve(
      vars.IAM_DATA_DIR ??
        (database.kind === 'sqlite' && database.path !== ':memory:'
          ? dirname(database.path)
          : './data'),
    ),
    bootstrapApiKey: vars.IAM_BOOTSTRAP_API_KEY ?? null,
    logLevel: vars.LOG_LEVEL ?? 'info',
    rateLimitPerMinute: Number(vars.IAM_RATE_LIMIT_PER_MINUTE ?? 60_000),
    trustProxy: vars.IAM_TRUST_PROXY === 'true',
  };
}

/** `sqlite:<path>`, `sqlite:///abs/path`, `sqlite::memory:`, `postgres://…`, `postgresql://…`. */
export function parseDatabaseUrl(url: string): DatabaseConfig {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    return { kind: 'postgres', url };
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
