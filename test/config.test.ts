import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { ROLES } from '../src/roles.js';

describe('loadConfig', () => {
  it('defaults to the embedded SQLite store on 127.0.0.1:8080', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.deepEqual(config.database, { kind: 'sqlite', path: resolve('data/tessera.db') });
    assert.equal(config.dataDir, resolve('data'));
    assert.equal(config.bootstrapApiKey, null);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.rateLimitPerMinute, 60_000);
    assert.equal(config.authFailuresPerMinute, 60);
    assert.equal(config.redisUrl, null);
    assert.equal(config.tokens.secretKey, null);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'sqlite:/var/lib/tessera/t.db',
      IAM_BOOTSTRAP_API_KEY: 'k'.repeat(40),
      LOG_LEVEL: 'debug',
      IAM_RATE_LIMIT_PER_MINUTE: '0',
      IAM_AUTH_FAILURES_PER_MINUTE: '10',
      IAM_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      IAM_TRUST_PROXY: 'true',
      REDIS_URL: 'redis://cache:6379/2',
    });
    assert.equal(config.port, 9000);
    assert.equal(config.host, '0.0.0.0');
    assert.deepEqual(config.database, { kind: 'sqlite', path: '/var/lib/tessera/t.db' });
    assert.equal(config.dataDir, '/var/lib/tessera');
    assert.equal(config.bootstrapApiKey, 'k'.repeat(40));
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.rateLimitPerMinute, 0);
    assert.equal(config.authFailuresPerMinute, 10);
    assert.deepEqual(config.tokens.secretKey, Buffer.alloc(32, 7));
    assert.equal(config.trustProxy, true);
    assert.equal(config.redisUrl, 'redis://cache:6379/2');
  });

  it('accepts a bootstrap key of 32 characters, the shortest allowed', () => {
    assert.equal(
      loadConfig({ IAM_BOOTSTRAP_API_KEY: 'k'.repeat(32) }).bootstrapApiKey,
      'k'.repeat(32),
    );
  });

  it('takes IAM_SECRET_KEY in base64url too', () => {
    const key = Buffer.alloc(32, 200);
    assert.deepEqual(
      loadConfig({ IAM_SECRET_KEY: key.toString('base64url') }).tokens.secretKey,
      key,
    );
  });

  it('treats empty variables as unset', () => {
    assert.equal(loadConfig({ PORT: '', IAM_BOOTSTRAP_API_KEY: '' }).port, 8080);
    assert.equal(loadConfig({ IAM_BOOTSTRAP_API_KEY: '' }).bootstrapApiKey, null);
  });

  it('understands every DATABASE_URL form', () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database, {
      kind: 'sqlite',
      path: ':memory:',
    });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:///srv/t.db' }).database, {
      kind: 'sqlite',
      path: '/srv/t.db',
    });
    for (const url of ['postgres://u@h/db', 'postgresql://u@h:5432/db']) {
      assert.deepEqual(loadConfig({ DATABASE_URL: url }).database, {
        kind: 'postgres',
        url,
        poolSize: 10,
        connectTimeoutMs: 2000,
        poolWaitMs: 10_000,
        statementTimeoutMs: 2000,
      });
    }
  });

  it('takes the PostgreSQL pool size and timeouts from the environment', () => {
    const { database } = loadConfig({
      DATABASE_URL: 'postgres://u@h/db',
      IAM_DB_POOL_SIZE: '25',
      IAM_DB_CONNECT_TIMEOUT_MS: '500',
      IAM_DB_POOL_WAIT_MS: '30000',
      IAM_DB_STATEMENT_TIMEOUT_MS: '15000',
    });
    assert.deepEqual(database, {
      kind: 'postgres',
      url: 'postgres://u@h/db',
      poolSize: 25,
      connectTimeoutMs: 500,
      poolWaitMs: 30000,
      statementTimeoutMs: 15000,
    });
  });

  const invalid: [string, Record<string, string>][] = [
    ['a non-numeric PORT', { PORT: 'eighty' }],
    ['a PORT above 65535', { PORT: '70000' }],
    ['an unknown database scheme', { DATABASE_URL: 'mysql://x' }],
    ['an empty SQLite path', { DATABASE_URL: 'sqlite:' }],
    ['a bootstrap key with a space', { IAM_BOOTSTRAP_API_KEY: 'two words' }],
    ['a two-character bootstrap key', { IAM_BOOTSTRAP_API_KEY: 'Q9' }],
    ['a bootstrap key of 31 characters', { IAM_BOOTSTRAP_API_KEY: 'k'.repeat(31) }],
    ['a negative failure limit', { IAM_AUTH_FAILURES_PER_MINUTE: '-5' }],
    ['a secret key of 16 bytes', { IAM_SECRET_KEY: Buffer.alloc(16).toString('base64') }],
    ['a secret key that is not base64', { IAM_SECRET_KEY: '!'.repeat(44) }],
    ['an unknown LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['a negative rate limit', { IAM_RATE_LIMIT_PER_MINUTE: '-1' }],
    ['a REDIS_URL without redis://', { REDIS_URL: 'cache:6379' }],
    ['a pool of 0 connections', { IAM_DB_POOL_SIZE: '0' }],
    ['a connect timeout in seconds', { IAM_DB_CONNECT_TIMEOUT_MS: '2s' }],
    ['a statement timeout of 0 (forever)', { IAM_DB_STATEMENT_TIMEOUT_MS: '0' }],
    ['a PostgreSQL URL that is not a URL', { DATABASE_URL: 'postgres://u:p@[bad/db' }],
    ['0 workers', { IAM_WORKERS: '0' }],
    ['100 workers', { IAM_WORKERS: '100' }],
    ['workers named in words', { IAM_WORKERS: 'all' }],
    ['workers on an in-memory database', { IAM_WORKERS: '2', DATABASE_URL: 'sqlite::memory:' }],
  ];
  for (const [name, env] of invalid) {
    it(`refuses ${name}, naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) =>
          error instanceof ConfigError &&
          Object.keys(env).some((name) => error.message.includes(name)),
      );
    });
  }

  it('never repeats a refused bootstrap key in its message', () => {
    assert.throws(
      () => loadConfig({ IAM_BOOTSTRAP_API_KEY: 'secret with spaces' }),
      (error: unknown) =>
        error instanceof ConfigError && !error.message.includes('secret with spaces'),
    );
  });
});

describe('loadConfig: access tokens', () => {
  it('defaults to ES256, the listen address as issuer, and the SSRF fence on', () => {
    assert.deepEqual(loadConfig({}).tokens, {
      algorithm: 'ES256',
      issuer: 'http://127.0.0.1:8080',
      allowInsecureJwks: false,
      secretKey: null,
      previousSecretKey: null,
    });
    assert.equal(loadConfig({ HOST: '::1', PORT: '9000' }).tokens.issuer, 'http://[::1]:9000');
  });

  it('reads IAM_TOKEN_ALG, IAM_ISSUER and IAM_ALLOW_INSECURE_JWKS', () => {
    const config = loadConfig({
      IAM_TOKEN_ALG: 'EdDSA',
      IAM_ISSUER: 'https://id.example.com/tessera',
      IAM_ALLOW_INSECURE_JWKS: 'true',
    });
    assert.deepEqual(config.tokens, {
      algorithm: 'EdDSA',
      issuer: 'https://id.example.com/tessera',
      allowInsecureJwks: true,
      secretKey: null,
      previousSecretKey: null,
    });
  });

  it('reads IAM_SECRET_KEY_PREVIOUS beside IAM_SECRET_KEY', () => {
    const current = Buffer.alloc(32, 1);
    const previous = Buffer.alloc(32, 2);
    const { tokens } = loadConfig({
      IAM_SECRET_KEY: current.toString('base64'),
      IAM_SECRET_KEY_PREVIOUS: previous.toString('base64url'),
    });
    assert.deepEqual([tokens.secretKey, tokens.previousSecretKey], [current, previous]);
  });

  it('flags an issuer derived from a wildcard listen address', () => {
    for (const host of ['0.0.0.0', '::']) {
      assert.equal(loadConfig({ HOST: host }).issuerFromWildcardHost, true, host);
      assert.equal(
        loadConfig({ HOST: host, IAM_ISSUER: 'https://iam.example.com' }).issuerFromWildcardHost,
        false,
      );
    }
    assert.equal(loadConfig({ HOST: '10.0.0.5' }).issuerFromWildcardHost, false);
    assert.equal(loadConfig({}).issuerFromWildcardHost, false);
  });

  for (const [name, value] of [
    ['IAM_TOKEN_ALG', 'HS256'],
    ['IAM_TOKEN_ALG', 'none'],
    ['IAM_ISSUER', 'https://id.example.com/'],
    ['IAM_ISSUER', 'https://id.example.com?x=1'],
    ['IAM_ISSUER', 'ftp://id.example.com'],
    ['IAM_ALLOW_INSECURE_JWKS', 'yes'],
  ] as const) {
    it(`refuses ${name}=${value}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: Error) => error instanceof ConfigError && error.message.includes(name),
      );
    });
  }
});

