// tessera-test: both-stores
// Model-based: random sequences of create / replace / patch / delete / get / list, by keys with
// different roles and application restrictions, run against the app and against a small
// in-memory model of the API's rules (docs/api.md: authorization and status codes, uniqueness, deleting an
// application deletes its users). Any divergence fails, and fast-check shrinks the sequence to
// a minimal one.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ROLES, type Role } from '../src/roles.js';
import { buildTestApp, call, seg, type TestContext, userBody } from './helpers.js';

const RUNS = Number(process.env.TESSERA_MODEL_RUNS ?? 150);

type KeyName = 'admin' | 'applications' | 'usersWriter' | 'usersReader' | 'restricted';
const KEY_NAMES: KeyName[] = ['admin', 'applications', 'usersWriter', 'usersReader', 'restricted'];
const GRANTS: Record<KeyName, { roles: readonly Role[]; restrictedTo?: 'a' }> = {
  admin: { roles: ROLES },
  applications: { roles: ['applications:read', 'applications:write'] },
  usersWriter: { roles: ['users:read', 'users:write'] },
  usersReader: { roles: ['users:read'] },
  restricted: { roles: ROLES, restrictedTo: 'a' },
};
type AppName = 'a' | 'b';
const IDENTIFIERS = ['u1', 'u2', 'u3'] as const;

/** What the API's rules say the store holds: applications, and users by application and identifier. */
interface Model {
  applications: Map<AppName, { displayName: string }>;
  users: Map<string, { name: string }>;
}

/** The system under test, for one run: its own application names and keys. */
interface Real {
  ctx: TestContext;
  clientId: (app: AppName) => string;
  keys: Record<KeyName, string>;
}

/** Authorization: the role first, then the restriction, both before any lookup. */
function refusal(key: KeyName, role: Role, app: AppName | null): 403 | undefined {
  const grants = GRANTS[key];
  if (!grants.roles.includes(role)) return 403;
  if (grants.restrictedTo !== undefined && app !== null && app !== grants.restrictedTo) return 403;
  return undefined;
}

const userKey = (app: AppName, identifier: string) => `${app}/${identifier}`;
const userUrl = (real: Real, app: AppName, identifier: string) =>
  `/applications/${seg(real.clientId(app))}/users/google_oauth2/${seg(identifier)}`;

abstract class Command implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly key: KeyName,
    readonly app: AppName,
  ) {}
  check(): boolean {
    return true;
  }
  abstract run(model: Model, real: Real): Promise<void>;
  abstract toString(): string;
}

class CreateApplication extends Command {
  constructor(
    key: KeyName,
    app: AppName,
    readonly displayName: string,
  ) {
    super(key, app);
  }
  async run(model: Model, real: Real) {
    const response = await call(real.ctx, 'POST', '/applications', {
      key: real.keys[this.key],
      body: { client_id: real.clientId(this.app), display_name: this.displayName, description: '' },
    });
    const expected =
      refusal(this.key, 'applications:write', this.app) ??
      (model.applications.has(this.app) ? 409 : 201);
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected === 201) model.applications.set(this.app, { displayName: this.displayName });
  }
  toString() {
    return `${this.key}: create application ${this.app} (${this.displayName})`;
  }
}

class DeleteApplication extends Command {
  async run(model: Model, real: Real) {
    const response = await call(real.ctx, 'DELETE', `/applications/${real.clientId(this.app)}`, {
      key: real.keys[this.key],
    });
    const expected =
      refusal(this.key, 'applications:write', this.app) ??
      (model.applications.has(this.app) ? 204 : 404);
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected === 204) {
      model.applications.delete(this.app);
      for (const identifier of IDENTIFIERS) model.users.delete(userKey(this.app, identifier));
    }
  }
  toString() {
    return `${this.key}: delete application ${this.app}`;
  }
}

class ListApplications extends Command {
  async run(model: Model, real: Real) {
    const response = await call(real.ctx, 'GET', '/applications?limit=1000', {
      key: real.keys[this.key],
    });
    const expected = refusal(this.key, 'applications:read', null) ?? 200;
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected !== 200) return;
    const mine = new Map((['a', 'b'] as AppName[]).map((app) => [real.clientId(app), app]));
    const listed = response
      .json<{ items: { client_id: string; display_name: string }[] }>()
      .items.filter((item) => mine.has(item.client_id))
      .map((item) => `${mine.get(item.client_id)}=${item.display_name}`);
    const visible = [...model.applications]
      .filter(([app]) => refusal(this.key, 'applications:read', app) === undefined)
      .sort(([left], [right]) => (left < right ? -1 : 1))
      .map(([app, { displayName }]) => `${app}=${displayName}`);
    assert.deepEqual(listed, visible, String(this));
  }
  toString() {
    return `${this.key}: list applications`;
  }
}

