// `npm start`: serve the API with the configuration from the environment: in this process, or
// with IAM_WORKERS > 1 in that many worker processes on one port (src/cluster/), this one
// being their primary.

import './supported-node.js';
import { serve } from './cluster/serve.js';
import { ConfigError, loadConfig } from './config.js';
import { describeFailure } from './failures.js';
import { NewerSchemaError } from './store/errors.js';

try {
  await serve(loadConfig());
} catch (error) {
  // One line an operator can act on; the stack only when asked for (LOG_LEVEL=debug).
  process.stderr.write(`tessera: cannot start: ${describeFailure(error)}\n`);
  if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') {
    process.stderr.write(`${(error as Error)?.stack ?? ''}\n`);
  }
  // 2: the operator must change something before a restart can help (systemd's unit does not
  // restart on it).
  process.exit(error instanceof ConfigError || error instanceof NewerSchemaError ? 2 : 1);
}
