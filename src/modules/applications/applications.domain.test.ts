import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applicationChangeErrors, checkApplication } from './applications.domain.js';

const valid = { client_id: 'billing-web', display_name: ' Billing ', description: '' };

describe('checkApplication (what a valid application is)', () => {
  it('gives the normalised fields: the display name trimmed, defaults filled in', () => {
    assert.deepEqual(checkApplication(valid), {
      ok: true,
      value: {
        clientId: 'billing-web',
        displayName: 'Billing',
        description: '',
        mode: 'internal',
        jwtExpirationInMinutes: 60,
        externalTokenValidation: null,
        scimProvider: null,
        authorization: null,
      },
    });
  });

  it('names each broken rule by a JSON Pointer into the input', () => {
    const checked = checkApplication({
      ...valid,
      client_id: '..',
      jwt_expiration_in_minutes: 1.5,
      scim_provider: 'Okta',
    });
    assert.deepEqual(checked.ok ? [] : checked.errors.map((error) => error.path), [
      '/client_id',
      '/jwt_expiration_in_minutes',
      '/scim_provider',
    ]);
  });

  it('holds external_token_validation to 32 KiB serialized, a rule no schema states', () => {
    const big = { google_oauth2: { issuer: 'x'.repeat(33 * 1024) } };
    assert.deepEqual(checkApplication({ ...valid, external_token_validation: big }), {
      ok: false,
      errors: [
        {
          path: '/external_token_validation',
          detail: 'must be at most 32 KiB when serialized',
        },
      ],
    });
  });

  it('checks an authorization model: its members, its role names, owners that come in pairs', () => {
    const todo = {
      actions: {
        can_read_todos: { roles: ['viewer', 'editor'] },
        can_update_todo: {
          roles: ['evil_genius'],
          owner_roles: ['editor'],
          owner: { resource_property: 'ownerID', user_attribute: 'email' },
        },
        can_nothing: {},
      },
    };
    const checked = checkApplication({ ...valid, authorization: todo });
    assert.ok(checked.ok);
    assert.deepEqual(checked.value.authorization, todo);
    const errors = (authorization: unknown) => {
      const result = checkApplication({ ...valid, authorization });
      return result.ok ? [] : result.errors;
    };
    assert.deepEqual(errors({}), [{ path: '/authorization/actions', detail: 'is required' }]);
    assert.deepEqual(errors({ actions: {}, policies: [] }), [
      { path: '/authorization/policies', detail: 'is not a known field' },
    ]);
    assert.deepEqual(errors({ actions: { 'a/b': { roles: ['has space'] } } }), [
      {
        path: '/authorization/actions/a~1b/roles/0',
        detail: 'must be 1–64 characters of A–Z a–z 0–9 . _ : -',
      },
    ]);
    assert.deepEqual(errors({ actions: { '': {} } }), [
      { path: '/authorization/actions/', detail: 'must be at least 1 character long' },
    ]);
    assert.deepEqual(errors({ actions: { x: { roles: ['a', 'a'] } } }).length, 1);
    assert.deepEqual(errors({ actions: { x: { owner_roles: ['editor'] } } }), [
      { path: '/authorization/actions/x/owner', detail: 'is required with owner_roles' },
    ]);
    assert.deepEqual(
      errors({
        actions: { x: { owner: { resource_property: 'ownerID', user_attribute: 'email' } } },
      }),
      [{ path: '/authorization/actions/x/owner_roles', detail: 'is required with owner' }],
    );
    assert.deepEqual(
      errors({
        actions: {
          x: {
            owner_roles: ['e'],
            owner: { resource_property: 'ownerID', user_attribute: 'name' },
          },
        },
      }),
      [
        {
          path: '/authorization/actions/x/owner/user_attribute',
          detail: 'must be one of "email", "id", "identifier"',
        },
      ],
    );
    const many = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`a${i}`, {}]));
    assert.equal(errors({ actions: many })[0]?.path, '/authorization/actions');
    const big = {
      actions: { x: { roles: Array.from({ length: 100 }, (_, i) => `${'r'.repeat(60)}${i}`) } },
    };
    assert.equal(
      errors({
        actions: {
          ...big.actions,
          y: big.actions.x,
          z: big.actions.x,
          w: big.actions.x,
          v: big.actions.x,
          u: big.actions.x,
        },
      })[0]?.detail,
      'must be at most 32 KiB when serialized',
    );
  });

  it('judges only the members a change touches', () => {
    const checked = checkApplication(valid);
    assert.ok(checked.ok);
    const current = checked.value;
    assert.deepEqual(applicationChangeErrors(current, { ...current, mode: 'external' }), []);
    assert.deepEqual(
      applicationChangeErrors(current, { ...current, jwtExpirationInMinutes: 0 }).map(
        (error) => error.path,
      ),
      ['/jwt_expiration_in_minutes'],
    );
  });
});
