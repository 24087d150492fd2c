// A page of 100 users on SQLite, in-process and warm: through the store (rows read as arrays,
// records, resources, JSON.stringify: what GET …/users does) against the same page's JSON built
// by SQLite in one statement (json_group_array over json_object per row), in alternated rounds.
// What issue 30 asked before building lists in the database:
//
//   node --import tsx bench/list-json.ts        (BENCH_USERS, default 100,000)
//
// The statement's page differs from the API's in next_cursor only (null here).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { toUserResource, userPageJson } from '../src/modules/users/users.schemas.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { seedUsers } from '../test/seed-users.js';

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const PAGES = 300;
const ROUNDS = 6;

const directory = mkdtempSync(join(tmpdir(), 'tessera-list-json-'));
const connections: Database.Database[] = [];
const store = openSqliteStore({
  path: join(directory, 'tessera.db'),
  onConnection: (database) => connections.push(database),
});
try {
  await store.migrate();
  await seedUsers(store, 'bench-app', USERS);
  const filter = {
    clientId: 'bench-app',
    provider: null,
    email: null,
    role: null,
    scope: null,
    active: null,
  };
  const pageJson = connections[0]!.prepare(
    `select json_object('items', json_group_array(json(u)), 'next_cursor', null) from (
       select json_object('id', id, 'identifier', identifier, 'provider', provider, 'name', name,
         'avatar', avatar, 'email', email, 'locale', locale, 'roles', json(roles),
         'scopes', json(scopes), 'active', json(case when active then 'true' else 'false' end),
         'created_at', strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1000.0, 'unixepoch'),
         'updated_at', strftime('%Y-%m-%dT%H:%M:%fZ', updated_at / 1000.0, 'unixepoch')) as u
       from users where application = ? order by user_key limit 100)`,
  );
  pageJson.pluck();
  const throughStore = async () => {
    const users = await store.users.listUsers(filter, { after: null, limit: 101 });
    return userPageJson({ items: users.slice(0, 100).map(toUserResource), next_cursor: null });
  };
  const inSqlite = () => pageJson.get('bench-app') as string;
  if ((await throughStore()) !== inSqlite()) throw new Error('the two pages differ');
  const micros: Record<'store' | 'sqlite', number[]> = { store: [], sqlite: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['store', 'sqlite'] as const) : (['sqlite', 'store'] as const);
    for (const path of order) {
      const started = process.hrtime.bigint();
      for (let page = 0; page < PAGES; page++) {
        if (path === 'store') await throughStore();
        else inSqlite();
      }
      micros[path].push(Number(process.hrtime.bigint() - started) / 1000 / PAGES);
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const ratios = micros.store.map((store, round) => store / micros.sqlite[round]!);
  process.stdout.write(
    `${USERS.toLocaleString('en')} users, µs per page (median of ${ROUNDS} rounds): ` +
      `through the store ${median(micros.store).toFixed(0)}, ` +
      `built by SQLite ${median(micros.sqlite).toFixed(0)}; ` +
      `store ÷ SQLite per round, median ${median(ratios).toFixed(2)} ` +
      `(${ratios.map((ratio) => ratio.toFixed(2)).join(', ')})\n`,
  );
} finally {
  await store.close();
  rmSync(directory, { recursive: true, force: true });
}
