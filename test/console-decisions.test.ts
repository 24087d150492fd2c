// tessera-test: both-stores
// An application's authorization in the admin console (inject): the model edited as checked
// JSON, its errors at their place in the JSON, and the dry run "would this user be allowed?"
// answering what POST /access/v1/evaluation answers, with the reason.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConsoleClient } from './console-client.js';
import { type TestContext, buildTestApp, call, createApplication, createUser } from './helpers.js';

const TODO_MODEL = {
  actions: {
    can_read_todos: { roles: ['viewer', 'editor', 'admin'] },
    can_update_todo: {
      roles: ['evil_genius'],
      owner_roles: ['editor'],
      owner: { resource_property: 'ownerID', user_attribute: 'email' },
    },
  },
};

/** The text of the dry run's result: "Allowed: …" or "Denied: …", tags and spacing dropped. */
function resultOf(body: string): string {
  const result = /<div class="result [a-z]+" role="status">([\s\S]*?)<\/div>/.exec(body);
  assert.ok(result, 'the page shows a result');
  return result[1]!
    .replace(/<[^>]+>/g, '')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .trim();
}

/** What the API answers to the same question. */
async function apiDecision(
  ctx: TestContext,
  subject: string,
  action: string,
  properties?: Record<string, unknown>,
): Promise<boolean> {
  const response = await call(ctx, 'POST', '//access/v1/evaluation', {
    body: {
      subject: { type: 'user', id: subject },
      action: { name: action },
      resource: { type: 'todo', id: '1', ...(properties ? { properties } : {}) },
      context: { client_id: 'todo' },
    },
  });
  assert.equal(response.statusCode, 200, response.body);
  return response.json().decision;
}

