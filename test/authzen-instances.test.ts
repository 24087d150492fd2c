// tessera-test: both-stores
// Two instances on one PostgreSQL answer authorization decisions from the database, not from
// memory: a role removed, a user deactivated or an application's model changed through one
// instance changes the very next decision of the other.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  TEST_STORE,
  type TestContext,
  buildTestApp,
  call,
  createApplication,
  createUser,
} from './helpers.js';
import {
  createTestSchema,
  dropSchema,
  openTestPostgresStore,
  skipWithoutPostgres,
} from './postgres.js';

// These instances are PostgreSQL's whatever the pass: they run once, in the PostgreSQL pass.
const skip =
  TEST_STORE === 'postgres'
    ? await skipWithoutPostgres()
    : 'instances on one PostgreSQL: run in the PostgreSQL pass';

describe(
  'authorization decisions on two instances of one PostgreSQL',
  { skip, timeout: 60_000 },
  () => {
    const instances: TestContext[] = [];
    let schema = '';
    let key = '';

    before(async () => {
      schema = await createTestSchema();
      for (let index = 0; index < 2; index++) {
        instances.push(await buildTestApp({ store: await openTestPostgresStore({ schema }) }));
      }
      const [writer] = instances as [TestContext, TestContext];
      await createApplication(writer, {
        client_id: 'todo',
        authorization: { actions: { can_create_todo: { roles: ['editor'] } } },
      });
      await createUser(writer, 'todo', { identifier: 'morty', roles: ['editor'] });
      key = await writer.createKey({ roles: ['decisions:read'], applications: ['todo'] });
    });
    after(async () => {
      for (const instance of instances) await instance.close();
      await dropSchema(schema);
    });

    async function decision(instance: TestContext): Promise<boolean> {
      const response = await call(instance, 'POST', '//access/v1/evaluation', {
        key: null,
        headers: { authorization: `Bearer ${key}` },
        body: {
          subject: { type: 'user', id: 'google_oauth2:morty' },
          action: { name: 'can_create_todo' },
          resource: { type: 'todo', id: 'todo-1' },
        },
      });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<{ decision: boolean }>().decision;
    }

    const change = (instance: TestContext, path: string, body: unknown) =>
      call(instance, 'PATCH', path, { body }).then((response) => {
        assert.equal(response.statusCode, 200, response.body);
      });
    const morty = '/applications/todo/users/google_oauth2/morty';

    it('sees a change made through the other instance in its very next decision', async () => {
      const [one, other] = instances as [TestContext, TestContext];
      // Both have decided once (anything one could keep would be warm now).
      assert.equal(await decision(one), true);
      assert.equal(await decision(other), true);
      const steps: [TestContext, string, unknown, boolean][] = [
        [one, morty, { roles: ['viewer'] }, false],
        [one, morty, { roles: ['editor'] }, true],
        [other, morty, { active: false }, false],
        [one, morty, { active: true }, true],
        [
          one,
          '/applications/todo',
          { authorization: { actions: { can_create_todo: null } } },
          false,
        ],
        [other, '/applications/todo', { authorization: null }, false],
        [one, morty, { roles: ['editor', 'can_create_todo'] }, true],
      ];
      for (const [writer, path, body, expected] of steps) {
        await change(writer, path, body);
        for (const reader of instances) {
          assert.equal(await decision(reader), expected, `${path} ${JSON.stringify(body)}`);
        }
      }
    });
  },
);