describe('audit trail settings', () => {
  it('keeps events 90 days and logs every request unless told otherwise', () => {
    const defaults = loadConfig({});
    assert.equal(defaults.eventRetentionDays, 90);
    assert.equal(defaults.accessLog, true);
    const set = loadConfig({ IAM_EVENT_RETENTION_DAYS: '7', IAM_ACCESS_LOG: 'false' });
    assert.equal(set.eventRetentionDays, 7);
    assert.equal(set.accessLog, false);
    assert.throws(() => loadConfig({ IAM_EVENT_RETENTION_DAYS: '0' }), /IAM_EVENT_RETENTION_DAYS/);
    assert.throws(() => loadConfig({ IAM_ACCESS_LOG: 'yes' }), /IAM_ACCESS_LOG/);
  });
});

describe('log format and the metrics listener', () => {
  it('serves from one process unless IAM_WORKERS says how many, auto being one per core', () => {
    assert.equal(loadConfig({}).workers, 1);
    assert.equal(loadConfig({ IAM_WORKERS: '3' }).workers, 3);
    assert.equal(loadConfig({ IAM_WORKERS: 'auto' }).workers, availableParallelism());
    assert.throws(
      () => loadConfig({ IAM_WORKERS: '-1' }),
      /^ConfigError: invalid configuration: IAM_WORKERS must be a whole number of processes from 1 to 99, or auto/,
    );
  });

  it('logs JSON unless LOG_FORMAT=pretty', () => {
    assert.equal(loadConfig({}).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'text' }), /LOG_FORMAT must be json .* or pretty/);
  });

  it('serves /metrics on the public port unless IAM_METRICS_PORT is set', () => {
    assert.equal(loadConfig({}).metricsListener, null);
    assert.deepEqual(loadConfig({ IAM_METRICS_PORT: '9464' }).metricsListener, {
      port: 9464,
      host: '127.0.0.1',
    });
    // The metrics listener listens where the API does, unless told otherwise.
    assert.deepEqual(loadConfig({ HOST: '0.0.0.0', IAM_METRICS_PORT: '9464' }).metricsListener, {
      port: 9464,
      host: '0.0.0.0',
    });
    assert.deepEqual(
      loadConfig({ HOST: '0.0.0.0', IAM_METRICS_PORT: '9464', IAM_METRICS_HOST: '10.0.0.5' })
        .metricsListener,
      { port: 9464, host: '10.0.0.5' },
    );
  });

  it('refuses a metrics port equal to PORT, out of range, or a host without a port', () => {
    assert.throws(
      () => loadConfig({ PORT: '9000', IAM_METRICS_PORT: '9000' }),
      /IAM_METRICS_PORT must differ from PORT/,
    );
    assert.throws(() => loadConfig({ IAM_METRICS_PORT: '8080' }), /must differ from PORT/);
    assert.throws(
      () => loadConfig({ IAM_METRICS_PORT: '70000' }),
      /IAM_METRICS_PORT must be at most 65535/,
    );
    assert.throws(
      () => loadConfig({ IAM_METRICS_PORT: 'x' }),
      /IAM_METRICS_PORT must be a TCP port/,
    );
    assert.throws(
      () => loadConfig({ IAM_METRICS_HOST: '127.0.0.1' }),
      /IAM_METRICS_HOST is set but IAM_METRICS_PORT is not/,
    );
  });
});

