// Runs Tessera as a server: config → store → services → app → listen, then a graceful stop
// on SIGTERM/SIGINT: stop accepting, finish in-flight requests (10 s at most), close the
// store, exit 0.

import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { prepareAccess } from './access.js';
import { buildApp, createServices } from './app.js';
import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { registerTypeBoxFormats } from './http/formats.js';
import { openRateLimitRedis } from './http/rate-limit.js';
import { openStore } from './store/open-store.js';

const SHUTDOWN_GRACE_MS = 10_000;

export function packageVersion(): string {
  const manifest = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  return manifest.version;
}

export function createLogger(level: string, destination?: pino.DestinationStream) {
  const options: pino.LoggerOptions = {
    level,
    // Belt and braces: request headers are not logged, but if they ever are, keys are not.
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization'],
      censor: '[redacted]',
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

export async function startServer(config: Config): Promise<FastifyInstance> {
  registerTypeBoxFormats();
  const logger = createLogger(config.logLevel);
  const store = openStore(config.database, {
    onIdleError: (error) =>
      logger.warn({ reason: error.message }, 'an idle database connection failed; it is replaced'),
  });
  await store.migrate();
  const services = createServices({
    store,
    clock: systemClock,
    log: logger,
    tokens: config.tokens,
  });
  if (config.tokens.allowInsecureJwks) {
    logger.warn(
      'IAM_ALLOW_INSECURE_JWKS=true: outside JWKS may be fetched over http and from private addresses; never in production',
    );
  }
  const addedKey = await services.signingKeys.ensureSigningKey();
  if (addedKey !== null) {
    logger.info(
      { kid: addedKey.kid, algorithm: addedKey.algorithm },
      'created a token signing key',
    );
  }
  await prepareAccess({
    apiKeys: services.apiKeys,
    bootstrapApiKey: config.bootstrapApiKey,
    dataDir: config.dataDir,
    log: logger,
  });
  const rateLimitRedis =
    config.redisUrl === null || config.rateLimitPerMinute === 0
      ? undefined
      : openRateLimitRedis(config.redisUrl, logger);
  const version = packageVersion();
  const app = await buildApp({
    store,
    services,
    logger,
    rateLimitPerMinute: config.rateLimitPerMinute,
    ...(rateLimitRedis === undefined ? {} : { rateLimitRedis }),
    trustProxy: config.trustProxy,
    version,
  });
  app.addHook('onClose', async function closeStore() {
    await store.close();
    rateLimitRedis?.disconnect();
  });
  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { version, node: process.versions.node, store: store.kind, address: app.listeningOrigin },
    'Tessera is serving',
  );
  stopGracefullyOnSignals(app);
  return app;
}

function stopGracefullyOnSignals(app: FastifyInstance): void {
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
        process.exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
