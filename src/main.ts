// `npm start`: serve the API with the configuration from the environment.

import { ConfigError, loadConfig } from './config.js';
import { startServer } from './server.js';

try {
  await startServer(loadConfig());
} catch (error) {
  const message =
    error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error);
  process.stderr.write(`tessera: cannot start: ${message}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
