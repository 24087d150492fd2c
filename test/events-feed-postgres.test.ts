// The change feed's promise on PostgreSQL: a reader paging with `after` while 8 writers on 2
// instances commit never misses an event (ids are handed out in commit order, docs/architecture.md).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestSchema, databaseUrlFor, dropSchema, skipWithoutPostgres } from './postgres.js';
import { type ServerProcess, callServer, startServerProcess } from './server-process.js';

const skip = await skipWithoutPostgres();
const KEY = `tsr_feed_${'f'.repeat(41)}`;
const WRITERS = 8;
const WRITE_FOR_MS = 5000;

describe('the feed on 2 PostgreSQL instances with 8 writers', { skip, timeout: 180_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-feed-'));
  let schema = '';
  let instances: ServerProcess[] = [];

  before(async () => {
    schema = await createTestSchema();
    const start = (dataDir: string) =>
      startServerProcess(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        DATABASE_URL: databaseUrlFor(schema),
        IAM_DATA_DIR: dataDir,
        IAM_BOOTSTRAP_API_KEY: KEY,
        IAM_RATE_LIMIT_PER_MINUTE: '0',
        IAM_ACCESS_LOG: 'false',
        LOG_LEVEL: 'warn',
      });
    instances = await Promise.all([start(join(directory, 'a')), start(join(directory, 'b'))]);
    const created = await callServer(instances[0]!, KEY, 'POST', '/applications', {
      client_id: 'feed',
      display_name: 'Feed',
      description: '',
    });
    assert.equal(created.status, 201);
  });

  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await dropSchema(schema);
    rmSync(directory, { recursive: true, force: true });
  });

  it('a reader following with after sees every event, in order, exactly once', async () => {
    const start = await callServer(instances[1]!, KEY, 'GET', '/events?limit=1000');
    let position = (start.body as { next_after: string }).next_after;
    let writing = true;
    let acknowledged = 0;
    const writer = async (index: number) => {
      const instance = instances[index % 2]!;
      for (let n = 0; writing; n++) {
        const response = await callServer(instance, KEY, 'POST', '/applications/feed/users', {
          provider: 'feed_test',
          identifier: `w${index}-${n}`,
          name: `Writer ${index} ${n}`,
          email: `w${index}-${n}@example.com`,
          locale: 'en',
          roles: [],
          scopes: [],
        });
        assert.equal(response.status, 201);
        acknowledged += 1;
      }
    };
    const followed: string[] = [];
    const reader = async () => {
      // Small pages, from both instances in turn, as fast as they come.
      for (let turn = 0; writing || turn % 50 !== 0; turn++) {
        const page = await callServer(
          instances[turn % 2]!,
          KEY,
          'GET',
          `/events?type=user.created&limit=7&after=${position}`,
        );
        const body = page.body as { items: { id: string }[]; next_after: string };
        for (const event of body.items) followed.push(event.id);
        position = body.next_after;
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, index) => writer(index));
    const reading = reader();
    await new Promise((resolve) => setTimeout(resolve, WRITE_FOR_MS));
    writing = false;
    await Promise.all(writers);
    await reading;
    // Catch up on whatever committed after the reader's last page.
    for (;;) {
      const page = await callServer(
        instances[0]!,
        KEY,
        'GET',
        `/events?type=user.created&limit=1000&after=${position}`,
      );
      const body = page.body as { items: { id: string }[]; next_after: string };
      if (body.items.length === 0) break;
      for (const event of body.items) followed.push(event.id);
      position = body.next_after;
    }
    // The whole feed again, read afterwards, in big pages.
    const all: string[] = [];
    let from = (start.body as { next_after: string }).next_after;
    for (;;) {
      const page = await callServer(
        instances[1]!,
        KEY,
        'GET',
        `/events?type=user.created&limit=1000&after=${from}`,
      );
      const body = page.body as { items: { id: string }[]; next_after: string };
      if (body.items.length === 0) break;
      all.push(...body.items.map((event) => event.id));
      from = body.next_after;
    }
    process.stdout.write(
      `feed: ${acknowledged} users created by ${WRITERS} writers on 2 instances; ` +
        `${followed.length} events followed, ${all.length} in the feed\n`,
    );
    assert.ok(acknowledged > 50, 'the writers wrote');
    assert.equal(all.length, acknowledged, 'one event per acknowledged create');
    assert.deepEqual(followed, all, 'the follower saw every event, in order, once');
  });
});
