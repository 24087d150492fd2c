// docs/operations.md is followed by operators who have only it. Its drill (a server with
// scheduled backups, a backup by hand, a mistake, a restore) runs here exactly as written,
// block after block; its unit file is checked by systemd's own verifier where there is one.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort, repository } from './server-process.js';

function drillScript(): string {
  const guide = readFileSync(join(repository, 'docs/operations.md'), 'utf8');
  const section = guide.split('<!-- walkthrough -->')[1]?.split('<!-- /walkthrough -->')[0];
  assert.ok(section, 'docs/operations.md has a <!-- walkthrough --> section');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.ok(blocks.length >= 4, 'the drill has its command blocks');
  return blocks.join('\n');
}

describe('docs/operations.md', () => {
  it('its drill runs as written: a scheduled backup, a backup by hand, a restore', async () => {
    // The only change: the port, since the test cannot assume 8080 is free.
    const port = String(await freePort());
    const script = drillScript().replaceAll('8080', port);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    for (const name of Object.keys(env)) if (name.startsWith('IAM_')) delete env[name];
    const result = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: repository,
      env,
      encoding: 'utf8',
      // Minutes on a machine whose cores other work keeps busy; seconds on a quiet one.
      timeout: 360_000,
    });
    assert.equal(result.status, 0, `the drill failed:\n${result.stdout}\n${result.stderr}`);
    const out = result.stdout;
    // The first scheduled backup, and its figures in /metrics.
    assert.match(out, /^tessera-\d{8}T\d{6}Z\.db$/m);
    assert.match(out, /^tessera_backup_interval_seconds 21600$/m);
    assert.match(out, /^tessera_backup_last_size_bytes \d+$/m);
    assert.match(out, /^tessera_backup_failures_total 0$/m);
    // The backup by hand, the mistake (404), the restore, the application back (200).
    assert.match(out, /^Backed up .*before-the-mistake\.db: .* integrity ok, /m);
    assert.deepEqual(
      out.split('\n').filter((line) => /^\d{3}$/.test(line)),
      ['404', '200'],
    );
    assert.match(out, /^The database it replaced is at .*tessera\.db\.replaced-\d{8}T\d{6}Z\.$/m);
    // The scheduled backup restores into a scratch directory.
    assert.match(out, /^Checked .*\/backups\/tessera-\d{8}T\d{6}Z\.db: integrity ok; /m);
    assert.match(out, /^There was no database there before\.$/m);
    assert.doesNotMatch(result.stderr, /tsr_[A-Za-z0-9_-]{43}/, 'no key printed');
  });

  const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
  it(
    'ships a unit file that systemd-analyze verify accepts',
    { skip: analyze.status === 0 ? false : 'systemd-analyze is not installed on this machine' },
    () => {
      const unit = join(repository, 'deploy/systemd/tessera.service');
      const verified = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      assert.equal(verified.status, 0, verified.stderr);
      assert.equal(verified.stderr, '', 'no warnings');
      const text = readFileSync(unit, 'utf8');
      for (const directive of [
        'User=tessera',
        'StateDirectory=tessera',
        'ProtectSystem=strict',
        'NoNewPrivileges=yes',
        'CapabilityBoundingSet=',
        'RestartPreventExitStatus=2',
      ]) {
        assert.match(text, new RegExp(`^${directive}$`, 'm'), directive);
      }
    },
  );
});
