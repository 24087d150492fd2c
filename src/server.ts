// Runs Tessera as a server: config → store → services → app → listen, then a graceful stop
// on SIGTERM/SIGINT: stop accepting, finish in-flight requests (10 s at most), close the
// store, exit 0.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import type * as PinoPretty from 'pino-pretty';
import { prepareAccess } from './access.js';
import { buildApp } from './app.js';
import { buildOperationsApp } from './operations-app.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError } from './config.js';
import { registerTypeBoxFormats } from './http/formats.js';
import { openRateLimitRedis, waitForRedis } from './http/rate-limit.js';
import { BootstrapKeyRefusedError } from './modules/api-keys/api-keys.service.js';
import { SealedKeyError } from './modules/private-key-sealing.js';
import type { SigningKeys } from './modules/tokens/signing-keys.service.js';
import type { SealedSecrets } from './modules/secret-key/secret-key.service.js';
import { createMetrics, registerBackupMetrics } from './http/metrics.js';
import { type Services, createServices } from './services.js';
import type { ClusterWorker } from './cluster/cluster-worker.js';
import { openStore } from './store/open-store.js';
import { compactTimestamp } from './files.js';
import { type ScheduledBackups, scheduleBackups } from './scheduled-backups.js';
import { backupSqliteDatabase } from './store/sqlite/sqlite-backup.js';
import type { Store } from './store/store.js';
import { ClusterSettings } from './modules/cluster-settings/cluster-settings.service.js';

const SHUTDOWN_GRACE_MS = 10_000;
/** How long start-up waits for Redis; past it the limits run as while Redis is away. */
const REDIS_START_WAIT_MS = 2_000;

export function packageVersion(): string {
  const manifest = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  return manifest.version;
}

/**
 * What Fastify is given to log when a listener opens ("Server listening at …", once per
 * address): createLogger drops it, since Tessera logs one line of its own with more in it.
 */
const LISTENING_TEXT = 'tessera: listening';
export const dropListeningText = { listenTextResolver: () => LISTENING_TEXT };

export type LogFormat = 'json' | 'pretty';

/**
 * The process's logger: JSON lines (pino) on stdout, or `pretty` (LOG_FORMAT=pretty): one
 * readable line per entry, in colour on a terminal, for a person watching a development server.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  format: LogFormat = 'json',
) {
  const options: pino.LoggerOptions = {
    level,
    // Belt and braces: request headers are not logged, but if they ever are, keys are not.
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization'],
      censor: '[redacted]',
    },
    hooks: {
      logMethod(args, method) {
        if (args[0] !== LISTENING_TEXT) method.apply(this, args);
      },
    },
  };
  if (format === 'pretty') {
    // Loaded only for LOG_FORMAT=pretty (0.4 MB of heap otherwise held for nothing).
    const { isColorSupported, prettyFactory } = createRequire(import.meta.url)(
      'pino-pretty',
    ) as typeof PinoPretty;
    // Formatted as written, synchronously (stdout is synchronous for files, pipes and
    // terminals on Linux): the last line before an exit is not lost.
    const prettify = prettyFactory({
      colorize: destination === undefined && isColorSupported,
      singleLine: true,
      ignore: 'pid,hostname',
      translateTime: 'SYS:HH:MM:ss.l',
    });
    const output = destination ?? process.stdout;
    return pino(options, { write: (line: string) => output.write(prettify(line)) });
  }
  // stdout, one synchronous write a line. Batches (sonic-boom asynchronous, 4 KiB or 100 ms)
  // were tried and dropped: on a loaded machine a batch still being written when an uncaught
  // exception ended the process was lost (lines 51-250 of 500, test/logging.test.ts), and
  // synchronous batches lost the pending one at exit; what they saved (0.5 µs a line in
  // process) did not show from outside.
  return destination === undefined ? pino(options) : pino(options, destination);
}

/**
 * `recordEvents: false` is for the bench alone (bench/serve-without-events.mjs), which measures
 * what the audit trail costs. No setting turns the audit trail off: a variable that could would
 * let one line of configuration silently break the promise that every change has its event.
 *
 * `worker`: this process is one of several serving the port (IAM_WORKERS, src/cluster/); the
 * primary prepared the database before forking it.
 */
