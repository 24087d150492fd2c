import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

/** Cheap guard for debug-only log lines on hot paths (no argument objects built otherwise). */
export function isDebugEnabled(log: FastifyBaseLogger): boolean {
  return log.level === 'debug' || log.level === 'trace';
}

/**
 * The access log: one info line per request, with the route pattern (never the path, which
 * can hold identifiers), status, duration, the client's address (the proxy's unless
 * IAM_TRUST_PROXY; the address refused keys are counted by), and the id of the API key that
 * made it. Never the key itself: only its id, which the key's record shows. The request id is
 * the request logger's own `request_id` (app.ts), so it is in the line once.
 */
export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', function logAccess(request, reply, done) {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? null,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime * 100) / 100,
        client_address: request.ip,
        api_key_id: request.apiKey?.id ?? request.consoleSession?.key.id ?? null,
      },
      'request',
    );
    done();
  });
}
