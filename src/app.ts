// The composition root: every service, every module and every cross-cutting piece of the
// HTTP API is wired here, in one place, by name. The app is built apart from the server
// that listens (main.ts), so tests drive it through inject().

import { randomBytes, randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Clock } from './clock.js';
import { registerAuthentication } from './http/auth.js';
import { registerJsonBodies } from './http/content-types.js';
import {
  answerConnect,
  handleClientError,
  registerErrorHandling,
  sendProblem,
  toProblem,
} from './http/error-handler.js';
import { createMetricsRegistry, registerRequestMetrics } from './http/metrics.js';
import { CURSOR_SECRET_SETTING, CursorCodec } from './http/pagination.js';
import { indexRoutes } from './http/route-index.js';
import { createValidatorCompiler } from './http/validation.js';
import { ApiKeyAuthenticator } from './modules/api-keys/api-key-authenticator.js';
import { registerApiKeyRoutes } from './modules/api-keys/api-keys.routes.js';
import { ApiKeysService } from './modules/api-keys/api-keys.service.js';
import { registerApplicationRoutes } from './modules/applications/applications.routes.js';
import { ApplicationsService } from './modules/applications/applications.service.js';
import { registerHealthRoutes } from './modules/health/health.routes.js';
import { registerUserRoutes } from './modules/users/users.routes.js';
import { UsersService } from './modules/users/users.service.js';
import { problem } from './problems.js';
import type { Store } from './store/store.js';

export const API_PREFIX = '/iam/api/v1';
export const BODY_LIMIT_BYTES = 256 * 1024;
/** Long enough for a 256-character identifier percent-encoded as 4-byte UTF-8 (12 bytes each). */
const MAX_PARAM_LENGTH = 8192;

export interface Services {
  authenticator: ApiKeyAuthenticator;
  applications: ApplicationsService;
  users: UsersService;
  apiKeys: ApiKeysService;
}

export function createServices(deps: {
  store: Store;
  clock: Clock;
  log: FastifyBaseLogger;
}): Services {
  const { store, clock, log } = deps;
  const authenticator = new ApiKeyAuthenticator(
    { store, clock },
    { onTouchFailed: (error) => log.warn({ err: error }, 'could not record an API key use') },
  );
  return {
    authenticator,
    applications: new ApplicationsService({ store, clock }),
    users: new UsersService({ store, clock }),
    apiKeys: new ApiKeysService({ store, clock, authenticator }),
  };
}

export interface AppOptions {
  store: Store;
  services: Services;
  logger: FastifyBaseLogger;
  /** Requests per minute per API key; 0: no limit. */
  rateLimitPerMinute: number;
  trustProxy: boolean;
  version: string;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { store, services } = options;
  const app = Fastify({
    loggerInstance: options.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
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
    requestTimeout: 30_000,
    keepAliveTimeout: 72_000,
    clientErrorHandler: handleClientError,
    http: { requireHostHeader: false },
    frameworkErrors: function reportFrameworkError(error, request, reply) {
      sendProblem(request, reply, toProblem(error));
    },
  });
  app.setValidatorCompiler(createValidatorCompiler());

  const routeIndex = indexRoutes(app, MAX_PARAM_LENGTH);
  const metrics = createMetricsRegistry();
  registerRequestMetrics(app, metrics);
  registerErrorHandling(app, routeIndex);
  let closing = false;
  app.addHook('preClose', function markClosing(done) {
    closing = true;
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
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400. Node's own check answers
    // with an empty body, so it is turned off (requireHostHeader) and done here instead.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(problem('malformed-request', 'An HTTP/1.1 request needs a Host header.'));
      return;
    }
    done();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tessera',
        version: options.version,
        description:
          'Identity and access management: applications, their users, and the API keys that manage them.',
      },
      components: {
        securitySchemes: {
          apiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Send `Authorization: apikey <KEY>` (enter `apikey <KEY>` here).',
          },
        },
      },
      tags: [
        { name: 'applications', description: 'Client systems registered with Tessera' },
        { name: 'users', description: "An application's users" },
        { name: 'api-keys', description: 'Keys that authorise calls to this API' },
        { name: 'operations', description: 'Health, readiness and metrics' },
      ],
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    theme: { title: 'Tessera API reference' },
  });
  // CONNECT (a proxy tunnel request) never reaches routing; without a listener Node drops
  // the connection silently.
  app.server.on('connect', answerConnect);
  app.get('/openapi.json', { schema: { hide: true } }, function serveOpenApi() {
    return app.swagger();
  });

  registerJsonBodies(app);
  registerHealthRoutes(app, { store, metrics });

  const cursors = new CursorCodec(
    await store.settings.getOrCreateSetting(
      CURSOR_SECRET_SETTING,
      randomBytes(32).toString('base64url'),
    ),
  );

  await app.register(
    async function api(scope) {
      registerAuthentication(scope, (secret) => services.authenticator.authenticate(secret));
      if (options.rateLimitPerMinute > 0) {
        await scope.register(rateLimit, {
          max: options.rateLimitPerMinute,
          timeWindow: 60_000,
          // Runs after authentication (route-level hooks follow instance-level ones), so it
          // counts per key; requests without a valid key were refused before reaching it.
          keyGenerator: (request) => request.apiKey!.id,
          enableDraftSpec: true,
          errorResponseBuilder: (_request, context) =>
            problem(
              'rate-limited',
              `More than ${context.max} requests per minute; retry in ${context.after}.`,
            ),
        });
      }
      registerApplicationRoutes(scope, { applications: services.applications, cursors });
      registerUserRoutes(scope, { users: services.users, cursors });
      registerApiKeyRoutes(scope, { apiKeys: services.apiKeys, cursors });
    },
    { prefix: API_PREFIX },
  );

  return app;
}
