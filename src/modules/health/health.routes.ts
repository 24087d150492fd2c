import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { noSecurity, unreadableRequestResponse } from '../../http/schemas.js';
import { ProblemSchema } from '../../problems.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { Store } from '../../store/store.js';

const Status = named('HealthStatus', Type.Object({ status: Type.String() }));

export function registerHealthRoutes(
  app: FastifyInstance,
  deps: {
    store: Store;
    metrics: Registry;
    /** False when /metrics is served on a listener of its own (IAM_METRICS_PORT). */
    serveMetrics?: boolean;
  },
): void {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getLiveness',
        summary: 'Liveness: the process is up',
        security: noSecurity,
        response: { 200: Status, ...unreadableRequestResponse },
      },
    },
    async function reportLiveness() {
      return { status: 'ok' };
    },
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getReadiness',
        summary: 'Readiness: the store answers',
        security: noSecurity,
        response: {
          200: Status,
          ...unreadableRequestResponse,
          503: {
            description: 'Not ready: the store does not answer (Retry-After)',
            content: { 'application/problem+json': { schema: ProblemSchema } },
          },
        },
      },
    },
    async function reportReadiness() {
      try {
        await deps.store.ping();
      } catch (error) {
        // Not ready, whatever the reason: the error handler answers 503 with Retry-After.
        throw error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError('the database does not answer', 'all', { cause: error });
      }
      return { status: 'ready' };
    },
  );

  if (deps.serveMetrics === false) return;
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        security: noSecurity,
        response: {
          ...unreadableRequestResponse,
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: Type.String() } },
          },
        },
      },
    },
    async function exposeMetrics(_request, reply) {
      reply.type(deps.metrics.contentType);
      return deps.metrics.metrics();
    },
  );
}
