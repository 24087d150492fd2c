import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { DuplicateError, MissingParentError, StoreUnavailableError } from '../errors.js';
import type { WriteTurn } from '../sql/commit-listeners.js';
import { SqliteWriteBatcher } from './sqlite-write-batcher.js';

// `children.parent` is checked only at COMMIT: a child and its parent written by two jobs
// commit only if both jobs share one transaction.
const SCHEMA = `
  create table items (name text primary key) strict;
  create table parents (id text primary key) strict;
  create table children (
    parent text not null references parents (id) deferrable initially deferred
  ) strict;
`;

function prepareDatabase(db: Database.Database): Database.Database {
  db.pragma('foreign_keys = ON');
  db.exec(SCHEMA);
  return db;
}

const insertItem = (db: Database.Database, name: string) => (): number[] => [
  db.prepare('insert into items (name) values (?)').run(name).changes,
];
const insertChild = (db: Database.Database, parent: string) => (): number[] => [
  db.prepare('insert into children (parent) values (?)').run(parent).changes,
];
const insertParent = (db: Database.Database, id: string) => (): number[] => [
  db.prepare('insert into parents (id) values (?)').run(id).changes,
];
const itemNames = (db: Database.Database): unknown[] =>
  db.prepare('select name from items order by name').pluck().all();

describe('SqliteWriteBatcher', () => {
  let db: Database.Database;
  let batcher: SqliteWriteBatcher;

  beforeEach(() => {
    db = prepareDatabase(new Database(':memory:'));
    batcher = new SqliteWriteBatcher(db);
  });

  afterEach(() => db.close());

  it('runs the writes queued in one event-loop turn in one transaction', async () => {
    const seen: { inTransaction: boolean; children: unknown }[] = [];
    const observe = () => {
      seen.push({
        inTransaction: db.inTransaction,
        children: db.prepare('select count(*) from children').pluck().get(),
      });
    };
    const results = await Promise.all([
      batcher.run(() => {
        observe();
        return insertChild(db, 'p')();
      }),
      batcher.run(() => {
        observe();
        return insertParent(db, 'p')();
      }),
    ]);
    assert.deepEqual(results, [[1], [1]]);
    assert.deepEqual(seen, [
      { inTransaction: true, children: 0 },
      { inTransaction: true, children: 1 },
    ]);
    assert.equal(db.prepare('select count(*) from children').pluck().get(), 1);
  });

  it('rolls a failing job back alone and commits the others of its batch', async () => {
    await batcher.run(insertItem(db, 'taken'));
    const notOurs = new RangeError('not a database error');
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a')),
      batcher.run(() => [...insertItem(db, 'b')(), ...insertItem(db, 'taken')()]),
      batcher.run(insertItem(db, 'c')),
      batcher.run(() => {
        insertItem(db, 'd')();
        throw notOurs;
      }),
    ]);
    assert.deepEqual(outcomes[0], { status: 'fulfilled', value: [1] });
    assert.equal(outcomes[1]!.status, 'rejected');
    assert.ok(outcomes[1].status === 'rejected' && outcomes[1].reason instanceof DuplicateError);
    assert.deepEqual(outcomes[2], { status: 'fulfilled', value: [1] });
    assert.deepEqual(outcomes[3], { status: 'rejected', reason: notOurs });
    assert.deepEqual(itemNames(db), ['a', 'c', 'taken']);
  });

  it('resolves each job with the change count of each of its statements', async () => {
    const changes = await batcher.run(() => [
      db.prepare("insert into items (name) values ('a'), ('b'), ('c')").run().changes,
      db.prepare("update items set name = name || '!' where name <> 'a'").run().changes,
      db.prepare("delete from items where name = 'missing'").run().changes,
    ]);
    assert.deepEqual(changes, [3, 2, 0]);
  });

  it('settles results only after COMMIT', async () => {
    const afterSettling = await batcher.run(insertItem(db, 'a')).then((changes) => ({
      changes,
      inTransaction: db.inTransaction,
      names: itemNames(db),
    }));
    assert.deepEqual(afterSettling, { changes: [1], inTransaction: false, names: ['a'] });
  });

  it('refuses every job of a batch whose COMMIT fails, and writes none of them', async () => {
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a')),
      batcher.run(insertChild(db, 'no such parent')),
    ]);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 'rejected' && outcome.reason instanceof MissingParentError);
    }
    assert.equal(db.inTransaction, false);
    assert.deepEqual(itemNames(db), []);
    assert.deepEqual(await batcher.run(insertItem(db, 'b')), [1]);
  });

  it('refuses the jobs run so far when the whole transaction is rolled back under them, and retries the rest', async () => {
    // What SQLite does by itself on some I/O and out-of-space errors.
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a')),
      batcher.run(() => {
        insertItem(db, 'b')();
        db.exec('ROLLBACK');
        return [1];
      }),
      batcher.run(insertItem(db, 'c')),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['rejected', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(outcomes[2], { status: 'fulfilled', value: [1] });
    assert.deepEqual(itemNames(db), ['c']);
    assert.equal(db.inTransaction, false);
  });

  it("runs the succeeded jobs' afterwards after every savepoint, in order, in the same transaction", async () => {
    const seen: { name: string; changes: number[]; inTransaction: boolean; names: unknown[] }[] =
      [];
    const afterwards = (name: string) => (changes: number[]) => {
      seen.push({ name, changes, inTransaction: db.inTransaction, names: itemNames(db) });
      insertItem(db, `${name} event`)();
    };
    await batcher.run(insertItem(db, 'taken'));
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a'), afterwards('a')),
      batcher.run(insertItem(db, 'taken'), afterwards('refused')),
      batcher.run(insertItem(db, 'b'), afterwards('b')),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    // Both writes had run when the first afterwards did; the refused write's never ran.
    assert.deepEqual(seen, [
      { name: 'a', changes: [1], inTransaction: true, names: ['a', 'b', 'taken'] },
      { name: 'b', changes: [1], inTransaction: true, names: ['a', 'a event', 'b', 'taken'] },
    ]);
    assert.deepEqual(itemNames(db), ['a', 'a event', 'b', 'b event', 'taken']);
  });

  it('refuses every job of a batch whose afterwards fails, and writes none of them', async () => {
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a'), insertItem(db, 'a event')),
      batcher.run(insertItem(db, 'b'), insertItem(db, 'a event')),
    ]);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 'rejected' && outcome.reason instanceof DuplicateError);
    }
    assert.equal(db.inTransaction, false);
    assert.deepEqual(itemNames(db), []);
    assert.deepEqual(await batcher.run(insertItem(db, 'c'), insertItem(db, 'c event')), [1]);
    assert.deepEqual(itemNames(db), ['c', 'c event']);
  });

  it('drains once every write queued so far is settled', async () => {
    await batcher.drain();
    const settled: string[] = [];
    void batcher.run(insertItem(db, 'a')).then(() => settled.push('a'));
    void batcher.run(insertItem(db, 'a')).catch(() => settled.push('duplicate refused'));
    void batcher.run(insertItem(db, 'b')).then(() => settled.push('b'));
    await batcher.drain();
    assert.deepEqual(settled, ['a', 'duplicate refused', 'b']);
    assert.deepEqual(itemNames(db), ['a', 'b']);
  });

  it('puts jobs queued while a batch settles into a new batch', async () => {
    const later = await batcher.run(insertItem(db, 'first')).then(() =>
      // Queued from within the settlement of the first batch; a child and its parent in
      // separate jobs commit only if these two share their (new) transaction.
      Promise.all([batcher.run(insertChild(db, 'p')), batcher.run(insertParent(db, 'p'))]),
    );
    assert.deepEqual(later, [[1], [1]]);
    assert.deepEqual(itemNames(db), ['first']);
    assert.equal(db.prepare('select count(*) from children').pluck().get(), 1);
  });
});

