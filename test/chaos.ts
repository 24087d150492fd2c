// The chaos run: Tessera as its own process (the built dist, started as `npm start` starts it),
// 16 writers creating and replacing users over HTTP, and a SIGKILL at a random moment. After
// every kill the server is started again and every user is read back: an acknowledged write
// must be there with exactly its acknowledged value; a write that got no answer may have
// landed or not, but never in part. On SQLite, `PRAGMA integrity_check` must say ok.
// The audit trail is checked at the end, read through the feed (`after` pages): every write
// that happened (acknowledged, or unanswered and found landed) has exactly one event, and no
// event exists for a write that did not happen.
//
// `npm test` runs a few cycles (test/chaos.test.ts); `npm run test:chaos` runs 100.

import Database from 'better-sqlite3';
import { type ServerProcess, startServerProcess } from './server-process.js';

export { buildServerCopy } from './run-server.js';

const WRITERS = 16;
const APPLICATION = 'chaos';
const KEY = `tsr_chaos_${'k'.repeat(40)}`;

/** The fields a user body sets: every one of them carries the version that wrote it. */
interface Body {
  name: string;
  email: string;
  locale: string;
  roles: string[];
  scopes: string[];
}

function bodyFor(user: string, version: number): Body {
  const tag = `${user}-v${version}`;
  return {
    name: `Writer ${tag}`,
    email: `${tag}@example.com`,
    locale: 'en-GB',
    roles: [`role-${tag}`],
    scopes: [`version:${tag}`],
  };
}

const same = (a: Body, b: Body) =>
  a.name === b.name &&
  a.email === b.email &&
  a.locale === b.locale &&
  JSON.stringify(a.roles) === JSON.stringify(b.roles) &&
  JSON.stringify(a.scopes) === JSON.stringify(b.scopes);

/** What the test knows of one user: its confirmed value (undefined: absent) and unanswered writes. */
interface Known {
  confirmed: Body | undefined;
  unanswered: Body[];
}

export interface ChaosOptions {
  /** A DATABASE_URL for the server. */
  databaseUrl: string;
  /** The SQLite file, for PRAGMA integrity_check; undefined on PostgreSQL. */
  sqlitePath?: string;
  cycles: number;
  /** The built server's dist/main.js. */
  main: string;
  /** Where the server may write its files. */
  dataDir: string;
  /** A random source, for reproducible runs. */
  random?: () => number;
}

export interface ChaosReport {
  cycles: number;
  /** Writes answered 200/201. */
  acknowledged: number;
  /** Writes that got no answer (the kill cut them off). */
  unanswered: number;
  /** Of those, how many were found to have landed. */
  unansweredLanded: number;
  /** Acknowledged writes not found with their value: must be 0. */
  lost: number;
  /** Users found in a state no write of the test produced (a half write): must be 0. */
  corrupt: number;
  /** Answers other than 200/201 while the server was up: must be empty. */
  unexpected: string[];
  integrity: string[];
  /** user.* events of the run, read through GET /events with `after`. */
  events: number;
  /** Writes that happened without their event: must be 0. */
  missingEvents: number;
  /** Events of writes that did not happen: must be 0. */
  phantomEvents: number;
  /** Writes with more than one event: must be 0. */
  duplicateEvents: number;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const random = options.random ?? Math.random;
  const known = new Map<string, Known>();
  const owned: string[][] = Array.from({ length: WRITERS }, () => []);
  const serials: number[] = owned.map(() => 0);
  const report: ChaosReport = {
    cycles: 0,
    acknowledged: 0,
    unanswered: 0,
    unansweredLanded: 0,
    lost: 0,
    corrupt: 0,
    unexpected: [],
    integrity: [],
    events: 0,
    missingEvents: 0,
    phantomEvents: 0,
    duplicateEvents: 0,
  };
  /** The names (one per version) of the writes that happened: acknowledged or found landed. */
  const happened = new Set<string>();
  const env = {
    DATABASE_URL: options.databaseUrl,
    IAM_DATA_DIR: options.dataDir,
    IAM_BOOTSTRAP_API_KEY: KEY,
    IAM_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  };
  const start = () => startServerProcess(process.execPath, [options.main], env);
  const headers = { authorization: `apikey ${KEY}`, 'content-type': 'application/json' };

