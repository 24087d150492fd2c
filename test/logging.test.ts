import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../src/server.js';

describe('createLogger', () => {
  it('redacts Authorization wherever a request or its headers are logged', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(chunk.toString());
          callback();
        },
      }),
    );
    const authorization = 'apikey tsr_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
    logger.info({ req: { method: 'GET', headers: { authorization } } }, 'a request');
    logger.info({ headers: { authorization, accept: 'application/json' } }, 'some headers');
    logger.info({ authorization }, 'a bare header');
    assert.equal(lines.length, 3);
    for (const line of lines) {
      assert.ok(!line.includes('tsr_'), line);
      assert.match(line, /"authorization":"\[redacted\]"/);
    }
    assert.match(lines[1]!, /"accept":"application\/json"/, 'other headers are kept');
  });
});
