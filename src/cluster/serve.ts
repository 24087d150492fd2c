import cluster from 'node:cluster';
import { type Config, ConfigError } from '../config.js';
import { describeFailure } from '../failures.js';
import { NewerSchemaError } from '../store/errors.js';
import { runPrimary } from './cluster-primary.js';
import { joinCluster } from './cluster-worker.js';

/**
 * Serves the API (`npm start`, `tessera serve`): in this process, or with IAM_WORKERS > 1 in
 * that many worker processes on one port, this one being their primary. A worker runs the same
 * entry point again (node:cluster forks it), and lands here as a worker. The server's modules
 * are loaded where they run: never in the primary.
 */
export async function serve(config: Config): Promise<void> {
  if (!cluster.isWorker && config.workers > 1) return runPrimary(config);
  const { createLogger, prepareService, startServer } = await import('../server.js');
  if (!cluster.isWorker) {
    await startServer(config);
    return;
  }
  const worker = await joinCluster();
  try {
    if (!worker.prepares) {
      await startServer(config, { worker });
      return;
    }
    const logger = createLogger(config.logLevel, undefined, config.logFormat).child({
      role: 'prepare',
    });
    await prepareService(config, logger);
  } catch (error) {
    // Said and ended here: the channel to the primary would keep a failed child alive, and
    // the primary reads the exit code (2: the operator must change something).
    process.stderr.write(`tessera: cannot start: ${describeFailure(error)}\n`);
    process.exit(error instanceof ConfigError || error instanceof NewerSchemaError ? 2 : 1);
  }
  // Its work is in the database; the primary starts the workers once this child has exited 0.
  process.exit(0);
}
