// tessera-test: both-stores
// The AuthZEN working group's interop scenario, "Todo": a shared todo list whose users
// (Rick & Morty characters) hold the roles viewer, editor, admin and evil_genius. Its model
// is expressed as an application's `authorization`; its users are seeded through the API; the
// decisions are the working group's published list for Authorization API 1.0 (40 single
// evaluations, five users by eight requests, and its three boxcarred ones), asked with the
// subject named both ways Tessera knows: `<provider>:<identifier>` and the user's id.
//
// Roles, as the scenario defines them: viewer reads the list and its owners' pictures;
// editor = viewer + creates todos and edits and deletes its own; admin = editor + deletes any;
// evil_genius = editor + edits any. Rick is admin and evil_genius, Morty and Summer are
// editors, Beth and Jerry viewers. A todo's owner is `resource.properties.ownerID`, the
// owner's e-mail.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createApplication, createUser, problemOf, useTestApp } from './helpers.js';

const TODO = 'todo';
const PROVIDER = 'citadel_oidc';

const TODO_AUTHORIZATION = {
  actions: {
    can_read_user: { roles: ['viewer', 'editor', 'admin', 'evil_genius'] },
    can_read_todos: { roles: ['viewer', 'editor', 'admin', 'evil_genius'] },
    can_create_todo: { roles: ['editor', 'admin', 'evil_genius'] },
    can_update_todo: {
      roles: ['evil_genius'],
      owner_roles: ['editor', 'admin'],
      owner: { resource_property: 'ownerID', user_attribute: 'email' },
    },
    can_delete_todo: {
      roles: ['admin'],
      owner_roles: ['editor', 'evil_genius'],
      owner: { resource_property: 'ownerID', user_attribute: 'email' },
    },
  },
};

/** The scenario's users: their PIDs (the `sub` of their tokens), e-mails and roles. */
const USERS = {
  rick: {
    pid: 'CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    name: 'Rick Sanchez',
    email: 'rick@the-citadel.com',
    roles: ['admin', 'evil_genius'],
  },
  morty: {
    pid: 'CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    name: 'Morty Smith',
    email: 'morty@the-citadel.com',
    roles: ['editor'],
  },
  summer: {
    pid: 'CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    name: 'Summer Smith',
    email: 'summer@the-smiths.com',
    roles: ['editor'],
  },
  beth: {
    pid: 'CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    name: 'Beth Smith',
    email: 'beth@the-smiths.com',
    roles: ['viewer'],
  },
  jerry: {
    pid: 'CiRmZDQ2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    name: 'Jerry Smith',
    email: 'jerry@the-smiths.com',
    roles: ['viewer'],
  },
} as const;
type Name = keyof typeof USERS;
const NAMES = Object.keys(USERS) as Name[];

const TODO_ID = '7240d0db-8ff0-41ec-98b2-34a096273b9f';

interface Question {
  subject: { type: 'user'; id: string };
  action: { name: string };
  resource: { type: string; id: string; properties?: { ownerID: string } };
}

/** One request of the published list, for the subject `who`. */
function question(
  who: Name,
  action: string,
  resource: Question['resource'],
): { who: Name; request: Omit<Question, 'subject'> } {
  return { who, request: { action: { name: action }, resource } };
}
const userResource = (email: string) => ({ type: 'user', id: email });
const todoList = { type: 'todo', id: 'todo-1' };
const todoOf = (owner: Name) => ({
  type: 'todo',
  id: TODO_ID,
  properties: { ownerID: USERS[owner].email },
});

/**
 * The published decisions for Authorization API 1.0 (the Todo backend's test list): per user,
 * read Beth and themselves, read the todos, create one, and update and delete a todo of
 * Rick's and one of their own (Rick: of Morty's).
 */
