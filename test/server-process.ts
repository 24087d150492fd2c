// Tessera as its own process for end-to-end tests (see run-server.ts), with one check added:
// when the file's tests are done, no server process may have printed an API key, neither one
// it generated nor the bootstrap key it was given.

import { after } from 'node:test';
import { type ServerProcess, startServerProcess as start } from './run-server.js';

export {
  type ProcessResponse,
  type ServerProcess,
  callServer,
  freePort,
  repository,
  serverEntry,
} from './run-server.js';

const printed: { output: () => string; secrets: string[] }[] = [];
after(() => {
  for (const { output, secrets } of printed) {
    const text = output();
    if (/tsr_[A-Za-z0-9_-]{43}/.test(text) || secrets.some((secret) => text.includes(secret))) {
      throw new Error('a server process printed an API key');
    }
  }
});

/**
 * Runs `command args…` in the repository with `env` on a free port, and resolves once
 * /healthz answers; its output is checked for keys after the file's tests.
 */
export async function startServerProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<ServerProcess> {
  const bootstrap = env.IAM_BOOTSTRAP_API_KEY ?? process.env.IAM_BOOTSTRAP_API_KEY;
  const secrets = bootstrap === undefined ? [] : [bootstrap];
  try {
    const server = await start(command, args, env);
    printed.push({ output: server.output, secrets });
    return server;
  } catch (error) {
    // A server that exited or never became healthy: its output is in the message.
    printed.push({ output: () => String((error as Error).message), secrets });
    throw error;
  }
}
