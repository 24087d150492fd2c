// The composition root: every module and every cross-cutting piece of the HTTP API is wired
// here, in one place, by name, over the services that services.ts composes. The app is built
// apart from the server that listens (main.ts), so tests drive it through inject().

import { randomBytes, randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Redis } from 'ioredis';
import { type Authenticate, registerAuthentication } from './http/auth.js';
import { AuthFailureLimiter } from './http/auth-failures.js';
import { BODY_LIMITS, closeUnreadLargeBodies } from './http/body-limits.js';
import { registerJsonBodies } from './http/content-types.js';
import {
  answerConnect,
  handleClientError,
  registerErrorHandling,
  sendProblem,
  toProblem,
  trailingSlashProblem,
  unknownRouteProblem,
} from './http/error-handler.js';
import { finishDocument } from './http/openapi.js';
import {
  type AuthFailureReason,
  type Metrics,
  createMetrics,
  registerRequestMetrics,
  registerStoreMetrics,
  registerWebhookMetrics,
} from './http/metrics.js';
import { CURSOR_SECRET_SETTING, CursorCodec } from './http/pagination.js';
import { registerAccessLog } from './http/logging.js';
import { registerRateLimit } from './http/rate-limit.js';
import { pruneSharedCountersPeriodically } from './http/shared-counters.js';
import { indexRoutes } from './http/route-index.js';
import { createValidatorCompiler } from './http/validation.js';
import { registerApiKeyRoutes } from './modules/api-keys/api-keys.routes.js';
import { registerApplicationRoutes } from './modules/applications/applications.routes.js';
import {
  registerAuthzenMetadata,
  registerAuthzenRoutes,
} from './modules/authzen/authzen.routes.js';
import { registerEventRoutes } from './modules/events/events.routes.js';
import { CONSOLE_CSP, registerConsole } from './modules/console/console.routes.js';
import { registerHealthRoutes } from './modules/health/health.routes.js';
import { TOKEN_ENDPOINT, registerOAuthRoutes } from './modules/tokens/oauth.routes.js';
import { registerSigningKeyRoutes } from './modules/tokens/signing-keys.routes.js';
import { registerTokenRoutes } from './modules/tokens/tokens.routes.js';
import { registerScimGroupRoutes } from './modules/scim/scim-groups.routes.js';
import { SCIM_PREFIX, prepareScimScope } from './modules/scim/scim.http.js';
import { registerScimRoutes } from './modules/scim/scim.routes.js';
import { registerUserRoutes } from './modules/users/users.routes.js';
import { registerImportRoutes } from './modules/imports/imports.routes.js';
import { registerWebhookRoutes } from './modules/webhooks/webhooks.routes.js';
import { type ProblemError, problem } from './problems.js';
import type { Services } from './services.js';
import type { LimitCounterRepository, Store } from './store/store.js';

export const API_PREFIX = '/iam/api/v1';
/**
 * Slow clients are cut off (408): the headers must arrive within 10 s of the connection (or of
 * the previous response), the whole request within 30 s; Node checks every second.
 */
export const HTTP_TIMEOUTS = { headersMs: 10_000, requestMs: 30_000, checkIntervalMs: 1_000 };
/** Long enough for a 256-character identifier percent-encoded as 4-byte UTF-8 (12 bytes each). */
const MAX_PARAM_LENGTH = 8192;

