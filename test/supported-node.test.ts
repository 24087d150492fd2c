// Node.js 20 is refused in one line that says how to get a supported one (README, Run it), and
// `npm ci` on it fails at once (.npmrc engine-strict) instead of installing for a minute first.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { unsupportedNodeRefusal } from '../src/supported-node.js';
import { repository } from './server-process.js';

describe('an unsupported Node.js', () => {
  it('is refused in one line naming scripts/with-node.sh', () => {
    const refusal = unsupportedNodeRefusal('20.20.2');
    assert.ok(refusal !== null);
    assert.doesNotMatch(refusal, /\n/);
    assert.match(refusal, /^tessera: Node\.js 20\.20\.2 is not supported; use Node\.js 22 or 24/);
    assert.match(
      refusal,
      /scripts\/with-node\.sh 24 npm ci && scripts\/with-node\.sh 24 npm start/,
    );
    assert.equal(unsupportedNodeRefusal('18.0.0')?.startsWith('tessera: Node.js 18.0.0'), true);
  });

  it('lets the LTS lines through', () => {
    for (const version of ['22.0.0', '22.23.3', '24.21.0', process.versions.node]) {
      assert.equal(unsupportedNodeRefusal(version), null, version);
    }
  });

  it('makes npm ci refuse a Node.js that engines excludes, at once (.npmrc engine-strict)', () => {
    assert.match(readFileSync(join(repository, '.npmrc'), 'utf8'), /^engine-strict=true$/m);
    // This Node.js is supported, so the check is shown on a copy of the project whose engines
    // exclude it, as Node.js 20 is excluded from the real one.
    const directory = mkdtempSync(join(tmpdir(), 'tessera-engines-'));
    try {
      for (const file of ['.npmrc', 'package-lock.json']) {
        copyFileSync(join(repository, file), join(directory, file));
      }
      const manifest = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8'));
      assert.equal(manifest.engines.node, '>=22');
      manifest.engines.node = '>=99';
      writeFileSync(join(directory, 'package.json'), JSON.stringify(manifest));
      const env = { ...process.env };
      // `npm test` passes its own configuration down as npm_config_*: let the copy's .npmrc speak.
      for (const name of Object.keys(env)) if (name.startsWith('npm_config_')) delete env[name];
      const result = spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts'], {
        cwd: directory,
        encoding: 'utf8',
        env,
        timeout: 60_000,
      });
      assert.notEqual(result.status, 0);
      assert.match(result.stderr, /EBADENGINE/);
      assert.match(result.stderr, /Required: \{"node":">=99"\}/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
