// Making sure someone can call the API right after start-up: the operator's bootstrap key
// (IAM_BOOTSTRAP_API_KEY), or on a store without any key, a generated one in a 0600 file.

import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { ApiKeysService } from './modules/api-keys/api-keys.service.js';

export const ADMIN_KEY_FILE = 'admin-api-key';

export async function prepareAccess(deps: {
  apiKeys: ApiKeysService;
  bootstrapApiKey: string | null;
  dataDir: string;
  log: FastifyBaseLogger;
}): Promise<void> {
  const { apiKeys, log } = deps;
  if (deps.bootstrapApiKey !== null) {
    if (deps.bootstrapApiKey.length < 32) {
      log.warn('IAM_BOOTSTRAP_API_KEY is shorter than 32 characters; use a long random secret');
    }
    const { outcome, revokedPrevious } = await apiKeys.ensureBootstrapKey(deps.bootstrapApiKey);
    log.info({ outcome }, 'bootstrap API key ready');
    if (revokedPrevious) {
      log.info('IAM_BOOTSTRAP_API_KEY changed: revoked the key of its previous value');
    }
    return;
  }
  const issued = await apiKeys.issueFirstKey();
  if (issued === null) return;
  const path = await writeSecretFile(deps.dataDir, ADMIN_KEY_FILE, issued.secret);
  // The path, never the key: logs are copied to places the key must not go.
  log.info(
    { path, keyId: issued.record.id },
    'created the first API key (all roles); its secret is in this file',
  );
}

/** Writes a secret readable only by this user, atomically (no half-written file). */
async function writeSecretFile(directory: string, name: string, secret: string): Promise<string> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const path = join(directory, name);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${secret}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
  return path;
}
