// docs/api.md's resource-server walkthrough, run as written against a fresh server: a Fastify
// service that verifies Tessera's access token and asks /access/v1/evaluation before deleting a
// todo. Morty deletes his own todo, not Rick's, and nothing once he is deactivated, although
// his token is still valid.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repository, type ServerProcess, startServerProcess } from './server-process.js';

function walkthrough(): { service: string; script: string; expected: string } {
  const guide = readFileSync(join(repository, 'docs', 'api.md'), 'utf8');
  const section = guide.split('<!-- resource-server -->')[1]?.split('<!-- /resource-server -->')[0];
  assert.ok(section, 'docs/api.md has a <!-- resource-server --> section');
  const service = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(service, 'the section shows its service');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 2, 'set up, then run the service and call it');
  const expected = [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].find(
    (match) => match[1] === '',
  )?.[2];
  assert.ok(expected, 'the section shows what the calls print');
  return { service, script: blocks.join('\n'), expected };
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('docs/api.md: a resource server that asks Tessera', { timeout: 120_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-resource-server-'));
  let server: ServerProcess | undefined;

  before(async () => {
    mkdirSync(join(directory, 'data'));
    server = await startServerProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      DATABASE_URL: `sqlite:${join(directory, 'data', 'tessera.db')}`,
      IAM_DATA_DIR: join(directory, 'data'),
      LOG_LEVEL: 'warn',
    });
  });

  after(async () => {
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('deletes only what Tessera allows, and follows a deactivation at once', async () => {
    const { service, script, expected } = walkthrough();
    writeFileSync(join(directory, 'todo-service.mjs'), service);
    // What `npm install fastify jose` gives the service's directory.
    symlinkSync(join(repository, 'node_modules'), join(directory, 'node_modules'), 'dir');
    const servicePort = String(await freePort());
    const result = spawnSync(
      'bash',
      [
        '-euo',
        'pipefail',
        '-c',
        // The service started in the background stops with the script, however it ends.
        `trap 'kill $(jobs -p) 2>/dev/null' EXIT\n${script.replaceAll('127.0.0.1:8080', `127.0.0.1:${server!.port}`).replaceAll('127.0.0.1:3000', `127.0.0.1:${servicePort}`)}`,
      ],
      {
        cwd: directory,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, PORT: servicePort },
      },
    );
    assert.equal(result.status, 0, `walkthrough failed:\n${result.stdout}\n${result.stderr}`);
    assert.equal(result.stdout, expected);
  });
});
