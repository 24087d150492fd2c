// Building blocks for HTTP-level specs: the real app on a real store, a controllable clock,
// keys with any roles, and request helpers. The store is SQLite in memory, or PostgreSQL in a
// schema of its own when TESSERA_TEST_STORE=postgres (the second pass of `npm test`).

import { Writable } from 'node:stream';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import { after, before } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { API_PREFIX, type AppOptions, buildApp } from '../src/app.js';
import type { Clock } from '../src/clock.js';
import { createMetrics } from '../src/http/metrics.js';
import { registerTypeBoxFormats } from '../src/http/formats.js';
import type { TokenSettings } from '../src/modules/tokens/token-settings.js';
import type { ConsoleOidcSettings } from '../src/modules/console/console-oidc.service.js';
import { ROLES, type Role } from '../src/roles.js';
import { createServices, type Services, type WebhookSettings } from '../src/services.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { openTestPostgresStore } from './postgres.js';

registerTypeBoxFormats();

// Every log line of every app this file builds, and every key secret it saw (issued, sent or
// returned): when the file's tests are done, no line may hold a secret. As every HTTP spec
// builds its apps here, this covers the logs of the whole suite.
const everyLog: Record<string, unknown>[][] = [];
const everySecret = new Set<string>();
// API keys, and webhook signing secrets (whsec_ + base64 of 32 bytes).
const SECRET_IN_TEXT = /tsr_[A-Za-z0-9_-]{43}|whsec_[A-Za-z0-9+/]{43}=/g;

// Registered at load, so it belongs to the file's root: it runs once, after every test of it.
after(() => {
  const text = everyLog
    .flat()
    .map((line) => JSON.stringify(line))
    .join('\n');
  const leaked = [...everySecret].filter((secret) => text.includes(secret));
  if (leaked.length > 0) {
    throw new Error(`${leaked.length} API key(s) appear in the app's logs`);
  }
  // Any key-shaped text at all is suspect, even one this file did not see issued.
  const shaped = text.match(SECRET_IN_TEXT) ?? [];
  if (shaped.length > 0) throw new Error(`${shaped.length} key-shaped strings in the logs`);
});

/** Which store buildTestApp uses by default. */
export const TEST_STORE: 'sqlite' | 'postgres' =
  process.env.TESSERA_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** A fresh, empty, unmigrated store of the kind this pass tests. */
export function openTestStore(): Promise<Store> {
  return TEST_STORE === 'postgres'
    ? openTestPostgresStore()
    : Promise.resolve(openSqliteStore({ path: ':memory:' }));
}

export const START_TIME = Date.parse('2026-01-01T00:00:00.000Z');

/** A clock that moves only when told to. */
export class TestClock implements Clock {
  constructor(private current = START_TIME) {}
  now(): number {
    return this.current;
  }
  advance(milliseconds: number): void {
    this.current += milliseconds;
  }
}

export interface TestContext {
  app: FastifyInstance;
  store: Store;
  services: Services;
  clock: TestClock;
  /** An all-roles, unrestricted key. */
  adminKey: string;
  /** Every log line the app wrote, as parsed JSON objects. */
  logs: Record<string, unknown>[];
  /** Creates a key directly (as the operator) and returns its secret. */
  createKey(grants?: {
    roles?: readonly Role[];
    applications?: readonly string[] | null;
    expiresAt?: number | null;
    name?: string;
  }): Promise<string>;
  close(): Promise<void>;
}

