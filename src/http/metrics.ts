// Prometheus metrics: request count and latency by route pattern and status, plus the
// process defaults. Labels use the route pattern, never the raw URL, to bound cardinality.

import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isDebugEnabled } from './logging.js';
import { requestPath } from './request-path.js';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tessera_' });
  return registry;
}

export function registerRequestMetrics(app: FastifyInstance, registry: Registry): void {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'tessera_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tessera_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its response',
    labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  app.addHook('onResponse', function recordRequest(request, reply, done) {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? '(unmatched)',
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (isDebugEnabled(request.log)) {
      request.log.debug(
        // The path only: a query string may carry anything, even a key pasted by mistake.
        {
          method: request.method,
          path: requestPath(request),
          status: reply.statusCode,
          ms: reply.elapsedTime,
        },
        'request completed',
      );
    }
    done();
  });
}
