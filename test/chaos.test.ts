// SIGKILL at random moments under 16 concurrent writers, on both stores (see test/chaos.ts).
// `npm test` runs 5 cycles per store; `npm run test:chaos` runs 100 (TESSERA_CHAOS_CYCLES).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildServerCopy, type ChaosReport, runChaos } from './chaos.js';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';

const CYCLES = Number(process.env.TESSERA_CHAOS_CYCLES ?? 5);
const skipPostgres = await skipWithoutPostgres();

function assertNothingLost(report: ChaosReport): void {
  process.stdout.write(
    `chaos: ${report.cycles} cycles, ${report.acknowledged} acknowledged writes, ` +
      `${report.unanswered} unanswered (${report.unansweredLanded} of them landed), ` +
      `lost = ${report.lost}, corrupt = ${report.corrupt}; events: ${report.events}, ` +
      `missing = ${report.missingEvents}, phantom = ${report.phantomEvents}, ` +
      `duplicate = ${report.duplicateEvents}\n`,
  );
  assert.equal(report.cycles, CYCLES);
  assert.ok(report.acknowledged > 0, 'the writers got writes acknowledged');
  assert.deepEqual(report.unexpected, []);
  assert.equal(report.lost, 0, 'every acknowledged write is there with its value');
  assert.equal(report.corrupt, 0, 'no write landed in part');
  assert.deepEqual(report.integrity, []);
  assert.equal(report.missingEvents, 0, 'every write that happened has its event');
  assert.equal(report.phantomEvents, 0, 'no event for a write that did not happen');
  assert.equal(report.duplicateEvents, 0, 'no write has two events');
  assert.equal(report.events, report.acknowledged + report.unansweredLanded);
}

describe('SIGKILL under concurrent writers', { timeout: 60_000 + CYCLES * 20_000 }, () => {
  let build: ReturnType<typeof buildServerCopy>;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-chaos-'));
  before(() => {
    build = buildServerCopy();
  });
  after(() => {
    build?.remove();
    rmSync(directory, { recursive: true, force: true });
  });

  it(`loses no acknowledged write on SQLite over ${CYCLES} kills`, async () => {
    const path = join(directory, 'sqlite', 'tessera.db');
    const report = await runChaos({
      databaseUrl: `sqlite:${path}`,
      sqlitePath: path,
      cycles: CYCLES,
      main: build.main,
      dataDir: join(directory, 'sqlite'),
    });
    assertNothingLost(report);
  });

  it(
    `loses no acknowledged write on PostgreSQL over ${CYCLES} kills`,
    { skip: skipPostgres },
    async () => {
      const schema = await createTestSchema();
      try {
        const report = await runChaos({
          databaseUrl: databaseUrlFor(schema),
          cycles: CYCLES,
          main: build.main,
          dataDir: join(directory, 'postgres'),
        });
        assertNothingLost(report);
      } finally {
        await dropSchema(schema);
      }
    },
  );
});
