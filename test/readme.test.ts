// The README's walkthrough is a promise to newcomers: it must work verbatim against a fresh
// `npm start`. This runs it, block by block as one script, exactly as written.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repository, type ServerProcess, startServerProcess } from './server-process.js';

function walkthroughScript(): string {
  const readme = readFileSync(join(repository, 'README.md'), 'utf8');
  const section = readme.split('<!-- walkthrough -->')[1]?.split('<!-- /walkthrough -->')[0];
  assert.ok(section, 'README.md has a <!-- walkthrough --> section');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.ok(blocks.length >= 10, 'the walkthrough has its command blocks');
  return blocks.join('\n');
}

describe('README walkthrough', { timeout: 180_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-readme-'));
  let server: ServerProcess | undefined;

  before(async () => {
    server = await startServerProcess('npm', ['start'], {
      DATABASE_URL: `sqlite:${join(directory, 'data', 'tessera.db')}`,
      LOG_LEVEL: 'warn',
    });
  });

  after(async () => {
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('runs as written and shows what the text says it shows', () => {
    // The only change: the port, since the test cannot assume 8080 is free.
    const script = walkthroughScript().replaceAll('127.0.0.1:8080', `127.0.0.1:${server!.port}`);
    const result = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: directory,
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, `walkthrough failed:\n${result.stdout}\n${result.stderr}`);
    const lines = result.stdout.split('\n');
    // The three status codes the text promises: a stale ETag, a missing role, a revoked key,
    // and the deleted application.
    assert.deepEqual(
      lines.filter((line) => /^\d{3}$/.test(line)),
      ['412', '403', '401', '404'],
    );
    assert.match(result.stdout, /"client_id":"billing-web"/);
    assert.match(result.stdout, /"identifier":"CN=Grace Hopper,OU=Navy"/);
    assert.match(result.stdout, /"key":"tsr_[A-Za-z0-9_-]{43}"/);
    assert.match(result.stdout, /^200 application\/json/m);
    // The authorization decisions: Ada may refund; an action the model does not list is denied.
    assert.deepEqual(
      lines.filter((line) => line.startsWith('{"decision"')),
      ['{"decision":true}', '{"decision":false}'],
    );
  });
});
