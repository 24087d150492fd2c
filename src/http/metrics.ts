// Prometheus metrics. The standard process_* and nodejs_* metrics under their usual names, so
// stock Node.js dashboards work; tessera_build_info; requests by route pattern and status; and
// what an operator of an identity service watches: failed authentications by reason, token
// exchanges by outcome and failed check, fetches of providers' keys (JWKS), rate-limited
// requests, the store's connection pool and SQLite's commit latency. Labels are route
// patterns and fixed words, never raw input, to bound cardinality.

import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Store, WebhookBacklog } from '../store/store.js';
import { isDebugEnabled } from './logging.js';
import { requestPath } from './request-path.js';

/** Why an API key was refused. Callers are never told; the operator's metrics are. */
export type AuthFailureReason =
  'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'superseded';

/** The metrics the rest of the application reports to. */
export interface Metrics {
  readonly registry: Registry;
  authenticationFailed(reason: AuthFailureReason): void;
  /** outcome: "issued", or the OAuth error code; failedCheck: the check that refused, if one did. */
  tokenExchanged(outcome: string, failedCheck: string | null): void;
  /** A provider's key set was fetched (ok) or could not be (failed). */
  jwksFetched(outcome: 'ok' | 'failed'): void;
  /** What became of a webhook delivery attempt (WebhookDispatcher's AttemptResult). */
  webhookAttempted(outcome: string): void;
}

/**
 * `registry`: where the metrics go; a new one unless given (a worker of several gives one that
 * serves the whole cluster's figures: src/cluster/).
 */
export function createMetrics(options: { version: string; registry?: Registry }): Metrics {
  const registry = options.registry ?? new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'tessera_build_info',
    help: 'Always 1; the labels say which Tessera and which Node.js run',
    labelNames: ['version', 'node'],
    registers: [registry],
    // With several workers, /metrics sums their figures: one build, not one per worker.
    aggregator: 'first',
  }).set({ version: options.version, node: process.versions.node }, 1);
  const authFailures = new Counter({
    name: 'tessera_authentication_failures_total',
    help: 'API keys refused, by reason (missing, malformed, unknown, revoked, expired, superseded)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const exchanges = new Counter({
    name: 'tessera_token_exchanges_total',
    help: 'Token exchanges at /oauth2/token, by outcome and the check that failed ("" if none)',
    labelNames: ['outcome', 'failed_check'],
    registers: [registry],
  });
  const jwks = new Counter({
    name: 'tessera_jwks_fetches_total',
    help: "Fetches of identity providers' key sets (JWKS), by outcome (ok, failed)",
    labelNames: ['outcome'],
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'tessera_webhook_deliveries_total',
    help:
      'Webhook delivery attempts made by this instance, by outcome: delivered (2xx), failed ' +
      '(another answer or none; retried), timed_out (the whole attempt passed its deadline; ' +
      'retried), given_up (still failing after the retry period: marked failed), cancelled ' +
      '(the webhook was deleted or disabled, or the instance stopped)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return {
    registry,
    authenticationFailed: (reason) => authFailures.inc({ reason }),
    webhookAttempted: (outcome) => webhookAttempts.inc({ outcome }),
    tokenExchanged: (outcome, failedCheck) =>
      exchanges.inc({ outcome, failed_check: failedCheck ?? '' }),
    jwksFetched: (outcome) => jwks.inc({ outcome }),
  };
}

/** The store's pool occupancy (read at each scrape) and commit latency. */
export function registerStoreMetrics(metrics: Metrics, store: Store): void {
  new Gauge({
    name: 'tessera_store_pool_connections',
    help: 'Database connections by state: total (open), idle, and waiting (queries queued for one)',
    labelNames: ['state'],
    registers: [metrics.registry],
    collect() {
      const stats = store.poolStats?.();
      if (stats === null || stats === undefined) return;
      this.set({ state: 'total' }, stats.total);
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'waiting' }, stats.waiting);
    },
  });
  if (store.kind !== 'sqlite') return;
  const commits = new Histogram({
    name: 'tessera_sqlite_commit_duration_seconds',
    help: 'How long each SQLite COMMIT (a group of writes made durable) took',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [metrics.registry],
  });
  store.observe?.({ committed: (seconds) => commits.observe(seconds) });
}