  let server: ServerProcess = await start();
  const usersUrl = () => `${server.baseUrl}/iam/api/v1/applications/${APPLICATION}/users`;
  const created = await fetch(`${server.baseUrl}/iam/api/v1/applications`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ client_id: APPLICATION, display_name: 'Chaos', description: '' }),
  });
  if (created.status !== 201) throw new Error(`setup failed: ${created.status}`);

  let version = 0;
  try {
    for (let cycle = 0; cycle < options.cycles; cycle += 1) {
      let killed = false;
      const writer = async (index: number) => {
        while (!killed) {
          const mine = owned[index]!;
          const create = mine.length === 0 || random() < 0.3;
          const user = create
            ? `w${index}-u${(serials[index]! += 1)}`
            : mine[Math.floor(random() * mine.length)]!;
          const body = bodyFor(user, (version += 1));
          const entry = known.get(user) ?? { confirmed: undefined, unanswered: [] };
          known.set(user, entry);
          if (create) mine.push(user);
          entry.unanswered.push(body);
          let status: number;
          try {
            const response = await fetch(create ? usersUrl() : `${usersUrl()}/chaos_test/${user}`, {
              method: create ? 'POST' : 'PUT',
              headers,
              body: JSON.stringify(
                create ? { identifier: user, provider: 'chaos_test', ...body } : body,
              ),
              signal: AbortSignal.timeout(30_000),
            });
            status = response.status;
            await response.arrayBuffer();
          } catch {
            report.unanswered += 1;
            return; // the server is gone: this cycle is over for this writer
          }
          if (status === (create ? 201 : 200)) {
            entry.confirmed = body;
            entry.unanswered = [];
            report.acknowledged += 1;
            happened.add(body.name);
          } else {
            report.unexpected.push(`${create ? 'POST' : 'PUT'} ${user}: ${status}`);
            entry.unanswered.pop();
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, (_, index) => writer(index));
      await new Promise((resolve) => setTimeout(resolve, 100 + random() * 700));
      killed = true;
      server.killAll('SIGKILL');
      await server.exited;
      await Promise.all(writers);
      if (server.output().includes(KEY)) throw new Error('the server logged the API key');

      server = await start();
      await verify(usersUrl(), headers, known, report, happened);
      for (const mine of owned) {
        mine.splice(0, mine.length, ...mine.filter((user) => known.get(user)?.confirmed));
      }
      if (options.sqlitePath !== undefined) {
        const database = new Database(options.sqlitePath, { readonly: true, fileMustExist: true });
        try {
          const rows = database.pragma('integrity_check', { simple: false }) as {
            integrity_check: string;
          }[];
          const verdict = rows.map((row) => row.integrity_check).join('; ');
          if (verdict !== 'ok') report.integrity.push(`cycle ${cycle}: ${verdict}`);
        } finally {
          database.close();
        }
      }
      report.cycles += 1;
    }
    await verifyEvents(server.baseUrl, headers, happened, report);
  } finally {
    server.killAll('SIGKILL');
    await server.exited;
  }
  return report;
}

/** Reads every user back and checks it against what the writers know; then trusts the store. */
async function verify(
  url: string,
  headers: Record<string, string>,
  known: Map<string, Known>,
  report: ChaosReport,
  happened: Set<string>,
): Promise<void> {
  const stored = new Map<string, Body>();
  let cursor: string | null = null;
  do {
    const page = await fetch(
      `${url}?limit=1000${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      { headers },
    );
    if (page.status !== 200) throw new Error(`listing users failed: ${page.status}`);
    const body = (await page.json()) as {
      items: (Body & { identifier: string })[];
      next_cursor: string | null;
    };
    for (const item of body.items) stored.set(item.identifier, item);
    cursor = body.next_cursor;
  } while (cursor !== null);

  for (const identifier of stored.keys()) {
    if (!known.has(identifier)) report.corrupt += 1; // a user nobody wrote
  }
  for (const [user, entry] of known) {
    const found = stored.get(user);
    if (found !== undefined && entry.unanswered.some((body) => same(body, found))) {
      report.unansweredLanded += 1;
      happened.add(found.name);
    } else if (
      found === undefined ? entry.confirmed !== undefined : entry.confirmed === undefined
    ) {
      // An acknowledged user missing, or a user whose every create was refused present.
      if (found === undefined) report.lost += 1;
      else report.corrupt += 1;
    } else if (found !== undefined && !same(found, entry.confirmed!)) {
      // Neither the acknowledged value nor one that got no answer: an acknowledged write was
      // lost (a whole older value is back) or a write landed in part.
      report.lost += 1;
      const version = /-v([0-9]+)$/.exec(found.name)?.[1];
      if (version === undefined || !same(found, bodyFor(user, Number(version)))) {
        report.corrupt += 1;
      }
    }
    // From here on, what the store holds is what the writers build on.
    entry.confirmed = found === undefined ? undefined : pick(found);
    entry.unanswered = [];
  }
}

/**
 * Reads every user event of the run through the feed, `after` page by page, and matches each
 * to the write it records by the `name` it set (every write sets a name of its own version).
 */
async function verifyEvents(
  baseUrl: string,
  headers: Record<string, string>,
  happened: Set<string>,
  report: ChaosReport,
): Promise<void> {
  const seen = new Map<string, number>();
  let after: string | null = null;
  for (;;) {
    const query: string = `type=user.*&client_id=${APPLICATION}&limit=1000${after === null ? '' : `&after=${after}`}`;
    const page = await fetch(`${baseUrl}/iam/api/v1/events?${query}`, { headers });
    if (page.status !== 200) throw new Error(`reading events failed: ${page.status}`);
    const body = (await page.json()) as {
      items: { changes: { member: string; after: unknown }[] | null }[];
      next_after: string | null;
    };
    if (body.items.length === 0) break;
    for (const event of body.items) {
      const name = event.changes?.find((change) => change.member === 'name')?.after;
      const key = typeof name === 'string' ? name : '(an event without a name)';
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    report.events += body.items.length;
    after = body.next_after;
  }
  for (const name of happened) if (!seen.has(name)) report.missingEvents += 1;
  for (const [name, count] of seen) {
    if (!happened.has(name)) report.phantomEvents += count;
    else if (count > 1) report.duplicateEvents += count - 1;
  }
}

function pick(user: Body): Body {
  return {
    name: user.name,
    email: user.email,
    locale: user.locale,
    roles: user.roles,
    scopes: user.scopes,
  };
}
