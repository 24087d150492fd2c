import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import { ProblemSchema } from '../../problems.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { Store } from '../../store/store.js';

const Status = Type.Object({ status: Type.String() });

export function registerHealthRoutes(
  app: FastifyInstance,
  deps: { store: Store; metrics: Registry },
): void {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process is up',
        response: { 200: Status },
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
        summary: 'Readiness: the store answers',
        response: {
          200: Status,
          503: { content: { 'application/problem+json': { schema: ProblemSchema } } },
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

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        response: {
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
