// Making sure someone can call the API right after start-up: the operator's bootstrap key
// (IAM_BOOTSTRAP_API_KEY), or on a store without any key, a generated one in a 0600 file.

import type { FastifyBaseLogger } from 'fastify';
import { stageSecretFile } from './files.js';
import { type ApiKeysService, generateSecret } from './modules/api-keys/api-keys.service.js';

export const ADMIN_KEY_FILE = 'admin-api-key';

export async function prepareAccess(deps: {
  apiKeys: ApiKeysService;
  bootstrapApiKey: string | null;
  dataDir: string;
  log: FastifyBaseLogger;
}): Promise<void> {
  const { apiKeys, log } = deps;
  if (deps.bootstrapApiKey !== null) {
    const { outcome, revokedPrevious } = await apiKeys.ensureBootstrapKey(deps.bootstrapApiKey);
    log.info({ outcome }, 'bootstrap API key ready');
    if (revokedPrevious) {
      log.info('IAM_BOOTSTRAP_API_KEY changed: revoked the key of its previous value');
    }
    return;
  }
  if (!(await apiKeys.needsFirstKey())) return;
  // The file first, the key second: a key nobody can read would lock the operator out.
  const secret = generateSecret();
  const staged = await stageSecretFile(deps.dataDir, ADMIN_KEY_FILE, secret);
  try {
    const issued = await apiKeys.issueFirstKey(secret);
    if (issued === null) {
      await staged.discard(); // another instance issued the first key at the same moment
      return;
    }
    const path = await staged.publish();
    // The path, never the key: logs are copied to places the key must not go.
    log.info(
      { path, keyId: issued.id },
      'created the first API key (all roles); its secret is in this file',
    );
  } catch (error) {
    await staged.discard();
    throw error;
  }
}