class WriteUser extends Command {
  constructor(
    key: KeyName,
    app: AppName,
    readonly method: 'POST' | 'PUT' | 'PATCH',
    readonly identifier: string,
    readonly name: string,
  ) {
    super(key, app);
  }
  async run(model: Model, real: Real) {
    const body =
      this.method === 'PATCH'
        ? { name: this.name }
        : userBody({ identifier: this.identifier, name: this.name });
    const path =
      this.method === 'POST'
        ? `/applications/${real.clientId(this.app)}/users`
        : userUrl(real, this.app, this.identifier);
    const response = await call(real.ctx, this.method, path, {
      key: real.keys[this.key],
      body: this.method === 'PUT' ? { ...body, identifier: undefined, provider: undefined } : body,
    });
    const exists = model.users.has(userKey(this.app, this.identifier));
    const expected =
      refusal(this.key, 'users:write', this.app) ??
      (!model.applications.has(this.app)
        ? 404
        : this.method === 'POST'
          ? exists
            ? 409
            : 201
          : exists
            ? 200
            : 404);
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected === 200 || expected === 201) {
      assert.equal(response.json<{ name: string }>().name, this.name);
      model.users.set(userKey(this.app, this.identifier), { name: this.name });
    }
  }
  toString() {
    return `${this.key}: ${this.method} user ${this.app}/${this.identifier} (${this.name})`;
  }
}

class DeleteUser extends Command {
  constructor(
    key: KeyName,
    app: AppName,
    readonly identifier: string,
  ) {
    super(key, app);
  }
  async run(model: Model, real: Real) {
    const response = await call(real.ctx, 'DELETE', userUrl(real, this.app, this.identifier), {
      key: real.keys[this.key],
    });
    const expected =
      refusal(this.key, 'users:write', this.app) ??
      (model.users.has(userKey(this.app, this.identifier)) ? 204 : 404);
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected === 204) model.users.delete(userKey(this.app, this.identifier));
  }
  toString() {
    return `${this.key}: delete user ${this.app}/${this.identifier}`;
  }
}

class ReadUsers extends Command {
  async run(model: Model, real: Real) {
    const response = await call(
      real.ctx,
      'GET',
      `/applications/${real.clientId(this.app)}/users?limit=1000`,
      {
        key: real.keys[this.key],
      },
    );
    const expected =
      refusal(this.key, 'users:read', this.app) ?? (model.applications.has(this.app) ? 200 : 404);
    assert.equal(response.statusCode, expected, `${this}: ${response.body}`);
    if (expected !== 200) return;
    const listed = response
      .json<{ items: { identifier: string; name: string }[] }>()
      .items.map((user) => `${user.identifier}=${user.name}`);
    const stored = IDENTIFIERS.filter((identifier) =>
      model.users.has(userKey(this.app, identifier)),
    ).map((identifier) => `${identifier}=${model.users.get(userKey(this.app, identifier))!.name}`);
    assert.deepEqual(listed, stored, String(this));
    // And one by one.
    for (const identifier of IDENTIFIERS) {
      const one = await call(real.ctx, 'GET', userUrl(real, this.app, identifier), {
        key: real.keys[this.key],
      });
      const user = model.users.get(userKey(this.app, identifier));
      assert.equal(one.statusCode, user === undefined ? 404 : 200, `${this}: ${identifier}`);
      if (user !== undefined) assert.equal(one.json<{ name: string }>().name, user.name);
    }
  }
  toString() {
    return `${this.key}: read users of ${this.app}`;
  }
}

const key = fc.constantFrom(...KEY_NAMES);
const app = fc.constantFrom<AppName>('a', 'b');
const identifier = fc.constantFrom(...IDENTIFIERS);
const name = fc.constantFrom('Ada', 'Grace', 'Alan', 'Edsger');

const commands = [
  fc.tuple(key, app, name).map(([k, a, n]) => new CreateApplication(k, a, n)),
  fc.tuple(key, app).map(([k, a]) => new DeleteApplication(k, a)),
  key.map((k) => new ListApplications(k, 'a')),
  fc
    .tuple(
      key,
      app,
      fc.constantFrom<'POST' | 'PUT' | 'PATCH'>('POST', 'POST', 'PUT', 'PATCH'),
      identifier,
      name,
    )
    .map(([k, a, m, i, n]) => new WriteUser(k, a, m, i, n)),
  fc.tuple(key, app, identifier).map(([k, a, i]) => new DeleteUser(k, a, i)),
  fc.tuple(key, app).map(([k, a]) => new ReadUsers(k, a)),
];

describe('the API against a model of its rules', { timeout: 600_000 }, () => {
  let ctx: TestContext;
  let run = 0;
  before(async () => {
    ctx = await buildTestApp({ logLevel: 'warn' });
  });
  after(() => ctx.close());

  it(`agrees with the model over ${RUNS} random command sequences`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.commands(commands, { maxCommands: 60, size: 'large' }),
        async (sequence) => {
          // Every run, shrinking runs included, starts from an empty world of its own.
          run += 1;
          const clientId = (name: AppName) => `run-${run}-${name}`;
          const keys = {} as Record<KeyName, string>;
          for (const keyName of KEY_NAMES) {
            const grants = GRANTS[keyName];
            keys[keyName] = await ctx.createKey({
              name: keyName,
              roles: grants.roles,
              applications:
                grants.restrictedTo === undefined ? null : [clientId(grants.restrictedTo)],
            });
          }
          await fc.asyncModelRun(
            () => ({
              model: { applications: new Map(), users: new Map() },
              real: { ctx, clientId, keys },
            }),
            sequence,
          );
        },
      ),
      { numRuns: RUNS },
    );
  });
});
