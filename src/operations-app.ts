// The operations listener (IAM_METRICS_PORT): /metrics, /healthz and /readyz on a port of
// their own, so the public port need not show the metrics (route patterns, key-refusal counts,
// backlog sizes) to the internet, and a scraper reaches them on a network of its own. Built
// apart from the API app, with the same health routes and the same problem documents.

import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Registry } from 'prom-client';
import { registerErrorHandling } from './http/error-handler.js';
import { indexRoutes } from './http/route-index.js';
import { registerHealthRoutes } from './modules/health/health.routes.js';
import type { Store } from './store/store.js';

export async function buildOperationsApp(deps: {
  store: Store;
  metrics: Registry;
  logger: FastifyBaseLogger;
}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({
      disableRequestLogging: true,
      requestIdLogLabel: 'request_id',
    }),
    // Nothing here reads a body; a scraper sends none.
    bodyLimit: 1024,
    forceCloseConnections: 'idle',
  });
  const routes = indexRoutes(app, 100);
  registerErrorHandling(app, routes);
  registerHealthRoutes(app, { store: deps.store, metrics: deps.metrics, serveMetrics: true });
  await app.ready();
  return app;
}
