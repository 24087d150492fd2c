// A short soak on the runtime the suite runs on (`npm run soak` is the long one): start/SIGTERM
// cycles under load and a sustained mixed load with frequent garbage collection. better-sqlite3
// 12 on Node.js 24 aborted here at the first start (SIGABRT in Statement::~Statement).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildServerCopy } from './chaos.js';
import { runSoak } from './soak.js';

describe('the server under a soak with frequent garbage collection', () => {
  let build: ReturnType<typeof buildServerCopy>;
  before(() => {
    build = buildServerCopy();
  });
  after(() => build.remove());

  it('exits 0 on every SIGTERM and answers every request as it should', async () => {
    const report = await runSoak({ main: build.main, cycles: 3, loadSeconds: 4 });
    assert.deepEqual(report.badExits, []);
    assert.deepEqual(report.unexpected, []);
    assert.equal(report.cycles, 3);
    // How many ran depends on the machine; that every kind of request ran does not.
    assert.ok(report.requests > 100, `only ${report.requests} requests ran`);
    assert.ok((report.statuses[201] ?? 0) > 0, 'users were created');
    assert.ok((report.statuses[200] ?? 0) > 0, 'users were read');
  });
});