describe('admin console: an application’s authorization', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx, { client_id: 'todo', display_name: 'Todo' });
    await createUser(ctx, 'todo', {
      identifier: 'morty',
      email: 'morty@example.com',
      name: 'Morty',
      roles: ['editor'],
    });
    await createUser(ctx, 'todo', {
      identifier: 'summer',
      email: 'summer@example.com',
      name: 'Summer',
      roles: ['viewer'],
      active: false,
    });
  });
  after(() => ctx.close());

  async function signedIn(key = ctx.adminKey): Promise<ConsoleClient> {
    const client = new ConsoleClient(ctx);
    assert.equal((await client.signIn(key)).statusCode, 303);
    await client.get('/console/applications/todo');
    return client;
  }

  function etagOf(body: string): string {
    return /name="etag" value="([^"]+)"/.exec(body)![1]!;
  }

  it('saves the model as JSON: the API, the events and the next decision follow it', async () => {
    const client = await signedIn();
    const page = await client.get('/console/applications/todo');
    assert.match(page.body, /<h2>Authorization<\/h2>/);
    assert.equal(await apiDecision(ctx, 'google_oauth2:morty', 'editor'), true, 'no model yet');
    const saved = await client.post('/console/applications/todo/authorization', {
      etag: etagOf(page.body),
      authorization: JSON.stringify(TODO_MODEL),
    });
    assert.equal(saved.statusCode, 303, saved.body);
    assert.equal(
      saved.headers.location,
      '/console/applications/todo?notice=authorization-saved#authorization',
    );
    const shown = await client.get(saved.headers.location!);
    assert.match(shown.body, /The authorization was saved/);
    assert.match(shown.body, /&quot;can_update_todo&quot;: \{/, 'shown indented');
    assert.deepEqual(
      (await call(ctx, 'GET', '/applications/todo')).json().authorization,
      TODO_MODEL,
    );
    assert.equal(await apiDecision(ctx, 'google_oauth2:morty', 'editor'), false, 'the model rules');
    const events = (await call(ctx, 'GET', '/events?client_id=todo')).json().items;
    assert.ok(
      events.some((event: { type: string }) => event.type === 'application.authorization_changed'),
    );
    // The settings form leaves the model alone.
    const settings = await client.post('/console/applications/todo', {
      etag: etagOf(shown.body),
      display_name: 'Todo app',
      description: '',
    });
    assert.equal(settings.statusCode, 303, settings.body);
    assert.deepEqual(
      (await call(ctx, 'GET', '/applications/todo')).json().authorization,
      TODO_MODEL,
    );
  });

  it('shows each error of the model at its place in the JSON, and changes nothing', async () => {
    const client = await signedIn();
    const page = await client.get('/console/applications/todo');
    const before = (await call(ctx, 'GET', '/applications/todo')).json();
    const unreadable = await client.post('/console/applications/todo/authorization', {
      etag: etagOf(page.body),
      authorization: '{"actions": ',
    });
    assert.equal(unreadable.statusCode, 400);
    assert.match(
      unreadable.body,
      /id="field-authorization"\s+name="authorization"\s+aria-describedby="field-authorization-hint field-authorization-error"\s+aria-invalid="true"/,
    );
    assert.match(
      unreadable.body,
      /id="field-authorization-error">Authorization \(JSON\) must be valid JSON/,
    );
    assert.match(unreadable.body, /\{&quot;actions&quot;: <\/textarea>/, 'what was typed stays');

    const wrong = await client.post('/console/applications/todo/authorization', {
      etag: etagOf(page.body),
      authorization: JSON.stringify({
        actions: {
          'a/b': { roles: ['bad role'] },
          edit: { owner_roles: ['editor'] },
        },
      }),
    });
    assert.equal(wrong.statusCode, 400);
    const error = (body: string) => /id="field-authorization-error">([^<]*)</.exec(body)![1]!;
    assert.equal(
      error(wrong.body),
      'Authorization (JSON) at /actions/a~1b/roles/0: must be 1–64 characters of A–Z a–z 0–9 . _ : -.',
    );
    const unpaired = await client.post('/console/applications/todo/authorization', {
      etag: etagOf(page.body),
      authorization: JSON.stringify({ actions: { edit: { owner_roles: ['editor'] } } }),
    });
    assert.equal(unpaired.statusCode, 400);
    assert.equal(
      error(unpaired.body),
      'Authorization (JSON) at /actions/edit/owner: is required with owner_roles.',
    );
    const stale = await client.post('/console/applications/todo/authorization', {
      etag: '"not-the-version"',
      authorization: 'null',
    });
    assert.equal(stale.statusCode, 412);
    assert.match(stale.body, /changed this meanwhile/);
    const after = (await call(ctx, 'GET', '/applications/todo')).json();
    assert.deepEqual(after, before, 'nothing changed');
  });

  it('answers "would this user be allowed?" as the API does, and says why', async () => {
    const client = await signedIn();
    const page = await client.get('/console/applications/todo');
    assert.match(page.body, /Would this user be allowed\?/);
    assert.match(page.body, /<option value="google_oauth2:morty">\s*Morty \(morty@example.com\)/);
    assert.match(page.body, /<option value="can_update_todo"><\/option>/);
    const ask = async (fields: Record<string, string>) => {
      const response = await client.post('/console/applications/todo/decision', {
        resource_type: 'todo',
        resource_id: '1',
        resource_properties: '',
        ...fields,
      });
      assert.equal(response.statusCode, 200, response.body);
      return resultOf(response.body);
    };
    const cases: [Record<string, string>, RegExp][] = [
      [
        { subject: 'google_oauth2:morty', action: 'can_read_todos' },
        /^Allowed: the user holds "editor", a role that may take "can_read_todos" on any resource\./,
      ],
      [
        {
          subject: 'google_oauth2:morty',
          action: 'can_update_todo',
          resource_properties: '{"ownerID": "MORTY@example.com"}',
        },
        /^Allowed: the user holds "editor", a role that may take "can_update_todo" on what they own, and the resource's "ownerID" is the user's email\./,
      ],
      [
        {
          subject: 'google_oauth2:morty',
          action: 'can_update_todo',
          resource_properties: '{"ownerID": "rick@example.com"}',
        },
        /^Denied: the user may take "can_update_todo" only on what they own, and the resource's "ownerID" \("rick@example.com"\) is not the user's email\./,
      ],
      [
        { subject: 'google_oauth2:morty', action: 'can_delete_todo' },
        /^Denied: "can_delete_todo" is not an action of the application's authorization model\./,
      ],
      [
        { subject: 'google_oauth2:summer', action: 'can_read_todos' },
        /^Denied: the user is inactive \(inactive users are always denied\)\. Summer \(google_oauth2:summer\) · inactive · roles: viewer$/,
      ],
      [
        { subject: 'google_oauth2:nobody', action: 'can_read_todos' },
        /^Denied: no user of this application has this id/,
      ],
    ];
    for (const [fields, expected] of cases) {
      const shown = await ask(fields);
      assert.match(shown, expected);
      const properties =
        fields.resource_properties === undefined
          ? undefined
          : JSON.parse(fields.resource_properties);
      const allowed = await apiDecision(ctx, fields.subject!, fields.action!, properties);
      assert.equal(shown.startsWith('Allowed'), allowed, `the API agrees: ${shown}`);
    }
    // The user's id names them too; a role removed changes the very next answer.
    const morty = (await call(ctx, 'GET', '/applications/todo/users/google_oauth2/morty')).json();
    assert.match(await ask({ subject: morty.id, action: 'can_read_todos' }), /^Allowed/);
    const patched = await call(ctx, 'PATCH', '/applications/todo/users/google_oauth2/morty', {
      body: { roles: [] },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.match(
      await ask({ subject: morty.id, action: 'can_read_todos' }),
      /^Denied: the user holds none of the roles that may take "can_read_todos" \("viewer", "editor", "admin"\)\./,
    );
  });

  it('shows the dry run’s field errors next to their fields', async () => {
    const client = await signedIn();
    const response = await client.post('/console/applications/todo/decision', {
      subject: '',
      action: '',
      resource_type: 'todo',
      resource_id: '',
      resource_properties: '["not", "an", "object"]',
    });
    assert.equal(response.statusCode, 400);
    assert.match(response.body, /id="field-subject-error">User is required/);
    assert.match(response.body, /id="field-action-error">Action is required/);
    assert.match(
      response.body,
      /id="field-resource_properties-error">Properties \(JSON\) must be an object/,
    );
    assert.match(response.body, /value="todo"/, 'what was typed stays in the form');
    assert.doesNotMatch(response.body, /role="status"/);
  });

  it('offers the dry run only to a key holding decisions:read, and the form only to writers', async () => {
    const reader = await signedIn(
      await ctx.createKey({ roles: ['applications:read'], name: 'reader' }),
    );
    const page = await reader.get('/console/applications/todo');
    assert.equal(page.statusCode, 200);
    assert.doesNotMatch(page.body, /Would this user be allowed/);
    assert.doesNotMatch(page.body, /name="authorization"/);
    assert.match(page.body, /&quot;can_read_todos&quot;/, 'the model is shown, read-only');
    const asked = await reader.post('/console/applications/todo/decision', {
      subject: 'google_oauth2:morty',
      action: 'can_read_todos',
    });
    assert.equal(asked.statusCode, 403);
    const decider = await signedIn(
      await ctx.createKey({ roles: ['applications:read', 'decisions:read'], name: 'decider' }),
    );
    const withoutUsers = await decider.get('/console/applications/todo');
    assert.match(withoutUsers.body, /Would this user be allowed/);
    assert.doesNotMatch(
      withoutUsers.body,
      /google_oauth2:morty/,
      'users are suggested only to a key that may read them',
    );
  });
});
