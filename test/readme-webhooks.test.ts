// The README's webhook walkthrough, run as written against a fresh `npm start`: its receiver
// (the 10-line one, with the official verifier) must print every change it is sent.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repository, type ServerProcess, startServerProcess } from './server-process.js';

function walkthrough(): { receiver: string; script: string } {
  const readme = readFileSync(join(repository, 'README.md'), 'utf8');
  const section = readme.split('<!-- webhooks -->')[1]?.split('<!-- /webhooks -->')[0];
  assert.ok(section, 'README.md has a <!-- webhooks --> section');
  const receiver = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(receiver, 'the section shows its receiver');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 3, 'start, create the webhook, make a change');
  // The first block starts the server: the test has done that already.
  return { receiver, script: blocks.slice(1).join('\n') };
}

describe('README webhook walkthrough', { timeout: 120_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-readme-webhooks-'));
  let server: ServerProcess | undefined;

  before(async () => {
    mkdirSync(join(directory, 'data'));
    server = await startServerProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      DATABASE_URL: `sqlite:${join(directory, 'data', 'tessera.db')}`,
      IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
      LOG_LEVEL: 'warn',
    });
  });

  after(async () => {
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('receives the change, verified with the official Standard Webhooks library', () => {
    const { receiver, script } = walkthrough();
    writeFileSync(join(directory, 'receiver.mjs'), receiver);
    // What `npm install standardwebhooks` gives the receiver's directory.
    symlinkSync(join(repository, 'node_modules'), join(directory, 'node_modules'), 'dir');
    const port = String(server!.port);
    const result = spawnSync(
      'bash',
      ['-euo', 'pipefail', '-c', `${script.replaceAll('8080', port)}\nkill %1`],
      { cwd: directory, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(result.status, 0, `walkthrough failed:\n${result.stdout}\n${result.stderr}`);
    const feed = /^\{"items":\[(\{"id":"([0-9]+)","type":"application.created".*)$/m.exec(
      result.stdout,
    );
    assert.ok(feed, `the feed shows the change:\n${result.stdout}`);
    assert.match(
      result.stdout,
      new RegExp(`verified ${feed[2]} application.created \\[.*"after":"CRM"`, 'm'),
      `the receiver printed nothing verified; stderr:\n${result.stderr}`,
    );
  });
});