export async function buildTestApp(
  options: {
    rateLimitPerMinute?: number;
    /** Off unless a test sets it: many specs send wrong keys on purpose. */
    authFailuresPerMinute?: number;
    rateLimitRedis?: Redis;
    rateLimitRedisPrefix?: string;
    authFailuresRedisPrefix?: string;
    /** Count the limits in the store (as instances on one PostgreSQL do without Redis). */
    sharedLimits?: boolean;
    store?: Store;
    clock?: TestClock;
    logLevel?: string;
    tokens?: Partial<TokenSettings>;
    timeouts?: AppOptions['timeouts'];
    webhooks?: WebhookSettings;
    accessLog?: boolean;
    /** Console sign-in through an OpenID provider (test/console-oidc.test.ts). */
    consoleOidc?: ConsoleOidcSettings;
  } = {},
): Promise<TestContext> {
  const store = options.store ?? (await openTestStore());
  await store.migrate();
  const clock = options.clock ?? new TestClock();
  const logs: Record<string, unknown>[] = [];
  everyLog.push(logs);
  const logger = pino(
    { level: options.logLevel ?? 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
        }
        callback();
      },
    }),
  );
  const metrics = createMetrics({ version: 'test' });
  const services = createServices({
    store,
    clock,
    log: logger,
    metrics,
    tokens: {
      algorithm: 'ES256',
      issuer: 'https://iam.example.test',
      allowInsecureJwks: false,
      ...options.tokens,
    },
    ...(options.webhooks === undefined ? {} : { webhooks: options.webhooks }),
    ...(options.consoleOidc === undefined ? {} : { consoleOidc: options.consoleOidc }),
  });
  const app = await buildApp({
    store,
    services,
    logger,
    rateLimitPerMinute: options.rateLimitPerMinute ?? 0,
    authFailuresPerMinute: options.authFailuresPerMinute ?? 0,
    ...(options.authFailuresRedisPrefix === undefined
      ? {}
      : { authFailuresRedisPrefix: options.authFailuresRedisPrefix }),
    ...(options.rateLimitRedis === undefined ? {} : { rateLimitRedis: options.rateLimitRedis }),
    ...(options.rateLimitRedisPrefix === undefined
      ? {}
      : { rateLimitRedisPrefix: options.rateLimitRedisPrefix }),
    ...(options.sharedLimits === true ? { limitCounters: store.limits } : {}),
    trustProxy: false,
    version: 'test',
    metrics,
    ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
    ...(options.accessLog === undefined ? {} : { accessLog: options.accessLog }),
  });
  await app.ready();
  const createKey: TestContext['createKey'] = async (grants = {}) => {
    const issued = await services.apiKeys.createApiKey(
      'operator',
      {
        name: grants.name ?? 'test key',
        roles: grants.roles ?? ROLES,
        applications: grants.applications ?? null,
        expiresAt: grants.expiresAt ?? null,
      },
      CLI_ORIGIN,
    );
    everySecret.add(issued.secret);
    return issued.secret;
  };
  const adminKey = await createKey({ name: 'admin' });
  return {
    app,
    store,
    services,
    clock,
    adminKey,
    logs,
    createKey,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

/**
 * The app of the enclosing describe(): built (buildTestApp) before its first test, then set up
 * by `setup`, and closed after its last. The returned context stands for that app; it may be
 * used only inside tests and hooks, once the app exists.
 */
export function useTestApp(
  options: Parameters<typeof buildTestApp>[0] = {},
  setup?: (ctx: TestContext) => Promise<void>,
): TestContext {
  let current: TestContext | undefined;
  before(async () => {
    current = await buildTestApp(options);
    await setup?.(current);
  });
  after(() => current?.close());
  return new Proxy({} as TestContext, {
    get(_target, member) {
      if (current === undefined) {
        throw new Error('useTestApp: the app exists only in tests and hooks, after before()');
      }
      return current[member as keyof TestContext];
    },
  });
}

export interface CallOptions {
  /** The API key; defaults to the admin key. `null` sends no Authorization header. */
  key?: string | null;
  body?: unknown;
  /** Sent as-is, without JSON encoding. */
  rawBody?: string | Buffer;
  contentType?: string | null;
  headers?: Record<string, string>;
}

/** Calls the API under /iam/api/v1 (or an absolute path starting with //). */
export async function call(
  ctx: TestContext,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? ctx.adminKey : options.key;
  if (key !== null) headers.authorization = `apikey ${key}`;
  for (const sent of [key, headers.authorization]) {
    for (const secret of sent?.match(SECRET_IN_TEXT) ?? []) everySecret.add(secret);
  }
  let payload: string | Buffer | undefined;
  if (options.rawBody !== undefined) payload = options.rawBody;
  else if (options.body !== undefined) payload = JSON.stringify(options.body);
  if (payload !== undefined && options.contentType !== null) {
    headers['content-type'] =
      options.contentType ??
      (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
  }
  const url = path.startsWith('//') ? path.slice(1) : `${API_PREFIX}${path}`;
  for (const secret of url.match(SECRET_IN_TEXT) ?? []) everySecret.add(secret);
  const response = await ctx.app.inject({
    method: method as 'GET',
    url,
    headers,
    ...(payload === undefined ? {} : { payload }),
  });
  for (const secret of response.body.match(SECRET_IN_TEXT) ?? []) everySecret.add(secret);
  return response;
}

/** Percent-encodes one path segment (what a URL client does with an identifier). */
export const seg = encodeURIComponent;

export function userPath(clientId: string, provider: string, identifier: string): string {
  return `/applications/${seg(clientId)}/users/${seg(provider)}/${seg(identifier)}`;
}

export function applicationBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: 'billing-web',
    display_name: 'Billing',
    description: 'Invoices and payments',
    ...overrides,
  };
}

export function userBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    identifier: '108234823498234',
    provider: 'google_oauth2',
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    locale: 'en-GB',
    roles: ['admin'],
    scopes: ['org:acme'],
    ...overrides,
  };
}

/** Creates an application (default: billing-web) and fails loudly if that does not work. */
export async function createApplication(
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const response = await call(ctx, 'POST', '/applications', { body: applicationBody(overrides) });
  if (response.statusCode !== 201) {
    throw new Error(`could not create application: ${response.statusCode} ${response.body}`);
  }
  return response.json();
}

export async function createUser(
  ctx: TestContext,
  clientId: string,
  overrides: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const response = await call(ctx, 'POST', `/applications/${seg(clientId)}/users`, {
    body: userBody(overrides),
  });
  if (response.statusCode !== 201) {
    throw new Error(`could not create user: ${response.statusCode} ${response.body}`);
  }
  return response.json();
}

/** Asserts the RFC 9457 shape and returns the parsed problem. */
export function problemOf(response: LightMyRequestResponse, status: number) {
  if (response.statusCode !== status) {
    throw new Error(`expected ${status}, got ${response.statusCode}: ${response.body}`);
  }
  if (response.headers['content-type'] !== 'application/problem+json') {
    throw new Error(
      `expected application/problem+json, got ${String(response.headers['content-type'])}`,
    );
  }
  const body = response.json<{
    type: string;
    title: string;
    status: number;
    detail: string;
    instance: string;
    errors?: { pointer?: string; parameter?: string; detail: string }[];
  }>();
  for (const member of ['type', 'title', 'detail', 'instance'] as const) {
    if (typeof body[member] !== 'string')
      throw new Error(`problem lacks ${member}: ${response.body}`);
  }
  if (body.status !== status) throw new Error(`problem status ${body.status} != ${status}`);
  return body;
}

/**
 * Every route the app registered, as `METHOD /path/{param}` (HEAD, which Fastify adds to every
 * GET, left out), read from Fastify's own route tree.
 */
export function registeredRoutes(app: FastifyInstance): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (match === null) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const path = stack.join('').replace(/:([a-z_]+)/g, '{$1}');
    for (const method of match[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.push(`${method} ${path}`);
    }
  }
  return routes;
}
