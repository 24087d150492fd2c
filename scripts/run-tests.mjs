// `npm test`: runs every *.test.ts under src/ and test/ with node's test runner (via tsx).
// Node 20's --test takes no ** globs and a bare --test that finds nothing exits 0, so the
// files are listed here, counted, and an empty list is a failure.
// `npm test -- test/users.test.ts` runs just the named files.

import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function findTests(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const named = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const options = process.argv.slice(2).filter((arg) => arg.startsWith('-'));
const files = named.length > 0 ? named : [...findTests('src'), ...findTests('test')].sort();
if (files.length === 0) {
  process.stderr.write('no test files found\n');
  process.exit(1);
}
process.stdout.write(`running ${files.length} test file(s)\n`);
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=180000',
    ...options,
    ...files,
  ],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
