// Where a batch of AuthZEN evaluations spends its CPU, in one process (no sockets, no load
// generator, so a loaded machine skews it less): the store's one statement, the service's
// decisions on top of it, and the whole request through app.inject (parsing and validating
// the body, the route, serializing). SQLite in memory with BENCH_USERS users (default
// 100,000), warmed up first; CPU time from process.cpuUsage, median of BENCH_ROUNDS rounds.
//
//   node --import tsx bench/authzen-steps.ts            (run with --cpu-prof for a profile)

import { buildTestApp } from '../test/helpers.js';
import { seedUsers, seededIdentifier } from '../test/seed-users.js';
import { BATCH_SIZE, BENCH_AUTHORIZATION } from './authzen.js';
import { percentile } from './bench-kit.js';

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLIENT_ID = 'bench-app';

const ctx = await buildTestApp();
await seedUsers(ctx.store, CLIENT_ID, USERS);
const patched = await ctx.app.inject({
  method: 'PATCH',
  url: `/iam/api/v1/applications/${CLIENT_ID}`,
  headers: {
    authorization: `apikey ${ctx.adminKey}`,
    'content-type': 'application/merge-patch+json',
  },
  payload: JSON.stringify({ authorization: BENCH_AUTHORIZATION }),
});
if (patched.statusCode !== 200) throw new Error(patched.body);

const randomRow = () => Math.floor(Math.random() * USERS);
let sent = 0;
function question(n: number) {
  const kind = sent++ % 4;
  return {
    subject: { type: 'user', id: `google_oauth2:${seededIdentifier(n)}` },
    action: {
      name: kind === 2 ? 'read_invoice' : kind === 3 ? 'delete_invoice' : 'update_invoice',
    },
    resource: {
      type: 'invoice',
      id: `inv-${n}`,
      properties: { ownerEmail: `user${kind === 1 ? n + 1 : n}@example.com` },
    },
  };
}
const batches = Array.from({ length: 50 }, () =>
  Array.from({ length: BATCH_SIZE }, () => question(randomRow())),
);

type Step = (batch: ReturnType<typeof question>[]) => Promise<unknown>;
const steps: Record<string, Step> = {
  'store: findApplicationWithDecidingUsers (one statement)': (batch) =>
    ctx.store.users.findApplicationWithDecidingUsers(CLIENT_ID, {
      ids: batch.map((q) => q.subject.id),
      identities: batch.map((q) => {
        const [provider, identifier] = q.subject.id.split(':') as [string, string];
        return { provider, identifier };
      }),
    }),
  'service: evaluate (the statement and 100 decisions)': (batch) =>
    ctx.services.authzen.evaluate(
      batch.map((q) => ({
        clientId: CLIENT_ID,
        subject: q.subject,
        action: q.action.name,
        resource: q.resource,
      })),
    ),
  'HTTP: POST /access/v1/evaluations (app.inject)': async (batch) => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/access/v1/evaluations',
      headers: { authorization: `Bearer ${ctx.adminKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ context: { client_id: CLIENT_ID }, evaluations: batch }),
    });
    if (response.statusCode !== 200) throw new Error(response.body);
  },
  'one: store: findApplicationWithDecidingUsers': (batch) =>
    ctx.store.users.findApplicationWithDecidingUsers(CLIENT_ID, {
      ids: [batch[0]!.subject.id],
      identities: [{ provider: 'google_oauth2', identifier: batch[0]!.subject.id.split(':')[1]! }],
    }),
  'one: store: findUser (what GET user reads)': (batch) =>
    ctx.store.users.findUser({
      clientId: CLIENT_ID,
      provider: 'google_oauth2',
      identifier: batch[0]!.subject.id.split(':')[1]!,
    }),
  'one: HTTP: POST /access/v1/evaluation (app.inject)': async (batch) => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/access/v1/evaluation',
      headers: { authorization: `Bearer ${ctx.adminKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ ...batch[0], context: { client_id: CLIENT_ID } }),
    });
    if (response.statusCode !== 200) throw new Error(response.body);
  },
  'HTTP: GET user (app.inject), for scale': async (batch) => {
    const [provider, identifier] = batch[0]!.subject.id.split(':') as [string, string];
    const response = await ctx.app.inject({
      method: 'GET',
      url: `/iam/api/v1/applications/${CLIENT_ID}/users/${provider}/${identifier}`,
      headers: { authorization: `apikey ${ctx.adminKey}` },
    });
    if (response.statusCode !== 200) throw new Error(response.body);
  },
};

async function cpuPerCall(step: Step): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < ITERATIONS; i++) await step(batches[i % batches.length]!);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / ITERATIONS;
}

/** BENCH_STEP=<word>: only the steps whose name holds it (for a profile of one). */
const only = process.env.BENCH_STEP;
for (const [name, step] of Object.entries(steps)) {
  if (only !== undefined && !name.includes(only)) continue;
  await cpuPerCall(step); // warm-up
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await cpuPerCall(step));
  process.stdout.write(
    `${name}: ${percentile(
      [...rounds].sort((a, b) => a - b),
      50,
    ).toFixed(0)} µs CPU per call ` +
      `(rounds ${rounds.map((value) => value.toFixed(0)).join(', ')})\n`,
  );
}
await ctx.close();
