import cluster from 'node:cluster';
import type { Config } from '../config.js';
import { startServer } from '../server.js';
import { runPrimary } from './cluster-primary.js';
import { joinCluster } from './cluster-worker.js';

/**
 * Serves the API (`npm start`, `tessera serve`): in this process, or with IAM_WORKERS > 1 in
 * that many worker processes on one port, this one being their primary. A worker runs the same
 * entry point again (node:cluster forks it), and lands here as a worker.
 */
export async function serve(config: Config): Promise<void> {
  if (cluster.isWorker) await startServer(config, { worker: await joinCluster() });
  else if (config.workers > 1) await runPrimary(config);
  else await startServer(config);
}
