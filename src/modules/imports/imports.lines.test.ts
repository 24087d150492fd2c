import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  MAX_ITEM_BYTES,
  type SourceItem,
  jsonDocumentUsers,
  ndjsonLines,
} from './imports.lines.js';

async function items(source: AsyncGenerator<SourceItem>): Promise<SourceItem[]> {
  const all: SourceItem[] = [];
  for await (const item of source) all.push(item);
  return all;
}

/** The bytes in chunks of `size` (a chunk may end inside a character or a line). */
async function* chunked(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  for (let start = 0; start < bytes.length; start += size)
    yield bytes.subarray(start, start + size);
}

describe('ndjsonLines', () => {
  it('numbers lines from 1, skips blank ones, drops CR, whatever the chunks', async () => {
    const text = '{"a":"é"}\r\n\n  \n{"b":"請"}\n{"c":1}';
    for (const size of [1, 2, 3, 7, 1000]) {
      assert.deepEqual(await items(ndjsonLines(chunked(text, size))), [
        { line: 1, text: '{"a":"é"}' },
        { line: 4, text: '{"b":"請"}' },
        { line: 5, text: '{"c":1}' },
      ]);
    }
  });

  it('reports a line that is too long or not UTF-8, and goes on with the next', async () => {
    async function* source() {
      yield Buffer.from('{"ok":1}\n');
      yield Buffer.alloc(MAX_ITEM_BYTES + 10, 0x61);
      yield Buffer.from('\n');
      yield Buffer.from([0xff, 0xfe, 0x0a]);
      yield Buffer.from('{"ok":2}\n');
    }
    const read = await items(ndjsonLines(source()));
    assert.deepEqual(
      read.map((item) => [item.line, item.text ?? item.error]),
      [
        [1, '{"ok":1}'],
        [2, `the line is longer than ${MAX_ITEM_BYTES} bytes`],
        [3, 'the line is not valid UTF-8'],
        [4, '{"ok":2}'],
      ],
    );
  });
});

describe('jsonDocumentUsers', () => {
  it('yields the elements of the top-level users array, whatever the chunks', async () => {
    const text = JSON.stringify({
      realm: 'users',
      roles: { users: [{ name: 'not this one' }] },
      users: [
        { username: 'a', note: 'a } ] " \\ b' },
        'x',
        { username: 'b', nested: [{ users: [] }] },
        7,
      ],
      clients: [{ clientId: 'c' }],
    });
    for (const size of [1, 5, 64, 100_000]) {
      const read = await items(jsonDocumentUsers(chunked(text, size)));
      assert.deepEqual(
        read.map((item) => [
          item.line,
          item.text === undefined ? item.error : JSON.parse(item.text),
        ]),
        [
          [1, { username: 'a', note: 'a } ] " \\ b' }],
          [2, 'the element of `users` is not an object'],
          [3, { username: 'b', nested: [{ users: [] }] }],
          [4, 'the element of `users` is not an object'],
        ],
      );
    }
  });

  it('ends with an error when the document is not an object or stops early', async () => {
    assert.deepEqual(await items(jsonDocumentUsers(chunked('[1]', 10))), [
      { line: 1, error: 'the document is not a JSON object with a `users` array' },
    ]);
    assert.deepEqual(await items(jsonDocumentUsers(chunked('{"users": [{"a": 1}, {"b"', 10))), [
      { line: 1, text: '{"a": 1}' },
      { line: 2, error: 'the document ends before it is complete' },
    ]);
  });
});