describe('SqliteWriteBatcher on a file another connection reads', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-batcher-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  let files = 0;
  let db: Database.Database;
  let other: Database.Database;
  let batcher: SqliteWriteBatcher;

  beforeEach(() => {
    const path = join(directory, `batcher-${++files}.sqlite`);
    db = prepareDatabase(new Database(path, { timeout: 0 }));
    db.pragma('journal_mode = WAL');
    other = new Database(path, { timeout: 0 });
    batcher = new SqliteWriteBatcher(db);
  });

  afterEach(() => {
    other.close();
    db.close();
  });

  it('settles a write once its COMMIT made it visible to other connections', async () => {
    let visibleDuringWork: unknown;
    const visibleWhenSettled = await batcher
      .run(() => {
        const changes = insertItem(db, 'a')();
        visibleDuringWork = itemNames(other);
        return changes;
      })
      .then(() => itemNames(other));
    assert.deepEqual(visibleDuringWork, []);
    assert.deepEqual(visibleWhenSettled, ['a']);
  });

  it('runs jobs queued while a batch settles after that batch committed', async () => {
    let visibleToNextBatch: unknown;
    await batcher.run(insertItem(db, 'first')).then(() =>
      batcher.run(() => {
        visibleToNextBatch = itemNames(other);
        return insertItem(db, 'second')();
      }),
    );
    assert.deepEqual(visibleToNextBatch, ['first']);
    assert.deepEqual(itemNames(other), ['first', 'second']);
  });

  it('refuses a batch with StoreUnavailableError while another connection holds the write lock', async () => {
    other.exec('BEGIN IMMEDIATE');
    const outcomes = await Promise.allSettled([
      batcher.run(insertItem(db, 'a')),
      batcher.run(insertItem(db, 'b')),
    ]);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError);
    }
    other.exec('ROLLBACK');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(await batcher.run(insertItem(db, 'c')), [1]);
    assert.deepEqual(itemNames(other), ['c']);
  });
});

