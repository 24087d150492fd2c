// The OpenAPI document, outside the server: the app is built on an empty in-memory store and
// asked for the document GET /openapi.json serves.
//   npm run openapi -- [FILE]   writes it to FILE (or stdout)
//   npm run openapi:lint        lints it with Redocly CLI's recommended rules (redocly.yaml);
//                               any error fails (`npm run check` runs this)

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp, createServices } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { registerTypeBoxFormats } from '../src/http/formats.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';

export async function buildDocument(version: string): Promise<string> {
  registerTypeBoxFormats();
  const store = openSqliteStore({ path: ':memory:' });
  await store.migrate();
  const logger = pino({ level: 'silent' });
  const services = createServices({ store, clock: systemClock, log: logger });
  const app = await buildApp({
    store,
    services,
    logger,
    rateLimitPerMinute: 0,
    authFailuresPerMinute: 0,
    trustProxy: false,
    version,
  });
  await app.ready();
  const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();
  await store.close();
  return text;
}

function lint(document: string): number {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-openapi-'));
  try {
    const file = join(directory, 'openapi.json');
    writeFileSync(file, document);
    const result = spawnSync(
      process.execPath,
      ['node_modules/@redocly/cli/bin/cli.js', 'lint', '--config', 'redocly.yaml', file],
      {
        stdio: 'inherit',
        // No usage reports or update checks: lint offline, the same on every machine.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
    return result.status ?? 1;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

const [command = 'print', target] = process.argv.slice(2);
const document = await buildDocument(process.env.npm_package_version ?? '0.0.0');
if (command === 'print') {
  if (target === undefined) process.stdout.write(document);
  else writeFileSync(target, document);
} else if (command === 'lint') {
  process.exitCode = lint(document);
} else {
  process.stderr.write(`unknown command ${command}: print [FILE] or lint\n`);
  process.exitCode = 2;
}
