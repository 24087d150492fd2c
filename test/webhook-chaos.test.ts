// SIGKILL at random moments under 16 writers while a webhook receives every event (see
// test/webhook-chaos.ts). `npm test` runs a few cycles; TESSERA_CHAOS_CYCLES=100 runs 100.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildServerCopy } from './chaos.js';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { type WebhookChaosReport, runWebhookChaos } from './webhook-chaos.js';

const CYCLES = Number(process.env.TESSERA_CHAOS_CYCLES ?? 3);
const skipPostgres = await skipWithoutPostgres();

function assertEveryEventDelivered(store: string, report: WebhookChaosReport): void {
  process.stdout.write(
    `webhook chaos (${store}): ${report.cycles} kills, ${report.acknowledged} acknowledged ` +
      `creates, ${report.events} events, ${report.deliveries} deliveries, ` +
      `${report.duplicates} duplicates, lost = ${report.lost}, ` +
      `events missing = ${report.missingEvents}, out of order = ${report.outOfOrder}\n`,
  );
  assert.equal(report.cycles, CYCLES);
  assert.ok(report.acknowledged > 0, 'the writers got writes acknowledged');
  assert.equal(report.missingEvents, 0, 'every acknowledged create has its event');
  assert.equal(report.lost, 0, 'every event reached the receiver');
  assert.equal(report.outOfOrder, 0, 'first arrivals come in event order');
  assert.equal(report.refused, 0, 'the official verifier accepted every delivery');
  assert.ok(report.deliveries >= report.events);
}

describe('webhooks under SIGKILL', { timeout: 180_000 + CYCLES * 20_000 }, () => {
  let build: ReturnType<typeof buildServerCopy>;
  const directory = mkdtempSync(join(tmpdir(), 'tessera-webhook-chaos-'));
  before(() => {
    build = buildServerCopy();
  });
  after(() => {
    build?.remove();
    rmSync(directory, { recursive: true, force: true });
  });

  it(`delivers every event at least once on SQLite over ${CYCLES} kills`, async () => {
    const path = join(directory, 'sqlite', 'tessera.db');
    const report = await runWebhookChaos({
      databaseUrl: `sqlite:${path}`,
      cycles: CYCLES,
      main: build.main,
      dataDir: join(directory, 'sqlite'),
    });
    assertEveryEventDelivered('SQLite', report);
  });

  it(
    `delivers every event at least once on PostgreSQL over ${CYCLES} kills`,
    { skip: skipPostgres },
    async () => {
      const schema = await createTestSchema();
      try {
        const report = await runWebhookChaos({
          databaseUrl: databaseUrlFor(schema),
          cycles: CYCLES,
          main: build.main,
          dataDir: join(directory, 'postgres'),
        });
        assertEveryEventDelivered('PostgreSQL', report);
      } finally {
        await dropSchema(schema);
      }
    },
  );
});