describe('SqliteWriteBatcher limits', () => {
  it('commits a burst larger than one batch in several transactions, all acknowledged', async () => {
    const db = new Database(':memory:');
    db.exec('create table burst (n integer primary key)');
    const batcher = new SqliteWriteBatcher(db);
    const insert = db.prepare('insert into burst (n) values (?)');
    const results = await Promise.all(
      Array.from({ length: 1200 }, (_, n) => batcher.run(() => [insert.run(n).changes])),
    );
    assert.equal(results.length, 1200);
    assert.equal((db.prepare('select count(*) as c from burst').get() as { c: number }).c, 1200);
    db.close();
  });

  it('refuses writes after the database closed, as unavailable', async () => {
    const db = new Database(':memory:');
    const batcher = new SqliteWriteBatcher(db);
    db.close();
    await assert.rejects(
      batcher.run(() => [0]),
      (error) => error instanceof StoreUnavailableError,
    );
  });
});

/**
 * What the primary of IAM_WORKERS does for its workers, in one process: one holder at a time,
 * the others in the order they asked; a grant arrives a turn of the event loop later, as a
 * message would.
 */
class TurnKeeper {
  holder: string | undefined;
  readonly waiting: { name: string; granted: () => void }[] = [];
  readonly grants: string[] = [];

  turnFor(name: string): WriteTurn {
    return {
      request: (granted) => {
        if (this.holder === undefined) this.#grant(name, granted);
        else this.waiting.push({ name, granted });
      },
      release: () => {
        assert.equal(this.holder, name, 'only the holder hands the turn on');
        this.holder = undefined;
        const next = this.waiting.shift();
        if (next !== undefined) this.#grant(next.name, next.granted);
      },
    };
  }

  #grant(name: string, granted: () => void): void {
    this.holder = name;
    this.grants.push(name);
    setImmediate(granted);
  }
}

describe('SqliteWriteBatcher with a write turn shared by two processes', () => {
  const directory = mkdtempSync(join(tmpdir(), 'tessera-batcher-turn-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  let files = 0;
  let first: Database.Database;
  let second: Database.Database;

  beforeEach(() => {
    const path = join(directory, `turn-${++files}.sqlite`);
    // No busy handler: a BEGIN that found the other connection's lock would fail at once.
    first = prepareDatabase(new Database(path, { timeout: 0 }));
    first.pragma('journal_mode = WAL');
    second = new Database(path, { timeout: 0 });
  });

  afterEach(() => {
    second.close();
    first.close();
  });

  it("takes both writers' bursts one transaction at a time, each begun only with the turn, refusing none", async () => {
    const keeper = new TurnKeeper();
    const begunWithoutTurn: string[] = [];
    const writer = (db: Database.Database, name: string) => {
      const batcher = new SqliteWriteBatcher(db, { writeTurn: keeper.turnFor(name) });
      const insert = db.prepare('insert into items (name) values (?)');
      return (n: number) =>
        batcher.run(() => {
          if (keeper.holder !== name) begunWithoutTurn.push(name);
          return [insert.run(`${name}-${n}`).changes];
        });
    };
    const one = writer(first, 'one');
    const two = writer(second, 'two');
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, n) => (n % 2 === 0 ? one(n) : two(n))),
    );
    assert.equal(results.length, 300);
    assert.deepEqual(begunWithoutTurn, []);
    assert.equal(itemNames(first).length, 300);
    assert.equal(keeper.holder, undefined, 'the turn was handed back');
    assert.ok(keeper.grants.includes('one') && keeper.grants.includes('two'));
  });

  it('gathers the writes queued while it waits for the turn into the batch written with it', async () => {
    const keeper = new TurnKeeper();
    const batcher = new SqliteWriteBatcher(first, { writeTurn: keeper.turnFor('one') });
    const commits: number[] = [];
    batcher.observers.push({ committed: () => commits.push(1) });
    // The sibling holds the turn while three turns of this process's event loop queue writes.
    const sibling = keeper.turnFor('two');
    sibling.request(() => {});
    const written: Promise<number[]>[] = [];
    for (let turn = 0; turn < 3; turn += 1) {
      written.push(batcher.run(insertItem(first, `item-${turn}`)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    sibling.release();
    await Promise.all(written);
    assert.equal(commits.length, 1);
    assert.deepEqual(itemNames(second), ['item-0', 'item-1', 'item-2']);
  });

  it('writes without the turn when it never comes (the primary gone), as SQLite keeps writers apart', async () => {
    const lost: WriteTurn = { request: () => {}, release: () => assert.fail('never granted') };
    const batcher = new SqliteWriteBatcher(first, { writeTurn: lost });
    assert.deepEqual(await batcher.run(insertItem(first, 'a')), [1]);
    assert.deepEqual(itemNames(second), ['a']);
  });

  it('waits on its timer for a process outside the turn that holds the lock, then writes', async () => {
    const keeper = new TurnKeeper();
    const batcher = new SqliteWriteBatcher(first, { writeTurn: keeper.turnFor('one') });
    // A CLI command's transaction on the same file.
    second.exec('BEGIN IMMEDIATE');
    const written = batcher.run(insertItem(first, 'a'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    second.exec('COMMIT');
    assert.deepEqual(await written, [1]);
    assert.deepEqual(itemNames(second), ['a']);
    assert.equal(keeper.holder, undefined, 'the turn was not kept while waiting for the lock');
  });
});
