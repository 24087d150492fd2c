import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, call, createApplication, type TestContext } from './helpers.js';

describe('test helpers', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
  });
  after(() => ctx.close());

  it('creates and reads back an application through the real app', async () => {
    await createApplication(ctx);
    const response = await call(ctx, 'GET', '/applications/billing-web');
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().display_name, 'Billing');
  });
});
