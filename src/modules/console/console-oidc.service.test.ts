import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROLES } from '../../roles.js';
import { claimValues, rolesOf } from './console-oidc.service.js';

describe('claimValues', () => {
  it('reads a list, or one string split on spaces and commas', () => {
    assert.deepEqual(claimValues({ roles: ['users:read', 'keys:read'] }, 'roles'), [
      'users:read',
      'keys:read',
    ]);
    assert.deepEqual(claimValues({ roles: 'users:read keys:read,events:read' }, 'roles'), [
      'users:read',
      'keys:read',
      'events:read',
    ]);
  });

  it('follows a dotted path into nested objects (Keycloak realm_access.roles)', () => {
    const claims = { realm_access: { roles: ['users:read'] } };
    assert.deepEqual(claimValues(claims, 'realm_access.roles'), ['users:read']);
    assert.equal(claimValues(claims, 'realm_access.groups'), undefined);
  });

  it('takes a claim whose name has dots as it is (Auth0 namespaced claims)', () => {
    const claims = { 'https://example.com/roles': ['keys:read'] };
    assert.deepEqual(claimValues(claims, 'https://example.com/roles'), ['keys:read']);
  });

  it('ignores values that are not strings, and finds no claim in a number or an object', () => {
    assert.deepEqual(claimValues({ roles: ['users:read', 7, null, { a: 1 }] }, 'roles'), [
      'users:read',
    ]);
    assert.equal(claimValues({ roles: 7 }, 'roles'), undefined);
    assert.equal(claimValues({ roles: { admin: true } }, 'roles'), undefined);
    assert.equal(claimValues({}, 'roles'), undefined);
    assert.equal(claimValues({ a: { b: 1 } }, 'a.b.c'), undefined);
    assert.equal(claimValues({}, 'constructor'), undefined);
  });
});

describe('rolesOf', () => {
  const map = new Map([
    ['tessera-admins', [...ROLES]],
    ['support', ['users:read', 'users:write'] as const],
  ]);

  it("keeps Tessera's role names and the mapped values' roles, in Tessera's order, once", () => {
    assert.deepEqual(rolesOf(['support', 'keys:read', 'users:read', 'admin'], map), [
      'users:read',
      'users:write',
      'keys:read',
    ]);
  });

  it('gives every role for a value mapped to *, and none for unknown values', () => {
    assert.deepEqual(rolesOf(['tessera-admins'], map), [...ROLES]);
    assert.deepEqual(rolesOf(['admin', 'root', 'USERS:READ'], map), []);
  });
});
