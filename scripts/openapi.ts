// The OpenAPI document, outside the server: the app is built on an empty in-memory store and
// asked for the document GET /openapi.json serves.
//   npm run openapi -- [FILE]   writes it to FILE (or stdout)
//   npm run openapi:lint        lints it with Redocly CLI's recommended rules (redocly.yaml);
//                               any error fails (`npm run check` runs this)
//   npm run client:generate     regenerates the TypeScript client's types from it:
//                               clients/typescript/openapi.json and src/schema.ts
//   npm run client:check        fails when those files are not what generate would write
//                               (`npm run check` runs this)

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { registerTypeBoxFormats } from '../src/http/formats.js';
import { createServices } from '../src/services.js';
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

const CLIENT = 'clients/typescript';

/** The client's generated files, path → content. */
async function clientFiles(document: string): Promise<Record<string, string>> {
  // readOnly members become $Read<T>: openapi-fetch leaves them out of request bodies. A member
  // with a default stays optional (the server fills it in).
  const ast = await openapiTS(JSON.parse(document) as Parameters<typeof openapiTS>[0], {
    readWriteMarkers: true,
    defaultNonNullable: false,
    silent: true,
  });
  const header =
    '// Generated from the OpenAPI document by `npm run client:generate`: do not edit.\n' +
    '// `npm run check` fails when this file is stale.\n\n';
  return {
    [`${CLIENT}/openapi.json`]: document,
    [`${CLIENT}/src/schema.ts`]: header + astToString(ast),
  };
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
const [command = 'print', target] = process.argv.slice(2);
const document = await buildDocument(version);
if (command === 'print') {
  if (target === undefined) process.stdout.write(document);
  else writeFileSync(target, document);
} else if (command === 'lint') {
  process.exitCode = lint(document);
} else if (command === 'client') {
  for (const [path, content] of Object.entries(await clientFiles(document))) {
    writeFileSync(path, content);
    process.stdout.write(`wrote ${path}\n`);
  }
} else if (command === 'client-check') {
  const stale = Object.entries(await clientFiles(document))
    .filter(([path, content]) => readOrEmpty(path) !== content)
    .map(([path]) => path);
  if (stale.length > 0) {
    process.stderr.write(
      `${stale.join(', ')}: stale, the API changed since they were generated. ` +
        'Run `npm run client:generate` and commit the result.\n',
    );
    process.exitCode = 1;
  } else {
    process.stdout.write('The TypeScript client matches the OpenAPI document.\n');
  }
} else {
  process.stderr.write(`unknown command ${command}: print [FILE], lint, client, client-check\n`);
  process.exitCode = 2;
}
