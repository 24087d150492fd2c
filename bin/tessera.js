#!/usr/bin/env node
// The `tessera` command. Runs the compiled CLI; `npm ci` (prepare) and `npm start` build it.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('tessera: not built yet; run `npm run build` first\n');
  process.exit(1);
}
const { runCli } = await import(entry.href);
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
