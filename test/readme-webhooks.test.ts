// The README's webhook walkthrough, run as written against a fresh `npm start`: its receiver
// (the 10-line one, with the official verifier, installed from the npm registry as the README
// says) must print every change it is sent, and the checkout must be left as it was.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repository, type ServerProcess, startServerProcess } from './server-process.js';

function walkthrough(): { receiver: string; blocks: string[] } {
  const readme = readFileSync(join(repository, 'README.md'), 'utf8');
  const section = readme.split('<!-- webhooks -->')[1]?.split('<!-- /webhooks -->')[0];
  assert.ok(section, 'README.md has a <!-- webhooks --> section');
  const receiver = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(receiver, 'the section shows its receiver');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 3, 'start, create the webhook, make a change');
  // The first block starts the server: the test has done that already.
  return { receiver, blocks: blocks.slice(1) };
}

describe('README webhook walkthrough', { timeout: 120_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-readme-webhooks-'));
  // Stands for Tessera's checkout: the walkthrough's second terminal starts there.
  const checkout = join(directory, 'checkout');
  // Where `mktemp -d` makes the receiver's directory, so it goes when the test ends.
  const temporary = join(directory, 'tmp');
  let server: ServerProcess | undefined;

  before(async () => {
    mkdirSync(join(checkout, 'data'), { recursive: true });
    mkdirSync(temporary);
    server = await startServerProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      DATABASE_URL: `sqlite:${join(checkout, 'data', 'tessera.db')}`,
      IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
      LOG_LEVEL: 'warn',
    });
  });

  after(async () => {
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('receives the change, verified with the official Standard Webhooks library', () => {
    const { receiver, blocks } = walkthrough();
    const before = readdirSync(checkout, { recursive: true }).sort();
    // The reader saves the receiver where the second block left them.
    const save = `cat > receiver.mjs <<'RECEIVER'\n${receiver}RECEIVER`;
    const script = [blocks[0]!, save, blocks[1]!]
      .join('\n')
      .replaceAll('8080', String(server!.port));
    const result = spawnSync('bash', ['-euo', 'pipefail', '-c', `${script}\nkill %1`], {
      cwd: checkout,
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, TMPDIR: temporary },
    });
    assert.equal(result.status, 0, `walkthrough failed:\n${result.stdout}\n${result.stderr}`);
    assert.deepEqual(
      readdirSync(checkout, { recursive: true }).sort(),
      before,
      'the walkthrough leaves no file in the checkout (no package.json, receiver or log)',
    );
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