/**
 * The webhooks' backlog, read from the store at each scrape. It is the cluster's, not this
 * instance's: every instance reports the same figures.
 */
export function registerWebhookMetrics(metrics: Metrics, store: Store, clock: Clock): void {
  let reading: Promise<WebhookBacklog> | undefined;
  // Both gauges come from one read per scrape.
  const read = () => {
    reading ??= store.webhooks.measureBacklog().finally(() => {
      setImmediate(() => (reading = undefined));
    });
    return reading;
  };
  new Gauge({
    name: 'tessera_webhook_backlog_events',
    help:
      'Events not yet dealt with, summed over the enabled webhooks (each counts the events ' +
      'after its cursor, whether or not they match it)',
    registers: [metrics.registry],
    // Every worker reads the same figure from the database: not to be summed.
    aggregator: 'max',
    async collect() {
      this.set((await read()).events);
    },
  });
  new Gauge({
    name: 'tessera_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest event an enabled webhook has not yet dealt with; 0 when none',
    registers: [metrics.registry],
    aggregator: 'max',
    async collect() {
      const { oldestEventAt } = await read();
      this.set(oldestEventAt === null ? 0 : Math.max(0, (clock.now() - oldestEventAt) / 1000));
    },
  });
}

/** What the backup schedule reports (IAM_BACKUP_DIR). */
export interface BackupMetrics {
  /** A backup was written (or, at start, the newest one found); durationMs null when unknown. */
  backedUp(backup: { takenAt: number; bytes: number; durationMs: number | null }): void;
  failed(): void;
}

/**
 * The scheduled backups' last result, for alerts: `time() - last_success > 2 × interval` says
 * backups stopped, a rising failure count says they fail.
 */
export function registerBackupMetrics(
  metrics: Metrics,
  options: { intervalMs: number },
): BackupMetrics {
  const registers = [metrics.registry];
  new Gauge({
    name: 'tessera_backup_interval_seconds',
    help: 'IAM_BACKUP_INTERVAL: how often the service backs up its SQLite database',
    registers,
  }).set(options.intervalMs / 1000);
  const lastSuccess = new Gauge({
    name: 'tessera_backup_last_success_timestamp_seconds',
    help: 'When the newest backup in IAM_BACKUP_DIR was taken (Unix time)',
    registers,
  });
  const lastDuration = new Gauge({
    name: 'tessera_backup_last_duration_seconds',
    help: 'How long the last backup this process took lasted (copy, check, write)',
    registers,
  });
  const lastSize = new Gauge({
    name: 'tessera_backup_last_size_bytes',
    help: 'The size of the newest backup',
    registers,
  });
  const failures = new Counter({
    name: 'tessera_backup_failures_total',
    help: 'Scheduled backups that failed (each is retried within 10 minutes)',
    registers,
  });
  return {
    backedUp(backup) {
      lastSuccess.set(backup.takenAt / 1000);
      lastSize.set(backup.bytes);
      if (backup.durationMs !== null) lastDuration.set(backup.durationMs / 1000);
    },
    failed: () => failures.inc(),
  };
}

export function registerRequestMetrics(
  app: FastifyInstance,
  registry: Registry,
  options: { tokenEndpoint: string },
): void {
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
  const limited = new Counter({
    name: 'tessera_rate_limited_requests_total',
    help:
      'Requests refused with 429, by limit: api_key (requests per key), auth_failures ' +
      '(failed authentications per address), token_refusals (refused token requests per address)',
    labelNames: ['limit'],
    registers: [registry],
  });

  app.addHook('onResponse', function recordRequest(request, reply, done) {
    const route = request.routeOptions.url ?? '(unmatched)';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) {
      // The per-key limiter (@fastify/rate-limit) sends RateLimit-* headers; the failed-
      // authentication limit refuses before it runs, so its 429s have none.
      const limit =
        route === options.tokenEndpoint
          ? 'token_refusals'
          : reply.hasHeader('ratelimit-limit')
            ? 'api_key'
            : 'auth_failures';
      limited.inc({ limit });
    }
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
