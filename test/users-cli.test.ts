import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { tesseraOn } from './cli-runs.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe('tessera users import | export', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-users-cli-'));
  const database = join(directory, 'tessera.db');
  after(() => rmSync(directory, { recursive: true, force: true }));

  before(async () => {
    assert.equal((await tesseraOn(database, ['migrate'], {})).code, 0);
    const store = openSqliteStore({ path: database });
    await store.applications.insertApplication(
      {
        clientId: 'app',
        displayName: 'App',
        description: '',
        mode: 'internal',
        jwtExpirationInMinutes: 60,
        externalTokenValidation: null,
        scimProvider: null,
        authorization: null,
        createdAt: T0,
        updatedAt: T0,
        etag: 'e1',
      },
      [],
    );
    await store.close();
  });

  const user = (n: number, overrides: Record<string, unknown> = {}) =>
    JSON.stringify({
      provider: 'google_oauth2',
      identifier: `user-${n}`,
      name: `User ${n}`,
      email: `user${n}@example.com`,
      locale: 'en',
      roles: ['admin'],
      scopes: [],
      ...overrides,
    });

  it('imports a file, prints a summary, and exits 1 with the invalid lines written beside it', async () => {
    const file = join(directory, 'users.ndjson');
    writeFileSync(file, [user(1), user(2, { email: 'nope' }), user(3)].join('\n'));
    const first = await tesseraOn(database, ['users', 'import', file, '--client-id', 'app']);
    assert.equal(first.code, 1, first.stderr);
    assert.match(first.stdout, /read 3, created 2, updated 0, unchanged 0, skipped 0, invalid 1/);
    assert.match(
      first.stderr,
      /1 line\(s\) invalid; their errors are in .*users\.ndjson\.errors\.ndjson/,
    );
    const errors = readFileSync(`${file}.errors.ndjson`, 'utf8').trimEnd().split('\n');
    assert.deepEqual(
      errors.map((line) => {
        const { line: number, pointer } = JSON.parse(line) as { line: number; pointer: string };
        return [number, pointer];
      }),
      [[2, '/email']],
    );
    // Plain progress lines, not a bar, when standard error is no terminal.
    assert.doesNotMatch(first.stderr, /\r/);

    const fixed = join(directory, 'fixed.ndjson');
    writeFileSync(fixed, [user(1), user(2), user(3)].join('\n'));
    const second = await tesseraOn(database, ['users', 'import', fixed, '--client-id', 'app']);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /created 1, updated 0, unchanged 2/);
    assert.equal(existsSync(`${fixed}.errors.ndjson`), false);

    const dry = await tesseraOn(database, [
      'users',
      'import',
      fixed,
      '--client-id',
      'app',
      '--dry-run',
      '--on-conflict',
      'skip',
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(
      dry.stdout,
      /^dry run of import .* succeeded: read 3, created 0, updated 0, unchanged 3/,
    );
  });

  it('exports to a file, or to standard output, with the filters', async () => {
    const output = join(directory, 'export.ndjson');
    const exported = await tesseraOn(database, [
      'users',
      'export',
      '--client-id',
      'app',
      '--output',
      output,
    ]);
    assert.equal(exported.code, 0, exported.stderr);
    const lines = readFileSync(output, 'utf8').trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { identifier: string }).identifier),
      ['user-1', 'user-2', 'user-3'],
    );
    const filtered = await tesseraOn(database, [
      'users',
      'export',
      '--client-id',
      'app',
      '--email',
      'USER2@example.com',
    ]);
    assert.equal(filtered.code, 0, filtered.stderr);
    assert.equal(filtered.stdout.trimEnd().split('\n').length, 1);
    // And the export imports back as it is: nothing to change.
    const back = await tesseraOn(database, ['users', 'import', output, '--client-id', 'app']);
    assert.match(back.stdout, /unchanged 3, skipped 0, invalid 0/);
  });

  it('refuses bad arguments in one line with exit code 2', async () => {
    const file = join(directory, 'users.ndjson');
    for (const args of [
      ['users', 'import', file, '--client-id', 'app', '--format', 'csv'],
      ['users', 'import', file, '--client-id', 'app', '--on-conflict', 'merge'],
      ['users', 'import', file, '--client-id', 'app', '--provider-map', 'google'],
      ['users', 'import', join(directory, 'missing.ndjson'), '--client-id', 'app'],
      ['users', 'export', '--client-id', 'app', '--active', 'maybe'],
    ]) {
      const result = await tesseraOn(database, args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
    }
    const ghost = await tesseraOn(database, ['users', 'import', file, '--client-id', 'ghost']);
    assert.equal(ghost.code, 1);
    assert.match(ghost.stderr, /ghost/);
  });
});
