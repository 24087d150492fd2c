// The only reader of process.env. The environment is checked against one schema; the typed
// Config is what loadConfig returns, so the two cannot drift apart.

import { dirname, resolve } from 'node:path';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const Environment = Type.Object({
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$', description: 'TCP port' })),
  HOST: Type.Optional(Type.String({ minLength: 1, description: 'listen address' })),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
      description: 'sqlite:<path>, sqlite::memory:, or postgres://…',
    }),
  ),
  IAM_BOOTSTRAP_API_KEY: Type.Optional(
    Type.String({
      pattern: '^[\\x21-\\x7e]{1,512}$',
      description: 'visible ASCII characters, no spaces (it travels in the Authorization header)',
    }),
  ),
  LOG_LEVEL: Type.Optional(Type.Union(LOG_LEVELS.map((level) => Type.Literal(level)))),
  IAM_RATE_LIMIT_PER_MINUTE: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,9}$',
      description: 'requests per minute per API key; 0 turns it off',
    }),
  ),
  IAM_TRUST_PROXY: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  IAM_DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
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
    const problems = Value.Errors(Environment, relevant).map((error) => {
      const name = error.instancePath.slice(1);
      const schema = (Environment.properties as Record<string, { description?: string }>)[name];
      return `${name} ${error.message}${schema?.description ? ` (${schema.description})` : ''}`;
    });
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