export async function startServer(
  config: Config,
  options: { recordEvents?: boolean; worker?: ClusterWorker } = {},
): Promise<FastifyInstance> {
  registerTypeBoxFormats();
  const { worker } = options;
  const processLogger = createLogger(config.logLevel, undefined, config.logFormat);
  // Every line of a worker says which one wrote it.
  const logger =
    worker === undefined ? processLogger : processLogger.child({ worker: worker.slot });
  const store = await openStore(config.database, {
    recordEvents: options.recordEvents !== false,
    onIdleError: (error) =>
      logger.warn({ reason: error.message }, 'an idle database connection failed; it is replaced'),
    onListenerTrouble: (message, error) =>
      logger.warn(error instanceof Error ? { reason: error.message } : {}, message),
    ...(worker === undefined ? {} : { commitRelay: worker.commitRelay }),
  });
  const version = packageVersion();
  if (worker === undefined) await migrateStore(config, store, version, logger);
  const metrics = createMetrics({
    version,
    ...(worker === undefined ? {} : { registry: worker.registry }),
  });
  const { clusterSettings, services } = await composeServices(
    config,
    store,
    logger,
    version,
    metrics,
  );
  if (worker === undefined) await prepareOnce(config, services, logger);
  const rateLimitRedis =
    config.redisUrl === null ||
    (config.rateLimitPerMinute === 0 && config.authFailuresPerMinute === 0)
      ? undefined
      : await openRateLimitRedis(config.redisUrl, logger);
  if (rateLimitRedis !== undefined) await waitForRedis(rateLimitRedis, REDIS_START_WAIT_MS);
  const app = await buildApp({
    store,
    services,
    logger,
    rateLimitPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    ...(rateLimitRedis === undefined ? {} : { rateLimitRedis }),
    // Without Redis, instances on one PostgreSQL count their limits there, not each its own;
    // the workers on one SQLite file count them in their primary.
    ...(store.kind === 'postgres'
      ? { limitCounters: store.limits }
      : worker === undefined
        ? {}
        : { limitCounters: worker.limitCounters }),
    trustProxy: config.trustProxy,
    version,
    metrics,
    accessLog: config.accessLog,
    serveMetrics: config.metricsListener === null,
  });
  const operations =
    config.metricsListener === null
      ? null
      : await buildOperationsApp({ store, metrics: metrics.registry, logger });
  // Once per cluster: in one process, or in worker 1 of several.
  const designated = worker === undefined || worker.designated;
  const stopPruning = designated
    ? services.events.prunePeriodically(config.eventRetentionDays, (error) =>
        logger.warn({ reason: (error as Error).message }, 'could not prune old events; will retry'),
      )
    : () => {};
  const stopRefreshing = clusterSettings.refreshPeriodically((error) =>
    logger.warn(
      { reason: (error as Error).message },
      "could not read the cluster's settings; will retry",
    ),
  );
  const backups =
    config.backups === null || config.database.kind !== 'sqlite' || !designated
      ? null
      : startScheduledBackups(config.backups, config.database.path, version, metrics, logger);
  app.addHook('onClose', async function closeStore() {
    await operations?.close();
    await backups?.stop();
    stopPruning();
    stopRefreshing();
    await store.close();
    rateLimitRedis?.disconnect();
  });
  await app.ready();
  releaseStartUpGarbage();
  // The operations listener first: an instance that cannot open it serves nothing.
  if (operations !== null)
    await operations.listen({ ...config.metricsListener, ...dropListeningText });
  await app.listen({ port: config.port, host: config.host, ...dropListeningText });
  app.log.info(
    {
      version,
      node: process.versions.node,
      store: store.kind,
      address: app.listeningOrigin,
      ...(operations === null ? {} : { metrics_address: operations.listeningOrigin }),
    },
    'Tessera is serving',
  );
  stopGracefullyOnSignals(app, logger);
  worker?.ready();
  return app;
}

/**
 * IAM_WORKERS > 1: what the primary does once for the whole cluster before forking its
 * workers (a backup before migrating, migrations, secrets checked, signing keys, the first-start
 * key or the bootstrap key), on a store of its own that it closes again.
 */
export async function prepareService(config: Config, logger: pino.Logger): Promise<void> {
  registerTypeBoxFormats();
  const store = await openStore(config.database);
  try {
    const version = packageVersion();
    await migrateStore(config, store, version, logger);
    const { services } = await composeServices(
      config,
      store,
      logger,
      version,
      createMetrics({ version }),
    );
    await prepareOnce(config, services, logger);
  } finally {
    await store.close();
  }
}

