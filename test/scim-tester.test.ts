// An independent SCIM 2.0 compliance tester, the kind of check a directory administrator runs
// before going live: python-scim's scim2-tester (vendored in test/tools/scim2-tester, its
// licences beside it) against a fresh application of a real server, on SQLite and on
// PostgreSQL. It must find no error and run at least MIN_CHECKS checks.
//
// It needs Python 3 with venv and pip, and pip must reach an index with pydantic, httpx and
// email-validator (.ci/run installs python3-venv). Without them the test is skipped with the
// reason printed; in CI (CI=true) it fails instead.

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { skipUnless } from './required-service.js';
import {
  type ServerProcess,
  callServer,
  repository,
  serverEntry,
  startServerProcess,
} from './server-process.js';

const TESTER = join(repository, 'test/tools/scim2-tester/run.sh');
/** What the tester ran against this build (54 checks); fewer means checks stopped running. */
const MIN_CHECKS = 50;
const VENV = process.env.SCIM2_TESTER_VENV ?? join(tmpdir(), 'tessera-scim2-tester-venv');

/** Undefined once the tester's Python packages import in VENV; otherwise why they cannot. */
function pythonUnavailable(): string | undefined {
  const python = join(VENV, 'bin/python');
  const ready = () =>
    existsSync(python) &&
    spawnSync(python, ['-c', 'import pydantic, httpx, email_validator'], { stdio: 'ignore' })
      .status === 0;
  if (ready()) return undefined;
  const venv = spawnSync('python3', ['-m', 'venv', '--clear', VENV], { encoding: 'utf8' });
  if (venv.error !== undefined || venv.status !== 0) {
    return `python3 -m venv failed (install python3 and python3-venv): ${venv.error?.message ?? venv.stderr.trim().slice(-300)}`;
  }
  const pip = spawnSync(
    join(VENV, 'bin/pip'),
    ['install', '-q', '--retries', '1', '--timeout', '15', 'pydantic', 'httpx', 'email-validator'],
    { encoding: 'utf8' },
  );
  if (pip.status !== 0 || !ready()) {
    return `pip could not install pydantic, httpx and email-validator: ${pip.stderr.trim().slice(-300)}`;
  }
  return undefined;
}

const skipPython = skipUnless('Python for the SCIM tester', pythonUnavailable());
const skipPostgres = skipPython === false ? await skipWithoutPostgres() : skipPython;

/** Runs the tester against `clientId`'s SCIM service with `key`: its output and exit code. */
function runTester(
  server: ServerProcess,
  clientId: string,
  key: string,
): Promise<{ output: string; code: number }> {
  return new Promise((resolve) => {
    execFile(
      TESTER,
      [`${server.baseUrl}/scim/v2/${clientId}`, key],
      { env: { ...process.env, SCIM2_TESTER_VENV: VENV }, timeout: 240_000, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ output: `${stdout}${stderr}`, code });
      },
    );
  });
}

function conformance(store: 'SQLite' | 'PostgreSQL', reason: string | false) {
  describe(`SCIM compliance tester on ${store}`, { timeout: 300_000 }, () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tessera-scim-tester-'));
    const bootstrap = `tsr_bootstrap_${randomBytes(24).toString('hex')}`;
    let schema: string | undefined;
    let server: ServerProcess | undefined;

    before(async () => {
      if (reason !== false) return;
      let databaseUrl = `sqlite:${join(dataDir, 'tessera.db')}`;
      if (store === 'PostgreSQL') {
        schema = await createTestSchema();
        databaseUrl = databaseUrlFor(schema);
      }
      server = await startServerProcess(process.execPath, serverEntry(), {
        DATABASE_URL: databaseUrl,
        IAM_DATA_DIR: dataDir,
        IAM_BOOTSTRAP_API_KEY: bootstrap,
        LOG_LEVEL: 'warn',
      });
    });

    after(async () => {
      await server?.stop();
      if (schema !== undefined) await dropSchema(schema);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('finds no error against a fresh application', { skip: reason }, async () => {
      const call = (method: string, path: string, body?: unknown) =>
        callServer(server!, bootstrap, method, path, body);
      const application = await call('POST', '/applications', {
        client_id: 'conformance',
        display_name: 'Conformance',
        description: 'What the SCIM compliance tester provisions',
        scim_provider: 'scim_tester',
      });
      assert.equal(application.status, 201, JSON.stringify(application.body));
      const key = await call('POST', '/api-keys', {
        name: 'scim2-tester',
        roles: ['users:read', 'users:write'],
        applications: ['conformance'],
      });
      assert.equal(key.status, 201, JSON.stringify(key.body));

      const { output, code } = await runTester(server!, 'conformance', key.body.key as string);
      const summary = /^scim2-tester: (\d+) checks, (\d+) errors$/m.exec(output);
      assert.ok(summary !== null, `no summary line:\n${output}`);
      const [, checks, errors] = summary.map(Number);
      const failed = output.split('\n').filter((line) => /^(ERROR|CRITICAL) /.test(line));
      assert.deepEqual(failed, [], output);
      assert.equal(errors, 0, output);
      assert.ok(checks! >= MIN_CHECKS, `only ${checks} checks ran:\n${output}`);
      assert.equal(code, 0, output);
      process.stdout.write(`# ${store}: ${summary[0]}\n`);
    });
  });
}

conformance('SQLite', skipPython);
conformance('PostgreSQL', skipPostgres);
