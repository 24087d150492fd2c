import type { FastifyBaseLogger } from 'fastify';

/** Cheap guard for debug-only log lines on hot paths (no argument objects built otherwise). */
export function isDebugEnabled(log: FastifyBaseLogger): boolean {
  return log.level === 'debug' || log.level === 'trace';
}