/** With backups scheduled, a backup of the database as it was; then the migrations. */
async function migrateStore(
  config: Config,
  store: Store,
  version: string,
  logger: pino.Logger,
): Promise<void> {
  if (config.backups !== null && config.database.kind === 'sqlite') {
    await backUpBeforeMigrating(
      store,
      config.database.path,
      config.backups.directory,
      version,
      logger,
    );
  }
  await store.migrate();
}

async function composeServices(
  config: Config,
  store: Store,
  logger: pino.Logger,
  version: string,
  metrics: ReturnType<typeof createMetrics>,
): Promise<{ clusterSettings: ClusterSettings; services: Services }> {
  // Widening settings are the cluster's: an instance acts on what both allow (SQLite: its own).
  const clusterSettings = new ClusterSettings({
    store,
    instance: {
      'allow-insecure-webhooks': config.webhooks.allowInsecure,
      'allow-insecure-jwks': config.tokens.allowInsecureJwks,
    },
    decidesAlone: store.kind === 'sqlite',
    log: { info: (message) => logger.info(message), warn: (message) => logger.warn(message) },
  });
  await clusterSettings.prepare();
  const services = createServices({
    store,
    clock: systemClock,
    log: logger,
    tokens: config.tokens,
    webhooks: config.webhooks,
    version,
    metrics,
    console: config.console,
    consoleOidc: config.consoleOidc,
    outbound: { webhooks: clusterSettings.webhooks, jwks: clusterSettings.jwks },
  });
  return { clusterSettings, services };
}

/** Before serving, once: warnings, secrets that must open, signing keys, someone's API key. */
async function prepareOnce(config: Config, services: Services, logger: pino.Logger): Promise<void> {
  warnAboutConfiguration(config, logger);
  await prepareSecrets(services.secrets, logger);
  await prepareSigningKeys(services.signingKeys, logger);
  await prepareAccess({
    apiKeys: services.apiKeys,
    bootstrapApiKey: config.bootstrapApiKey,
    dataDir: config.dataDir,
    log: logger,
  }).catch((error: unknown) => {
    throw error instanceof BootstrapKeyRefusedError ? new ConfigError(error.message) : error;
  });
}

/**
 * One full garbage collection, once the app is built and before it listens. Start-up (loading
 * the modules, compiling every route's schemas) grows V8's young generation to its limit (2 × 8
 * MB with --max-semi-space-size=8) and leaves garbage in the old one, and nothing collects them
 * in a server that then waits for requests: 133-136 MB resident at idle before, 106-108 after
 * (SQLite, Node.js 24.21). It takes 50-200 ms, before the first request can arrive. The young
 * generation grows back under load as before. V8 gives the function only to a context created
 * after --expose-gc is set; the process's own globals stay as they are.
 */
function releaseStartUpGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: {
    type: 'major';
    execution: 'sync';
    flavor: 'last-resort';
  }) => void;
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * IAM_BACKUP_DIR: a backup every IAM_BACKUP_INTERVAL, in a worker thread; the last result in
 * /metrics and a log line each time.
 */
function startScheduledBackups(
  settings: NonNullable<Config['backups']>,
  source: string,
  version: string,
  metrics: ReturnType<typeof createMetrics>,
  logger: pino.Logger,
): ScheduledBackups {
  const reported = registerBackupMetrics(metrics, { intervalMs: settings.intervalMs });
  return scheduleBackups({
    source,
    directory: settings.directory,
    intervalMs: settings.intervalMs,
    keep: settings.keep,
    tesseraVersion: version,
    onBackup(backup) {
      reported.backedUp(backup);
      if (backup.durationMs === null) return;
      logger.info(
        { backup: backup.path, bytes: backup.bytes, ms: Math.round(backup.durationMs) },
        'backup written',
      );
    },
    onFailure(reason, retryAt) {
      reported.failed();
      logger.error(
        { reason, retryAt: new Date(retryAt).toISOString() },
        'backup failed; it will be tried again',
      );
    },
    onRemoved(files) {
      if (files.length > 0) logger.info({ files, keep: settings.keep }, 'removed old backups');
    },
  });
}

