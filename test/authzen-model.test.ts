// tessera-test: both-stores
// An application's `authorization` member: validated by the applications' domain
// core on create, PUT and PATCH, null by default, reset by a PUT that leaves it out, merged by a
// PATCH, and recorded as application.authorization_changed besides application.updated.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createApplication, problemOf, useTestApp } from './helpers.js';

const ctx = useTestApp();

const MODEL = {
  actions: {
    can_read_todos: { roles: ['viewer', 'editor'] },
    can_update_todo: {
      roles: ['evil_genius'],
      owner_roles: ['editor'],
      owner: { resource_property: 'ownerID', user_attribute: 'email' },
    },
  },
};

let counter = 0;
async function fresh(authorization?: unknown): Promise<string> {
  const clientId = `model-${++counter}`;
  await createApplication(ctx, {
    client_id: clientId,
    ...(authorization === undefined ? {} : { authorization }),
  });
  return clientId;
}

async function authorizationOf(clientId: string): Promise<unknown> {
  const response = await call(ctx, 'GET', `/applications/${clientId}`);
  return response.json<{ authorization: unknown }>().authorization;
}

describe('an application’s authorization', () => {
  it('is null by default, and kept exactly as given', async () => {
    assert.equal(await authorizationOf(await fresh()), null);
    const clientId = await fresh(MODEL);
    assert.deepEqual(await authorizationOf(clientId), MODEL);
    const listed = await call(ctx, 'GET', '/applications?limit=1000');
    const item = listed
      .json<{ items: { client_id: string; authorization: unknown }[] }>()
      .items.find((application) => application.client_id === clientId);
    assert.deepEqual(item?.authorization, MODEL);
  });

  it('is refused when it breaks a rule, on create, PUT and PATCH, naming the member at fault', async () => {
    const clientId = await fresh(MODEL);
    const cases: [unknown, string][] = [
      [{}, '/authorization/actions'],
      [[], '/authorization'],
      [{ actions: [] }, '/authorization/actions'],
      [{ actions: { x: { roles: 'viewer' } } }, '/authorization/actions/x/roles'],
      [{ actions: { x: { roles: ['no spaces'] } } }, '/authorization/actions/x/roles/0'],
      [{ actions: { x: { grants: [] } } }, '/authorization/actions/x/grants'],
      [{ actions: { x: { owner_roles: ['editor'] } } }, '/authorization/actions/x/owner'],
      [
        {
          actions: {
            x: { owner_roles: ['e'], owner: { resource_property: 'o', user_attribute: 'phone' } },
          },
        },
        '/authorization/actions/x/owner/user_attribute',
      ],
      [{ actions: { 'bad\u0000name': {} } }, '/authorization/actions/bad\u0000name'],
    ];
    for (const [authorization, pointer] of cases) {
      const created = await call(ctx, 'POST', '/applications', {
        body: {
          client_id: `refused-${++counter}`,
          display_name: 'R',
          description: '',
          authorization,
        },
      });
      assert.equal(
        problemOf(created, 400).errors?.[0]?.pointer,
        pointer,
        JSON.stringify(authorization),
      );
      const replaced = await call(ctx, 'PUT', `/applications/${clientId}`, {
        body: { display_name: 'R', description: '', authorization },
      });
      assert.equal(problemOf(replaced, 400).errors?.[0]?.pointer, pointer);
    }
    // A merge patch is judged by its result.
    const patched = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: { authorization: { actions: { can_update_todo: { owner: null } } } },
    });
    assert.equal(
      problemOf(patched, 400).errors?.[0]?.pointer,
      '/authorization/actions/can_update_todo/owner',
    );
    const big = await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: {
        authorization: {
          actions: Object.fromEntries(
            Array.from({ length: 200 }, (_, index) => [
              `action_${index}`,
              { roles: Array.from({ length: 4 }, (_, role) => `r${role}`.padEnd(40, 'x')) },
            ]),
          ),
        },
      },
    });
    assert.match(problemOf(big, 400).errors?.[0]?.detail ?? '', /32 KiB/);
    assert.deepEqual(await authorizationOf(clientId), MODEL, 'nothing changed');
  });

  it('returns to null when a PUT leaves it out, merges under PATCH, resets under PATCH null', async () => {
    const clientId = await fresh(MODEL);
    await call(ctx, 'PATCH', `/applications/${clientId}`, {
      body: {
        authorization: { actions: { can_read_todos: null, can_delete_todo: { roles: ['admin'] } } },
      },
    });
    assert.deepEqual(await authorizationOf(clientId), {
      actions: {
        can_update_todo: MODEL.actions.can_update_todo,
        can_delete_todo: { roles: ['admin'] },
      },
    });
    await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { authorization: null } });
    assert.equal(await authorizationOf(clientId), null);
    await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { authorization: MODEL } });
    const replaced = await call(ctx, 'PUT', `/applications/${clientId}`, {
      body: { display_name: 'Todo', description: '' },
    });
    assert.equal(replaced.statusCode, 200);
    assert.equal(await authorizationOf(clientId), null);
  });

  it('records application.authorization_changed besides application.updated', async () => {
    const clientId = await fresh();
    await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { authorization: MODEL } });
    await call(ctx, 'PATCH', `/applications/${clientId}`, { body: { description: 'only this' } });
    const response = await call(
      ctx,
      'GET',
      `/events?client_id=${clientId}&resource_type=application`,
    );
    const events = response.json<{
      items: { type: string; changes: { member: string; before: unknown; after: unknown }[] }[];
    }>().items;
    assert.deepEqual(
      events.map((event) => event.type),
      [
        'application.created',
        'application.updated',
        'application.authorization_changed',
        'application.updated',
      ],
    );
    assert.deepEqual(events[2]!.changes, [{ member: 'authorization', before: null, after: MODEL }]);
    assert.deepEqual(
      events[1]!.changes.map((change) => change.member),
      ['authorization'],
    );
  });
});