const DECISIONS: { who: Name; request: Omit<Question, 'subject'>; expected: boolean }[] = [
  ...(
    [
      ['rick', 'rick', 'morty', [true, true, true, true, true, true, true, true]],
      ['morty', 'morty', 'morty', [true, true, true, true, false, true, false, true]],
      ['summer', 'summer', 'summer', [true, true, true, true, false, true, false, true]],
      ['beth', 'beth', 'beth', [true, true, true, false, false, false, false, false]],
      ['jerry', 'jerry', 'jerry', [true, true, true, false, false, false, false, false]],
    ] as const
  ).flatMap(([who, self, owned, expected]) =>
    [
      question(who, 'can_read_user', userResource(USERS.beth.email)),
      question(who, 'can_read_user', userResource(USERS[self].email)),
      question(who, 'can_read_todos', todoList),
      question(who, 'can_create_todo', todoList),
      question(who, 'can_update_todo', todoOf('rick')),
      question(who, 'can_update_todo', todoOf(owned)),
      question(who, 'can_delete_todo', todoOf('rick')),
      question(who, 'can_delete_todo', todoOf(owned)),
    ].map((asked, index) => ({ ...asked, expected: expected[index]! })),
  ),
];

const ctx = useTestApp({}, async (ctx) => {
  await createApplication(ctx, {
    client_id: TODO,
    display_name: 'Todo',
    description: 'The AuthZEN interop scenario',
    authorization: TODO_AUTHORIZATION,
  });
  for (const name of NAMES) {
    const { pid, ...profile } = USERS[name];
    const created = await createUser(ctx, TODO, {
      provider: PROVIDER,
      identifier: pid,
      ...profile,
      locale: 'en',
      scopes: [],
    });
    ids.set(name, created.id as string);
  }
  key = await ctx.createKey({
    name: 'todo backend',
    roles: ['decisions:read'],
    applications: [TODO],
  });
});
const ids = new Map<Name, string>();
let key = '';

/** The subject named both ways: by identity (the PID), and by Tessera's id. */
const namings: [string, (who: Name) => { type: 'user'; id: string }][] = [
  ['<provider>:<identifier>', (who) => ({ type: 'user', id: `${PROVIDER}:${USERS[who].pid}` })],
  ['the user id', (who) => ({ type: 'user', id: ids.get(who)! })],
];

function post(path: string, body: unknown) {
  // The Todo backend sends its PDP key as a bearer token, and no client_id: the key is
  // restricted to the Todo application.
  return call(ctx, 'POST', `//access/v1/${path}`, {
    key: null,
    body,
    headers: { authorization: `Bearer ${key}` },
  });
}

