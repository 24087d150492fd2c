// tessera-test: both-stores
// What the SCIM compliance tester (test/scim-tester.test.ts) found, held here call by call on the
// store of this pass: discovery by id, a published User schema that says what a create needs,
// Group members named by $ref, POST .search, the type and primary of e-mails and photos
// returned as sent, a PATCH of preferredLanguage taken, and paging numbers past any list.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestContext, buildTestApp, createApplication, createUser } from './helpers.js';

type Json = Record<string, unknown>;

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('SCIM conformance', () => {
  let ctx: TestContext;
  let key: string;

  before(async () => {
    ctx = await buildTestApp();
    await createApplication(ctx, { client_id: 'hr', scim_provider: 'okta_scim' });
    key = await ctx.createKey({ roles: ['users:read', 'users:write'], applications: ['hr'] });
  });
  after(() => ctx.close());

  const scim = async (method: string, path: string, body?: unknown) => {
    const response = await ctx.app.inject({
      method: method as 'GET',
      url: `/scim/v2/hr${path}`,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: response.statusCode,
      body: response.body === '' ? null : (response.json() as Json),
    };
  };

  const createScimUser = async (userName: string, extra: Json = {}) => {
    const created = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName,
      emails: [{ value: userName }],
      ...extra,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body!;
  };

  describe('discovery by id (RFC 7644 §4)', () => {
    it('serves each resource type and schema by its id, as its list has it', async () => {
      const types = await scim('GET', '/ResourceTypes');
      const schemas = await scim('GET', '/Schemas');
      for (const [list, path] of [
        [types.body!, '/ResourceTypes'],
        [schemas.body!, '/Schemas'],
      ] as const) {
        const resources = list.Resources as Json[];
        assert.equal(resources.length, 2);
        for (const resource of resources) {
          const one = await scim('GET', `${path}/${String(resource.id)}`);
          assert.equal(one.status, 200, `${path}/${String(resource.id)}`);
          assert.deepEqual(one.body, resource);
        }
      }
      const user = await scim('GET', '/ResourceTypes/User');
      assert.equal(user.body!.schema, USER_SCHEMA);
      assert.equal((await scim('GET', `/Schemas/${GROUP_SCHEMA}`)).body!.name, 'Group');
    });

    it('answers 404 (a SCIM error) for an id it does not have', async () => {
      for (const path of [
        '/ResourceTypes/Users',
        '/ResourceTypes/user',
        `/Schemas/${USER_SCHEMA}x`,
      ]) {
        const missing = await scim('GET', path);
        assert.equal(missing.status, 404, path);
        assert.deepEqual(missing.body!.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
      }
    });
  });

  describe('the published User schema says what a create needs', () => {
    const attributeOf = (schema: Json, name: string) =>
      (schema.attributes as Json[]).find((attribute) => attribute.name === name)!;

    it('marks emails and emails.value required, and a create without them is refused', async () => {
      const schema = (await scim('GET', `/Schemas/${USER_SCHEMA}`)).body!;
      const emails = attributeOf(schema, 'emails');
      assert.equal(emails.required, true);
      const value = (emails.subAttributes as Json[]).find((sub) => sub.name === 'value')!;
      assert.equal(value.required, true);
      for (const name of ['userName', 'emails'])
        assert.equal(attributeOf(schema, name).required, true);

      const refused = await scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'no-mail' });
      assert.equal(refused.status, 400);
      assert.equal(refused.body!.scimType, 'invalidValue');
      assert.match(String(refused.body!.detail), /emails/);
      // The one exception the description names: a userName that is an address.
      const described = String(emails.description);
      assert.match(described, /userName/);
      const fallback = await scim('POST', '/Users', {
        schemas: [USER_SCHEMA],
        userName: 'mail@example.com',
      });
      assert.equal(fallback.status, 201);
      assert.deepEqual(fallback.body!.emails, [
        { value: 'mail@example.com', type: 'work', primary: true },
      ]);
    });

    it('publishes members.$ref as immutable (RFC 7643 §8.7.1), and a member named by $ref joins', async () => {
      const schema = (await scim('GET', `/Schemas/${GROUP_SCHEMA}`)).body!;
      const members = attributeOf(schema, 'members');
      const ref = (members.subAttributes as Json[]).find((sub) => sub.name === '$ref')!;
      assert.equal(ref.mutability, 'immutable');

      const user = await createScimUser('ref@example.com');
      const location = (user.meta as Json).location as string;
      const group = await scim('POST', '/Groups', {
        schemas: [GROUP_SCHEMA],
        displayName: 'by-ref',
        members: [{ $ref: location, type: 'User' }],
      });
      assert.equal(group.status, 201, JSON.stringify(group.body));
      assert.deepEqual(
        (group.body!.members as Json[]).map((member) => member.value),
        [user.id],
      );
      const clash = await scim('POST', '/Groups', {
        schemas: [GROUP_SCHEMA],
        displayName: 'by-ref-2',
        members: [{ value: 'someone-else', $ref: location }],
      });
      assert.equal(clash.status, 400);
      assert.equal(clash.body!.scimType, 'invalidValue');
    });
  });

  describe('values returned as sent', () => {
    it('keeps the type and primary of the e-mail and the photo, through POST, PUT and PATCH', async () => {
      const user = await createScimUser('labels@example.com', {
        emails: [{ value: 'labels@example.com', type: 'home', primary: false }],
        photos: [{ value: 'https://cdn.example.com/a.png', type: 'thumbnail' }],
      });
      assert.deepEqual(user.emails, [
        { value: 'labels@example.com', type: 'home', primary: false },
      ]);
      assert.deepEqual(user.photos, [
        { value: 'https://cdn.example.com/a.png', type: 'thumbnail' },
      ]);
      const read = await scim('GET', `/Users/${String(user.id)}`);
      assert.deepEqual(read.body!.emails, user.emails);
      assert.deepEqual(read.body!.photos, user.photos);

      const replaced = await scim('PUT', `/Users/${String(user.id)}`, {
        schemas: [USER_SCHEMA],
        userName: 'labels@example.com',
        emails: [{ value: 'labels@example.com', type: 'other', primary: true }],
      });
      assert.equal(replaced.status, 200);
      assert.deepEqual(replaced.body!.emails, [
        { value: 'labels@example.com', type: 'other', primary: true },
      ]);
      assert.equal(replaced.body!.photos, undefined);

      const patched = await scim('PATCH', `/Users/${String(user.id)}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: 'emails[type eq "other"].type', value: 'work' },
          {
            op: 'add',
            path: 'photos',
            value: [{ value: 'https://cdn.example.com/b.png', type: 'photo', primary: false }],
          },
        ],
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual(patched.body!.emails, [
        { value: 'labels@example.com', type: 'work', primary: true },
      ]);
      assert.deepEqual(patched.body!.photos, [
        { value: 'https://cdn.example.com/b.png', type: 'photo', primary: false },
      ]);
    });

    it('refuses a type that is no label (invalidValue naming emails)', async () => {
      const refused = await scim('POST', '/Users', {
        schemas: [USER_SCHEMA],
        userName: 'badtype@example.com',
        emails: [{ value: 'badtype@example.com', type: 'x'.repeat(65) }],
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body!.scimType, 'invalidValue');
      assert.match(String(refused.body!.detail), /emails\[type\]/);
    });

    it('labels a user the API made as before (work, photo, primary)', async () => {
      const made = await createUser(ctx, 'hr', {
        provider: 'okta_scim',
        identifier: 'api-made',
        email: 'api@example.com',
        avatar: 'https://cdn.example.com/api.png',
      });
      const read = await scim('GET', `/Users/${String(made.id)}`);
      assert.deepEqual(read.body!.emails, [
        { value: 'api@example.com', type: 'work', primary: true },
      ]);
      assert.deepEqual(read.body!.photos, [
        { value: 'https://cdn.example.com/api.png', type: 'photo', primary: true },
      ]);
    });

    it('takes a PATCH of preferredLanguage (or name.formatted) alone', async () => {
      const user = await createScimUser('lang@example.com', {
        locale: 'en-US',
        displayName: 'Lang',
      });
      const patched = await scim('PATCH', `/Users/${String(user.id)}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: 'preferredLanguage', value: 'fr-FR' },
          { op: 'replace', path: 'name.formatted', value: 'Langue' },
        ],
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal(patched.body!.preferredLanguage, 'fr-FR');
      assert.equal(patched.body!.locale, 'fr-FR');
      assert.equal(patched.body!.displayName, 'Langue');
      assert.deepEqual(patched.body!.name, { formatted: 'Langue' });
    });
  });

  describe('POST .search (RFC 7644 §3.4.3)', () => {
    it('answers /Users/.search and /Groups/.search as the GET lists do', async () => {
      await createScimUser('search@example.com');
      for (const [type, filter] of [
        ['Users', 'userName eq "search@example.com"'],
        ['Groups', 'displayName eq "by-ref"'],
      ] as const) {
        const got = await scim(
          'GET',
          `/${type}?filter=${encodeURIComponent(filter)}&attributes=id`,
        );
        const searched = await scim('POST', `/${type}/.search`, {
          schemas: [SEARCH_REQUEST],
          filter,
          attributes: ['id'],
        });
        assert.equal(searched.status, 200);
        assert.equal(searched.body!.totalResults, 1);
        assert.deepEqual(searched.body, got.body);
      }
    });

    it('searches Users then Groups at the root, one index-paged list', async () => {
      const all = await scim('POST', '/.search', { schemas: [SEARCH_REQUEST], count: 1000 });
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const resources = all.body!.Resources as Json[];
      assert.equal(all.body!.totalResults, resources.length);
      const kinds = resources.map((resource) => (resource.schemas as string[])[0]);
      assert.ok(kinds.includes(USER_SCHEMA) && kinds.includes(GROUP_SCHEMA));
      assert.deepEqual(
        kinds,
        [...kinds].sort((a, b) => (a === b ? 0 : a === USER_SCHEMA ? -1 : 1)),
      );
      // Pages of one, across the end of the Users.
      const users = kinds.filter((kind) => kind === USER_SCHEMA).length;
      const page = await scim('POST', '/.search', {
        schemas: [SEARCH_REQUEST],
        startIndex: users + 1,
        count: 1,
        excludedAttributes: 'members',
      });
      assert.deepEqual(
        (page.body!.Resources as Json[]).map((resource) => resource.id),
        [resources[users]!.id],
      );
      const filtered = await scim('POST', '/.search', {
        filter: 'members pr',
        attributes: ['displayName'],
      });
      assert.equal(filtered.status, 200);
      assert.deepEqual(
        (filtered.body!.Resources as Json[]).map((resource) => resource.displayName),
        ['by-ref'],
      );
      const cursor = await scim('POST', '/.search', { cursor: '' });
      assert.equal(cursor.status, 400);
      assert.equal(cursor.body!.scimType, 'invalidValue');
    });
  });

  describe('paging numbers past any list', () => {
    for (const startIndex of ['9223372036854775807', '99999999999999999999', '9007199254740993']) {
      it(`answers startIndex=${startIndex} with an empty page (200), lookup or not`, async () => {
        for (const query of [
          `startIndex=${startIndex}`,
          `startIndex=${startIndex}&filter=${encodeURIComponent('userName eq "search@example.com"')}`,
          `startIndex=${startIndex}&filter=${encodeURIComponent('active eq true')}`,
        ]) {
          for (const type of ['Users', 'Groups']) {
            const page = await scim('GET', `/${type}?${query}`);
            assert.equal(page.status, 200, `${type}?${query}: ${JSON.stringify(page.body)}`);
            assert.deepEqual(page.body!.Resources, []);
          }
        }
        const searched = await scim('POST', '/.search', { startIndex: Number(startIndex) });
        assert.equal(searched.status, 200);
        assert.deepEqual(searched.body!.Resources, []);
      });
    }
  });
});
