import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registerTypeBoxFormats } from '../../http/formats.js';
import {
  type UserFields,
  changeErrors,
  checkUser,
  isValidUserField,
  nameFromText,
} from './users.domain.js';

registerTypeBoxFormats();

const valid = {
  provider: 'okta_scim',
  identifier: 'ada@example.com',
  name: '  Ada Lovelace  ',
  email: 'ada@example.com',
  locale: 'en-GB',
  roles: ['admin'],
  scopes: ['org:acme'],
};

describe('checkUser (what a valid user is, for every door)', () => {
  it('gives the normalised fields of a valid input: the name trimmed, defaults filled in', () => {
    const checked = checkUser(valid);
    assert.deepEqual(checked, {
      ok: true,
      value: {
        ...valid,
        name: 'Ada Lovelace',
        avatar: null,
        active: true,
        externalId: null,
      },
    });
  });

  it('lists every broken rule as a JSON Pointer into the input, with the API’s words', () => {
    const checked = checkUser({
      ...valid,
      email: 'not an address',
      locale: 'x'.repeat(36),
      roles: ['ok', 'ok'],
      surname: 'Lovelace',
    });
    assert.equal(checked.ok, false);
    const errors = checked.ok ? [] : checked.errors;
    assert.deepEqual(
      errors.map((error) => error.path),
      ['/surname', '/email', '/locale', '/locale', '/roles'],
    );
    assert.match(errors[0]!.detail, /not a known field/);
    assert.match(errors[1]!.detail, /valid e-mail address of at most 254 characters/);
  });

  it('refuses what is not an object, and names missing members', () => {
    assert.deepEqual(checkUser('ada'), {
      ok: false,
      errors: [{ path: '', detail: 'must be an object' }],
    });
    const { email: _email, ...withoutEmail } = valid;
    const checked = checkUser(withoutEmail);
    assert.deepEqual(checked.ok ? [] : checked.errors, [{ path: '/email', detail: 'is required' }]);
  });

  it('checks external_id: at most 256 characters without control characters', () => {
    assert.equal(checkUser({ ...valid, external_id: '00u1abcd' }).ok, true);
    assert.equal(checkUser({ ...valid, external_id: 'x'.repeat(257) }).ok, false);
    assert.equal(checkUser({ ...valid, external_id: 'a\u0000b' }).ok, false);
  });
});

describe('changeErrors', () => {
  const stored: UserFields = {
    provider: 'okta_scim',
    identifier: 'ada',
    name: 'Ada',
    avatar: null,
    email: 'ada@example.com',
    locale: 'en',
    roles: [],
    scopes: [],
    active: true,
    // Stored before external ids had a limit.
    externalId: 'x'.repeat(300),
  };

  it('judges only the members a change touches, so a user stored under a looser rule can still change', () => {
    assert.deepEqual(changeErrors(stored, { ...stored, active: false }), []);
    assert.deepEqual(
      changeErrors(stored, { ...stored, active: false, email: 'nope' }).map((error) => error.path),
      ['/email'],
    );
    assert.deepEqual(
      changeErrors(stored, { ...stored, externalId: 'y'.repeat(300) }).map((error) => error.path),
      ['/external_id'],
    );
  });
});

describe('field rules for doors that fall back', () => {
  it('tells one field at a time', () => {
    assert.equal(isValidUserField.email('ada@example.com'), true);
    assert.equal(isValidUserField.email(`${'a'.repeat(250)}@x.io`), false);
    assert.equal(isValidUserField.locale('pt-BR'), true);
    assert.equal(isValidUserField.locale('en_US'), false);
    assert.equal(isValidUserField.avatar('ftp://example.com/a.png'), false);
    assert.equal(isValidUserField.name('   '), false);
    assert.equal(isValidUserField.identifier('..'), false);
  });

  it('makes a name of free text: trimmed, at most 200 characters', () => {
    assert.equal(nameFromText('  Ada  '), 'Ada');
    assert.equal(nameFromText('é'.repeat(250)).length, 200);
    assert.equal(nameFromText('   '), '');
  });
});
