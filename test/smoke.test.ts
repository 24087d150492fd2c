// tessera-test: both-stores
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useTestApp, call, createApplication } from './helpers.js';

describe('test helpers', () => {
  const ctx = useTestApp();

  it('creates and reads back an application through the real app', async () => {
    await createApplication(ctx);
    const response = await call(ctx, 'GET', '/applications/billing-web');
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().display_name, 'Billing');
  });
});