export interface AppOptions {
  store: Store;
  services: Services;
  logger: FastifyBaseLogger;
  /** Requests per minute per API key; 0: no limit. */
  rateLimitPerMinute: number;
  /** Failed authentications per minute per client address (API keys, /oauth2/token); 0: no limit. */
  authFailuresPerMinute: number;
  /** Shared rate-limit and failure counters (REDIS_URL); undefined: see limitCounters. */
  rateLimitRedis?: Redis;
  rateLimitRedisPrefix?: string;
  authFailuresRedisPrefix?: string;
  /**
   * The database's counters, shared by the instances on it (PostgreSQL), for the limits when
   * there is no Redis; undefined (and no Redis): this instance's memory.
   */
  limitCounters?: LimitCounterRepository;
  trustProxy: boolean;
  version: string;
  /** The metrics /metrics serves, shared with the services; made here when not given. */
  metrics?: Metrics;
  /** One info line per request (IAM_ACCESS_LOG); off unless set. */
  accessLog?: boolean;
  /**
   * Serve /metrics here (default); false when it has a listener of its own (IAM_METRICS_PORT,
   * operations-app.ts), so the public port does not show it.
   */
  serveMetrics?: boolean;
  /** Overrides HTTP_TIMEOUTS (tests use short ones). */
  timeouts?: Partial<typeof HTTP_TIMEOUTS>;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The CSP of /docs: @fastify/swagger-ui's, without outside hosts, framing or forms. */
export function strictDocsPolicy(policy: string): string {
  const directives = policy
    .split(';')
    .map((directive) => directive.trim())
    .filter((directive) => directive !== '' && directive !== 'upgrade-insecure-requests')
    .map((directive) =>
      directive
        .split(/\s+/)
        .filter((token) => token !== 'https:' && token !== 'validator.swagger.io')
        .join(' '),
    )
    .map((directive) =>
      directive.startsWith('frame-ancestors ') || directive.startsWith('base-uri ')
        ? `${directive.split(' ')[0]} 'none'`
        : directive,
    );
  return [...directives, "form-action 'none'"].join('; ');
}

/** What makes a request unreadable whatever its route, or null. */
function refuseMalformed(request: FastifyRequest): ProblemError | null {
  const { raw } = request;
  // HTTP/0.9 has no headers, so no Host, no key and no status line in the answer.
  if (raw.httpVersionMajor === 0) {
    return problem('http-version-not-supported', 'HTTP/0.9 is not supported; use HTTP/1.1.', {
      headers: { connection: 'close' },
    });
  }
  // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400. Node's own check answers
  // with an empty body, so it is turned off (requireHostHeader) and done here instead.
  if (raw.httpVersion === '1.1' && request.headers.host === undefined) {
    return problem('malformed-request', 'An HTTP/1.1 request needs a Host header.');
  }
  // Node keeps the first of two Authorization headers; which one a proxy or a log saw is
  // then anyone's guess (RFC 9110 §5.3: it is not a list), so both are refused.
  let authorizations = 0;
  for (let index = 0; index < raw.rawHeaders.length; index += 2) {
    if (raw.rawHeaders[index]!.toLowerCase() === 'authorization' && ++authorizations > 1) {
      return problem('malformed-request', 'Send one Authorization header, not several.');
    }
  }
  return null;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { store, services } = options;
  const timeouts = { ...HTTP_TIMEOUTS, ...options.timeouts };
  const app = Fastify({
    loggerInstance: options.logger,
    // One name for the request id in every line a request logs: the access log's, the
    // events' and the X-Request-Id header's.
    logController: new LogController({
      disableRequestLogging: true,
      requestIdLogLabel: 'request_id',
    }),
    // Each route that takes a body names its own limit (http/body-limits.ts); this is the rest's.
    bodyLimit: BODY_LIMITS.default,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A caller's X-Request-Id is kept when it is a plain token, so logs correlate across services.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    trustProxy: options.trustProxy,
    // Requests arriving while stopping get a problem document from checkRequestBasics.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: 72_000,
    clientErrorHandler: handleClientError,
    http: {
      requireHostHeader: false,
      headersTimeout: timeouts.headersMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
    },
    frameworkErrors: function reportFrameworkError(error, request, reply) {
      sendProblem(request, reply, toProblem(error, request));
    },
  });
  app.setValidatorCompiler(createValidatorCompiler());

  const routeIndex = indexRoutes(app, MAX_PARAM_LENGTH);
  const metrics = options.metrics ?? createMetrics({ version: options.version });
  registerStoreMetrics(metrics, store);
  registerWebhookMetrics(metrics, store, services.consoleSessions.clock);
  registerRequestMetrics(app, metrics.registry, { tokenEndpoint: TOKEN_ENDPOINT });
  registerErrorHandling(app, routeIndex);
  closeUnreadLargeBodies(app);
  if (options.accessLog === true) registerAccessLog(app);
  let closing = false;
  app.addHook('preClose', function markClosing(done) {
    closing = true;
    services.events.stopWaiting();
    done();
  });
  // Webhook delivery runs while the app does; in-flight attempts finish (briefly) on close.
  app.addHook('onReady', function startWebhookDelivery(done) {
    services.webhookDispatcher.start();
    done();
  });
  app.addHook('preClose', async function stopWebhookDelivery() {
    await services.webhookDispatcher.stop();
  });
  // A write this instance acknowledged has committed its events: deliver them now rather
  // than at the next poll.
  app.addHook('onResponse', function wakeWebhookDelivery(request, reply, done) {
    if (request.method !== 'GET' && request.method !== 'HEAD' && reply.statusCode < 400) {
      services.webhookDispatcher.wake();
    }
    done();
  });
  app.addHook('onRequest', function checkRequestBasics(request, reply, done) {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (closing) {
      const detail =
        'This instance is stopping; retry (another instance, or this one after restart).';
      done(
        problem('shutting-down', detail, { headers: { 'retry-after': '1', connection: 'close' } }),
      );
      return;
    }
    const failure =
      refuseMalformed(request) ??
      trailingSlashProblem(request, API_PREFIX) ??
      // A request no route serves is answered before its body is read: Node then discards
      // the body as it arrives, holding none of it.
      (request.is404 ? unknownRouteProblem(request, routeIndex) : null);
    if (failure !== null) {
      done(failure);
      return;
    }
    done();
  });

  await app.register(swagger, {
    // Named schemas become components, custom formats standard ones (http/openapi.ts).
    transformObject: (documents) =>
      'openapiObject' in documents
        ? finishDocument(documents.openapiObject)
        : documents.swaggerObject,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tessera',
        version: options.version,
        description:
          'Identity and access management: applications, their users, and the API keys that manage them.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // This server, wherever it runs: Swagger UI's "Try it out" calls the origin it was loaded from.
      servers: [{ url: '/', description: 'This Tessera instance' }],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Send `Authorization: apikey <KEY>` (enter `apikey <KEY>` here).',
          },
          bearerApiKey: {
            type: 'http',
            scheme: 'bearer',
            description:
              'SCIM and AuthZEN: an API key sent as `Authorization: Bearer <KEY>` (`apikey` works too).',
          },
        },
      },
      tags: [
        { name: 'applications', description: 'Client systems registered with Tessera' },
        { name: 'users', description: "An application's users" },
        { name: 'imports', description: 'Users in and out in bulk: import jobs and exports' },
        { name: 'api-keys', description: 'Keys that authorise calls to this API' },
        { name: 'operations', description: 'Health, readiness and metrics' },
        { name: 'tokens', description: 'Access tokens, their keys, and token exchange' },
        { name: 'webhooks', description: 'Events pushed to your endpoints, signed' },
        { name: 'events', description: 'The audit trail and change feed' },
        {
          name: 'scim',
          description: 'SCIM 2.0 provisioning (RFC 7643, 7644) at /scim/v2/<client_id>',
        },
        {
          name: 'authorization',
          description:
            'Authorization decisions (OpenID AuthZEN Authorization API 1.0) at /access/v1: may a user take an action?',
        },
      ],
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    theme: { title: 'Tessera API reference' },
    // The plugin's policy (hashes of its inline scripts), made strict: everything from this
    // origin only, never framed (clickjacking), no form posts, no upgrade of plain-HTTP loopback.
    staticCSP: true,
    transformStaticCSP: strictDocsPolicy,
    uiHooks: {
      onRequest: function guardDocs(_request, reply, done) {
        reply.header('x-frame-options', 'DENY');
        reply.header('referrer-policy', 'no-referrer');
        done();
      },
    },
  });
  // CONNECT (a proxy tunnel request) never reaches routing; without a listener Node drops
  // the connection silently.
  app.server.on('connect', answerConnect);
  app.get('/openapi.json', { schema: { hide: true } }, function serveOpenApi() {
    return app.swagger();
  });
  // A browser pointed at the bare address lands on the admin console.
  app.get('/', { schema: { hide: true } }, function redirectToConsole(_request, reply) {
    reply.header('content-security-policy', CONSOLE_CSP);
    return reply.redirect('/console', 302);
  });

  // Limits counted in the database the instances share, when they share no Redis.
  const shared =
    options.limitCounters === undefined || options.rateLimitRedis !== undefined
      ? undefined
      : { counters: options.limitCounters, now: () => Date.now() };
  if (shared !== undefined) {
    const stopPruning = pruneSharedCountersPeriodically(shared, (error) =>
      app.log.warn({ reason: (error as Error).message }, 'could not prune limit counters'),
    );
    app.addHook('onClose', async function stopPruningCounters() {
      stopPruning();
    });
  }
  const failureLimiter = (purpose: string) =>
    new AuthFailureLimiter({
      perMinute: options.authFailuresPerMinute,
      purpose,
      ...(options.rateLimitRedis === undefined ? {} : { redis: options.rateLimitRedis }),
      ...(options.authFailuresRedisPrefix === undefined
        ? {}
        : { redisPrefix: options.authFailuresRedisPrefix }),
      ...(shared === undefined ? {} : { shared }),
    });
  const rateLimit = {
    perMinute: options.rateLimitPerMinute,
    ...(options.rateLimitRedis === undefined ? {} : { redis: options.rateLimitRedis }),
    ...(options.rateLimitRedisPrefix === undefined
      ? {}
      : { redisPrefix: options.rateLimitRedisPrefix }),
    ...(shared === undefined ? {} : { shared }),
  };

  // API keys fail alike under /iam/api/v1 and /scim/v2: one count per address for both.
  const apiKeyFailures = failureLimiter('api-key');

  registerJsonBodies(app);
  registerHealthRoutes(app, {
    store,
    metrics: metrics.registry,
    serveMetrics: options.serveMetrics !== false,
  });
  await registerConsole(app, {
    services,
    sessions: services.consoleSessions,
    clock: services.consoleSessions.clock,
    failures: apiKeyFailures,
    oidc: services.consoleOidc,
  });
  registerOAuthRoutes(app, {
    ...services,
    failures: failureLimiter('token'),
    onExchange: (outcome, failedCheck) => metrics.tokenExchanged(outcome, failedCheck),
  });
  const onAuthFailure = (reason: AuthFailureReason) => metrics.authenticationFailed(reason);
  const authenticate: Authenticate = (secret) => services.authenticator.verify(secret);

  const cursors = new CursorCodec(
    await store.settings.getOrCreateSetting(
      CURSOR_SECRET_SETTING,
      randomBytes(32).toString('base64url'),
    ),
  );

  await app.register(
    async function api(scope) {
      registerAuthentication(scope, authenticate, apiKeyFailures, undefined, onAuthFailure);
      await registerRateLimit(scope, rateLimit);
      registerApplicationRoutes(scope, { applications: services.applications, cursors });
      registerUserRoutes(scope, { users: services.users, cursors });
      // A scope of their own: their bodies are streams, not the JSON of every other route.
      await scope.register(async function importRoutes(imports) {
        registerImportRoutes(imports, {
          imports: services.imports,
          users: services.users,
          cursors,
          clock: services.consoleSessions.clock,
        });
      });
      registerApiKeyRoutes(scope, { apiKeys: services.apiKeys, cursors });
      registerTokenRoutes(scope, services);
      registerSigningKeyRoutes(scope, services);
      registerWebhookRoutes(scope, { webhooks: services.webhooks, cursors });
      registerEventRoutes(scope, services);
    },
    { prefix: API_PREFIX },
  );

  registerAuthzenMetadata(app, { issuer: services.accessTokens.issuer });
  await app.register(async function authzen(scope) {
    // AuthZEN's PEPs authenticate like OAuth clients (Bearer); Tessera's apikey works too.
    registerAuthentication(
      scope,
      authenticate,
      apiKeyFailures,
      { accepted: ['bearer', 'apikey'], challenge: 'Bearer' },
      onAuthFailure,
    );
    await registerRateLimit(scope, rateLimit);
    registerAuthzenRoutes(scope, { authzen: services.authzen, cursors });
  });

  await app.register(
    async function scim(scope) {
      await prepareScimScope(scope, {
        authenticate,
        onAuthFailure,
        failures: apiKeyFailures,
        rateLimit,
        routes: routeIndex,
      });
      registerScimRoutes(scope, { scim: services.scim, groups: services.scimGroups, cursors });
      registerScimGroupRoutes(scope, { scim: services.scim, groups: services.scimGroups, cursors });
    },
    { prefix: SCIM_PREFIX },
  );

  return app;
}