/**
 * With backups scheduled, a start that is about to migrate an existing database first backs it
 * up as it is (tessera-pre-upgrade-<time>.db, never removed by the schedule): the way back if
 * the new version has to be rolled back.
 */
async function backUpBeforeMigrating(
  store: Store,
  source: string,
  directory: string,
  version: string,
  logger: pino.Logger,
): Promise<void> {
  const status = await store.schemaStatus();
  if (status.pending.length === 0 || status.applied.length === 0 || status.unknown.length > 0) {
    return;
  }
  const output = join(directory, `tessera-pre-upgrade-${compactTimestamp(new Date())}.db`);
  const summary = await backupSqliteDatabase({ source, output, tesseraVersion: version });
  logger.info(
    { backup: summary.path, bytes: summary.bytes, pending: status.pending },
    'backed up the database before migrating it',
  );
}

/**
 * One warning per risky setting, once, at start-up. The widening settings
 * (IAM_ALLOW_INSECURE_*) are reported by ClusterSettings, which knows whether they are acted on.
 */
export function warnAboutConfiguration(config: Config, logger: pino.Logger): void {
  if (config.issuerFromWildcardHost) {
    logger.warn(
      { issuer: config.tokens.issuer },
      `HOST=${config.host} without IAM_ISSUER: access tokens carry iss ${config.tokens.issuer} and discovery points there, which no client can reach; set IAM_ISSUER to Tessera's public URL`,
    );
  }
  if (config.tokens.secretKey === null) {
    logger.warn(
      'IAM_SECRET_KEY is not set: private signing keys are stored in clear in the database; set it (openssl rand -base64 32) to encrypt them',
    );
  }
}

/**
 * Every sealed secret must be sealed with IAM_SECRET_KEY or IAM_SECRET_KEY_PREVIOUS (else
 * start-up stops with one line naming it), and the operator learns where a rotation stands.
 */
async function prepareSecrets(secrets: SealedSecrets, logger: pino.Logger): Promise<void> {
  await secrets.assertEverySecretOpens().catch((error: unknown) => {
    throw error instanceof SealedKeyError ? new ConfigError(error.message) : error;
  });
  const inventory = await secrets.inventory();
  if (inventory.previousKeyId === null) return;
  if (inventory.sealedWithPrevious > 0) {
    logger.info(
      {
        sealedWithPrevious: inventory.sealedWithPrevious,
        keyId: inventory.currentKeyId,
        previousKeyId: inventory.previousKeyId,
      },
      'secrets are sealed with IAM_SECRET_KEY_PREVIOUS: once every instance has the new IAM_SECRET_KEY, run tessera secret-key reseal',
    );
  } else {
    logger.warn(
      { previousKeyId: inventory.previousKeyId },
      'IAM_SECRET_KEY_PREVIOUS seals nothing any more: remove it at the next restart',
    );
  }
}

/**
 * Every stored private key must open with the configured IAM_SECRET_KEY (else start-up stops
 * with one line); keys stored in clear are sealed when it is set; a first key is created.
 */
async function prepareSigningKeys(signingKeys: SigningKeys, logger: pino.Logger): Promise<void> {
  const { sealed } = await signingKeys.sealStoredKeys().catch((error: unknown) => {
    throw error instanceof SealedKeyError ? new ConfigError(error.message) : error;
  });
  if (sealed > 0) {
    logger.info(
      { count: sealed },
      'encrypted the signing keys stored in clear with IAM_SECRET_KEY',
    );
  }
  const addedKey = await signingKeys.ensureSigningKey();
  if (addedKey !== null) {
    logger.info(
      { kid: addedKey.kid, algorithm: addedKey.algorithm },
      'created a token signing key',
    );
  }
}

/** Exits once the log's pending lines are written (at most a second later). */
function exitAfterFlushing(logger: pino.Logger, code: number): void {
  setTimeout(() => process.exit(code), 1_000);
  logger.flush(() => process.exit(code));
}

function stopGracefullyOnSignals(app: FastifyInstance, logger: pino.Logger): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping: finishing in-flight requests');
    const deadline = setTimeout(() => {
      app.log.warn('in-flight requests did not finish within 10 s; closing their connections');
      app.server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    deadline.unref();
    app.close().then(
      () => {
        clearTimeout(deadline);
        app.log.info('stopped');
        exitAfterFlushing(logger, 0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'error while stopping');
        exitAfterFlushing(logger, 1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
