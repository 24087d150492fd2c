// `npm run soak`: the long soak of test/soak.ts on a build of its own (so a rebuild of dist/
// meanwhile cannot hand it a half-written file), printing its figures. SOAK_CYCLES (default 200) start/SIGTERM cycles under load, then SOAK_SECONDS
// (default 300) of sustained mixed load; DATABASE_URL picks the store (default: a SQLite file).
// Exits 1 when any stop did not end with code 0 or any answer was unexpected.

import { buildServerCopy } from '../test/run-server.js';
import { runSoak } from '../test/soak.js';

const cycles = Number(process.env.SOAK_CYCLES ?? 200);
const loadSeconds = Number(process.env.SOAK_SECONDS ?? 300);
const build = process.env.SOAK_MAIN === undefined ? buildServerCopy() : undefined;
const main = process.env.SOAK_MAIN ?? build!.main;

process.stdout.write(
  `soak on Node.js ${process.versions.node}: ${cycles} cycles, ${loadSeconds} s sustained\n`,
);
const started = Date.now();
const report = await runSoak({
  main,
  cycles,
  loadSeconds,
  ...(process.env.DATABASE_URL === undefined ? {} : { databaseUrl: process.env.DATABASE_URL }),
  onProgress: (line) => process.stdout.write(`  ${line}\n`),
});
build?.remove();
process.stdout.write(
  `${JSON.stringify({ node: process.versions.node, ...report, seconds: Math.round((Date.now() - started) / 1000) }, null, 2)}\n`,
);
process.exit(report.badExits.length === 0 && report.unexpected.length === 0 ? 0 : 1);