describe('AuthZEN interop: the Todo application', () => {
  it('holds the published list: 40 questions, five users by eight requests', () => {
    assert.equal(DECISIONS.length, 40);
    assert.deepEqual(
      NAMES.map((name) => DECISIONS.filter((decision) => decision.who === name).length),
      [8, 8, 8, 8, 8],
    );
  });

  for (const [naming, subjectOf] of namings) {
    describe(`single evaluations, the subject named by ${naming}`, () => {
      for (const [index, { who, request, expected }] of DECISIONS.entries()) {
        const owner = request.resource.properties?.ownerID ?? request.resource.id;
        it(`#${index + 1} ${who} ${request.action.name} ${owner}: ${expected}`, async () => {
          const response = await post('evaluation', {
            subject: subjectOf(who),
            ...request,
            context: {},
          });
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json(), { decision: expected });
        });
      }
    });
  }

  describe('boxcarred evaluations (the published three, then the whole list)', () => {
    const published: [Name, Name[], boolean[]][] = [
      ['rick', ['rick', 'jerry'], [true, true]],
      ['morty', ['rick', 'morty'], [false, true]],
      ['jerry', ['rick', 'jerry'], [false, false]],
    ];
    for (const [who, owners, expected] of published) {
      it(`${who} may update the todos of ${owners.join(' and ')}: ${expected.join(', ')}`, async () => {
        for (const [, subjectOf] of namings) {
          const response = await post('evaluations', {
            subject: subjectOf(who),
            action: { name: 'can_update_todo' },
            evaluations: owners.map((owner) => ({ resource: todoOf(owner) })),
          });
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json(), {
            evaluations: expected.map((decision) => ({ decision })),
          });
        }
      });
    }

    it('answers all 40 in one request, in order, each subject named either way', async () => {
      const response = await post('evaluations', {
        evaluations: DECISIONS.map(({ who, request }, index) => ({
          subject: namings[index % 2]![1](who),
          ...request,
        })),
      });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(
        response.json<{ evaluations: { decision: boolean }[] }>().evaluations,
        DECISIONS.map(({ expected }) => ({ decision: expected })),
      );
    });

    it('stops at Beth’s first deny, and at Jerry’s first permit', async () => {
      const beth = DECISIONS.filter((decision) => decision.who === 'beth');
      const asked = (semantic: string, list: typeof DECISIONS) =>
        post('evaluations', {
          subject: namings[0]![1](list[0]!.who),
          options: { evaluations_semantic: semantic },
          evaluations: list.map(({ request }) => request),
        }).then((response) => response.json<{ evaluations: { decision: boolean }[] }>());
      assert.deepEqual((await asked('deny_on_first_deny', beth)).evaluations, [
        { decision: true },
        { decision: true },
        { decision: true },
        { decision: false },
      ]);
      const jerry = DECISIONS.filter((decision) => decision.who === 'jerry').reverse();
      assert.deepEqual((await asked('permit_on_first_permit', jerry)).evaluations, [
        { decision: false },
        { decision: false },
        { decision: false },
        { decision: false },
        { decision: false },
        { decision: true },
      ]);
    });
  });

  describe('searches over the scenario', () => {
    const subjectsWho = async (action: string, owner: Name) => {
      const response = await post('search/subject', {
        subject: { type: 'user' },
        action: { name: action },
        resource: todoOf(owner),
      });
      assert.equal(response.statusCode, 200, response.body);
      const page = response.json<{ results: { id: string }[]; page: { next_token: string } }>();
      assert.equal(page.page.next_token, '');
      const byPid = new Map(NAMES.map((name) => [`${PROVIDER}:${USERS[name].pid}`, name]));
      return page.results.map((result) => byPid.get(result.id)).sort();
    };

    it('finds who may update or delete a todo: owners who edit, and the roles that act on any', async () => {
      assert.deepEqual(await subjectsWho('can_update_todo', 'morty'), ['morty', 'rick']);
      assert.deepEqual(await subjectsWho('can_update_todo', 'beth'), ['rick']);
      assert.deepEqual(await subjectsWho('can_delete_todo', 'summer'), ['rick', 'summer']);
      assert.deepEqual(await subjectsWho('can_create_todo', 'jerry'), ['morty', 'rick', 'summer']);
      assert.deepEqual(await subjectsWho('can_read_todos', 'jerry'), [...NAMES].sort());
    });

    it('finds what each user may do with a todo of Morty’s', async () => {
      const expected: Record<Name, string[]> = {
        rick: [
          'can_create_todo',
          'can_delete_todo',
          'can_read_todos',
          'can_read_user',
          'can_update_todo',
        ],
        morty: [
          'can_create_todo',
          'can_delete_todo',
          'can_read_todos',
          'can_read_user',
          'can_update_todo',
        ],
        summer: ['can_create_todo', 'can_read_todos', 'can_read_user'],
        beth: ['can_read_todos', 'can_read_user'],
        jerry: ['can_read_todos', 'can_read_user'],
      };
      for (const name of NAMES) {
        const response = await post('search/action', {
          subject: namings[1]![1](name),
          resource: todoOf('morty'),
        });
        assert.deepEqual(
          response.json<{ results: { name: string }[] }>().results.map((result) => result.name),
          expected[name],
          name,
        );
      }
    });
  });

  it('refuses the key outside its application, and a key without decisions:read', async () => {
    const other = await post('evaluation', {
      subject: namings[0]![1]('rick'),
      action: { name: 'can_read_todos' },
      resource: todoList,
      context: { client_id: 'another-app' },
    });
    problemOf(other, 403);
    const reader = await ctx.createKey({ roles: ['users:read'], applications: [TODO] });
    const refused = await call(ctx, 'POST', '//access/v1/evaluation', {
      key: null,
      body: {
        subject: namings[0]![1]('rick'),
        action: { name: 'can_read_todos' },
        resource: todoList,
      },
      headers: { authorization: `Bearer ${reader}` },
    });
    problemOf(refused, 403);
  });
});
