// Webhooks under SIGKILL: Tessera as its own process (the built dist), 16 writers creating
// users over HTTP, a webhook for every event pointing at a receiver in this process, and a
// kill -9 at a random moment of each cycle. After the last cycle the server runs until the
// receiver has every event of the feed: each must arrive at least once (duplicates are
// counted, never lost), first arrivals in event order, and every acknowledged create must
// have its user.created event.
//
// test/webhook-chaos.test.ts runs a few cycles; TESSERA_CHAOS_CYCLES=100 runs 100.

import { type ServerProcess, startServerProcess } from './server-process.js';
import { WebhookReceiver } from './webhook-receiver.js';

const WRITERS = 16;
const KEY = `tsr_chaos_${'w'.repeat(40)}`;

export interface WebhookChaosReport {
  cycles: number;
  /** Creates answered 201. */
  acknowledged: number;
  /** Events in the feed at the end. */
  events: number;
  /** Requests the receiver accepted. */
  deliveries: number;
  /** Deliveries of an event that had arrived before. */
  duplicates: number;
  /** Events of the feed that never arrived: must be 0. */
  lost: number;
  /** Acknowledged creates without their user.created event: must be 0. */
  missingEvents: number;
  /** First arrivals out of event order: must be 0. */
  outOfOrder: number;
  /** Deliveries the official verifier refused: must be 0. */
  refused: number;
}

export async function runWebhookChaos(options: {
  databaseUrl: string;
  cycles: number;
  main: string;
  dataDir: string;
  random?: () => number;
}): Promise<WebhookChaosReport> {
  const random = options.random ?? Math.random;
  const receiver = await WebhookReceiver.start();
  const env = {
    DATABASE_URL: options.databaseUrl,
    IAM_DATA_DIR: options.dataDir,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
    LOG_LEVEL: 'warn',
  };
  const start = () => startServerProcess(process.execPath, [options.main], env);
  const headers = { authorization: `apikey ${KEY}`, 'content-type': 'application/json' };
  const api = (server: ServerProcess, path: string) => `${server.baseUrl}/iam/api/v1${path}`;
  const acknowledgedUsers = new Set<string>();
  let cycles = 0;

  let server: ServerProcess;
  try {
    server = await start();
  } catch (error) {
    await receiver.close();
    throw error;
  }
  try {
    // A webhook receives what happens after its creation: events before it are not counted.
    const before = await readFeed(server, headers, null);
    const startAfter = [...before.keys()].at(-1) ?? null;
    const hook = await fetch(api(server, '/webhooks'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: receiver.url, event_types: ['*'] }),
    });
    if (hook.status !== 201) throw new Error(`setup failed: ${hook.status} ${await hook.text()}`);
    receiver.secrets.push(((await hook.json()) as { secret: string }).secret);
    const app = await fetch(api(server, '/applications'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ client_id: 'chaos', display_name: 'Chaos', description: '' }),
    });
    if (app.status !== 201) throw new Error(`setup failed: ${app.status}`);

    let serial = 0;
    for (let cycle = 0; cycle < options.cycles; cycle += 1) {
      let killed = false;
      const writer = async () => {
        while (!killed) {
          const identifier = `u${(serial += 1)}`;
          try {
            const response = await fetch(api(server, '/applications/chaos/users'), {
              method: 'POST',
              headers,
              body: JSON.stringify({
                provider: 'chaos_test',
                identifier,
                name: identifier,
                email: `${identifier}@example.com`,
                locale: 'en',
                roles: [],
                scopes: [],
              }),
              signal: AbortSignal.timeout(30_000),
            });
            await response.arrayBuffer();
            if (response.status === 201) acknowledgedUsers.add(identifier);
          } catch {
            return; // the server is gone: this cycle is over for this writer
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, writer);
      await new Promise((resolve) => setTimeout(resolve, 100 + random() * 700));
      killed = true;
      server.killAll('SIGKILL');
      await server.exited;
      await Promise.all(writers);
      server = await start();
      cycles += 1;
    }

    const feed = await readFeed(server, headers, startAfter);
    const deadline = Date.now() + 120_000;
    // One set per look: the receiver lives in this process, so the wait must stay cheap.
    const missing = () => {
      const arrived = new Set(receiver.ids());
      return [...feed.keys()].some((id) => !arrived.has(id));
    };
    while (missing() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const seen = new Set<string>();
    let duplicates = 0;
    let outOfOrder = 0;
    let last = '';
    for (const id of receiver.ids()) {
      if (seen.has(id)) {
        duplicates += 1;
        continue;
      }
      seen.add(id);
      if (id < last) outOfOrder += 1;
      last = id;
    }
    const created = new Set(
      [...feed.values()]
        .filter((event) => event.type === 'user.created')
        .map((event) => (event.resource as { id: { identifier: string } }).id.identifier),
    );
    return {
      cycles,
      acknowledged: acknowledgedUsers.size,
      events: feed.size,
      deliveries: receiver.received.length,
      duplicates,
      lost: [...feed.keys()].filter((id) => !seen.has(id)).length,
      missingEvents: [...acknowledgedUsers].filter((user) => !created.has(user)).length,
      outOfOrder,
      refused: receiver.refused.length,
    };
  } finally {
    server.killAll('SIGKILL');
    await server.exited;
    await receiver.close();
  }
}

async function readFeed(
  server: ServerProcess,
  headers: Record<string, string>,
  from: string | null,
): Promise<Map<string, { type: string; resource: unknown }>> {
  const events = new Map<string, { type: string; resource: unknown }>();
  let after: string | null = from;
  for (;;) {
    const query: string = `limit=1000${after === null ? '' : `&after=${after}`}`;
    const page = await fetch(`${server.baseUrl}/iam/api/v1/events?${query}`, { headers });
    if (page.status !== 200) throw new Error(`reading the feed failed: ${page.status}`);
    const body = (await page.json()) as {
      items: { id: string; type: string; resource: unknown }[];
    };
    for (const event of body.items) events.set(event.id, event);
    if (body.items.length === 0) return events;
    after = body.items.at(-1)!.id;
  }
}
