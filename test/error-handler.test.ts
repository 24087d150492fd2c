import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toProblem } from '../src/http/error-handler.js';
import { DuplicateError, MissingParentError, StoreUnavailableError } from '../src/store/errors.js';

describe('toProblem', () => {
  it('never lets an unexpected error describe itself', () => {
    const failure = toProblem(
      new Error('SELECT * FROM users WHERE secret = 1 at /srv/app/src/x.ts:12'),
    );
    assert.equal(failure.status, 500);
    assert.equal(failure.detail, 'An unexpected error occurred.');
  });

  it('maps store failures to 503, 409 and 404', () => {
    const writes = toProblem(new StoreUnavailableError('disk full', 'writes'));
    assert.equal(writes.status, 503);
    assert.equal(writes.headers['retry-after'], '2');
    assert.match(writes.detail, /reads still work/);
    assert.equal(toProblem(new StoreUnavailableError('gone')).status, 503);
    assert.equal(toProblem(new DuplicateError('dup')).status, 409);
    assert.equal(toProblem(new MissingParentError('missing')).status, 404);
  });
});