describe('console sign-in through an OpenID provider (IAM_CONSOLE_OIDC_*)', () => {
  const provider = {
    IAM_CONSOLE_OIDC_ISSUER: 'https://sso.example.com/realms/staff',
    IAM_CONSOLE_OIDC_CLIENT_ID: 'tessera-console',
    IAM_CONSOLE_OIDC_CLIENT_SECRET: 'a secret',
  };

  it('is off unless the issuer is set', () => {
    assert.equal(loadConfig({}).consoleOidc, null);
  });

  it('defaults the roles claim, the scopes, the name and the redirect URI (from IAM_ISSUER)', () => {
    const settings = loadConfig({
      ...provider,
      IAM_ISSUER: 'https://iam.example.com',
    }).consoleOidc!;
    assert.equal(settings.issuer, 'https://sso.example.com/realms/staff');
    assert.equal(settings.clientId, 'tessera-console');
    assert.equal(settings.clientSecret, 'a secret');
    assert.equal(settings.redirectUri, 'https://iam.example.com/console/oidc/callback');
    assert.equal(settings.providerName, 'sso.example.com');
    assert.deepEqual(settings.scopes, ['openid', 'profile', 'email']);
    assert.equal(settings.rolesClaim, 'roles');
    assert.equal(settings.roleMap.size, 0);
    assert.equal(settings.applicationsClaim, null);
    assert.equal(settings.allowHttp, false);
  });

  it('reads every variable; the role map gives roles, * every role', () => {
    const settings = loadConfig({
      ...provider,
      IAM_CONSOLE_OIDC_NAME: 'Example SSO',
      IAM_CONSOLE_OIDC_SCOPES: 'profile groups',
      IAM_CONSOLE_OIDC_ROLES_CLAIM: 'realm_access.roles',
      IAM_CONSOLE_OIDC_ROLE_MAP: 'tessera-admins=*; support=users:read,users:write',
      IAM_CONSOLE_OIDC_APPLICATIONS_CLAIM: 'tessera_applications',
      IAM_CONSOLE_OIDC_REDIRECT_URI: 'https://admin.example.com/iam/console/oidc/callback',
    }).consoleOidc!;
    assert.equal(settings.providerName, 'Example SSO');
    assert.deepEqual(settings.scopes, ['openid', 'profile', 'groups']);
    assert.equal(settings.rolesClaim, 'realm_access.roles');
    assert.deepEqual(settings.roleMap.get('tessera-admins'), [...ROLES]);
    assert.deepEqual(settings.roleMap.get('support'), ['users:read', 'users:write']);
    assert.equal(settings.applicationsClaim, 'tessera_applications');
    assert.equal(settings.redirectUri, 'https://admin.example.com/iam/console/oidc/callback');
  });

  it('takes a plain-http issuer on a loopback address only', () => {
    const local = { ...provider, IAM_CONSOLE_OIDC_ISSUER: 'http://127.0.0.1:9000' };
    assert.equal(loadConfig(local).consoleOidc!.allowHttp, true);
    assert.throws(
      () => loadConfig({ ...provider, IAM_CONSOLE_OIDC_ISSUER: 'http://sso.example.com' }),
      /IAM_CONSOLE_OIDC_ISSUER must be an https URL/,
    );
  });

  it('refuses a partial or wrong configuration, naming the variable, never the secret', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { IAM_CONSOLE_OIDC_CLIENT_ID: 'x' },
        /IAM_CONSOLE_OIDC_CLIENT_ID is set but IAM_CONSOLE_OIDC_ISSUER is not/,
      ],
      [
        { ...provider, IAM_CONSOLE_OIDC_CLIENT_SECRET: '' },
        /IAM_CONSOLE_OIDC_CLIENT_SECRET is not/,
      ],
      [
        { ...provider, IAM_CONSOLE_OIDC_ROLE_MAP: 'admins=superuser' },
        /IAM_CONSOLE_OIDC_ROLE_MAP.*not a role: superuser/,
      ],
      [
        { ...provider, IAM_CONSOLE_OIDC_ROLE_MAP: 'admins' },
        /IAM_CONSOLE_OIDC_ROLE_MAP must be entries/,
      ],
      [
        { ...provider, IAM_CONSOLE_OIDC_REDIRECT_URI: 'https://iam.example.com/callback' },
        /IAM_CONSOLE_OIDC_REDIRECT_URI must be/,
      ],
      [
        { ...provider, IAM_CONSOLE_OIDC_ISSUER: 'sso.example.com' },
        /IAM_CONSOLE_OIDC_ISSUER must be/,
      ],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => message.test(error.message) && !error.message.includes('a secret'),
        JSON.stringify(env),
      );
    }
  });
});
