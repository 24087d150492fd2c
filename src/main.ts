// `npm start`: serve the API with the configuration from the environment.

import './supported-node.js';
import { ConfigError, loadConfig } from './config.js';
import { describeFailure } from './failures.js';
import { startServer } from './server.js';
import { NewerSchemaError } from './store/errors.js';

try {
  await startServer(loadConfig());
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
