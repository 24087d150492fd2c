import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ScimError } from './scim.errors.js';
import { parseFilter, parsePatchPath } from './scim.filter.js';
import { patchUserView, readOperations } from './scim.patch.js';
import { plainLookupPredicate, toUserPredicate } from './scim.user-query.js';

function refused(run: () => unknown, scimType: string, detail: RegExp) {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ScimError);
    assert.equal(error.status, 400);
    assert.equal(error.scimType, scimType);
    assert.match(error.detail, detail);
    return true;
  });
}

describe('SCIM filter parser', () => {
  it('reads JSON strings exactly, literals in any case, and precedence not > and > or', () => {
    assert.deepEqual(parseFilter('userName eq "a\\\\b\\"c"'), {
      kind: 'compare',
      path: { schema: null, attribute: 'userName', subAttribute: null },
      operator: 'eq',
      value: 'a\\b"c',
    });
    const parsed = parseFilter('active EQ True or not (title pr) and x.y gt 1.5');
    assert.equal(parsed.kind, 'or');
    assert.equal(parsed.kind === 'or' && parsed.operands[1]!.kind, 'and');
    assert.deepEqual(
      parseFilter('urn:ietf:params:scim:schemas:core:2.0:User:name.familyName sw "O"'),
      {
        kind: 'compare',
        path: {
          schema: 'urn:ietf:params:scim:schemas:core:2.0:User',
          attribute: 'name',
          subAttribute: 'familyName',
        },
        operator: 'sw',
        value: 'O',
      },
    );
  });

  it('keeps Entra\'s emails[type eq "work"].value eq "x" as one element matching both', () => {
    const parsed = parseFilter('emails[type eq "work"].value eq "x"');
    assert.equal(parsed.kind, 'valuePath');
    assert.equal(parsed.kind === 'valuePath' && parsed.filter.kind, 'and');
  });

  it('says where a filter is wrong, and refuses deep nesting without overflowing', () => {
    refused(() => parseFilter('userName eq "x" garbage'), 'invalidFilter', /character 17/);
    refused(() => parseFilter('userName xx "x"'), 'invalidFilter', /not an operator/);
    refused(() => parseFilter('userName eq "open'), 'invalidFilter', /not closed/);
    refused(() => parseFilter(''), 'invalidFilter', /empty/);
    refused(
      () => parseFilter(`${'('.repeat(20000)}userName pr${')'.repeat(20000)}`),
      'invalidFilter',
      /deeper than 32/,
    );
    refused(
      () => parseFilter(Array.from({ length: 101 }, () => 'userName pr').join(' or ')),
      'invalidFilter',
      /more than 100/,
    );
  });

  it('reads PATCH paths with filters and sub-attributes', () => {
    assert.deepEqual(parsePatchPath('members[value eq "a]b"]').filter, {
      kind: 'compare',
      path: { schema: null, attribute: 'value', subAttribute: null },
      operator: 'eq',
      value: 'a]b',
    });
    assert.equal(parsePatchPath('emails[type eq "work"].value').subAttribute, 'value');
    refused(() => parsePatchPath('emails[type eq "work"]value'), 'invalidPath', /not a valid path/);
  });
});

describe('SCIM PATCH on a user', () => {
  const view = {
    id: 'u1',
    userName: 'ada',
    displayName: 'Ada',
    name: { formatted: 'Ada' },
    emails: [{ value: 'ada@example.com', type: 'work', primary: true }],
    active: true,
  };
  const patch = (operations: unknown[]) =>
    patchUserView(view, readOperations({ Operations: operations }));

  it('makes an added primary e-mail the primary one', () => {
    const next = patch([
      { op: 'add', path: 'emails', value: [{ value: 'new@example.com', primary: 'True' }] },
    ]);
    assert.deepEqual(
      (next.emails as { value: string; primary: unknown }[]).map((email) => [
        email.value,
        email.primary,
      ]),
      [
        ['ada@example.com', false],
        ['new@example.com', 'True'],
      ],
    );
  });

  it('keeps displayName and name.formatted one value, whichever changed', () => {
    assert.equal(
      patch([{ op: 'replace', path: 'name.formatted', value: 'A. L.' }]).displayName,
      'A. L.',
    );
    assert.deepEqual(patch([{ op: 'Replace', value: { displayName: 'Countess' } }]).name, {
      formatted: 'Countess',
    });
  });

  it('refuses unknown attributes and read-only ones, and ignores unkept ones', () => {
    refused(
      () => patch([{ op: 'replace', path: 'usrName', value: 'x' }]),
      'invalidPath',
      /usrName/,
    );
    assert.throws(() => patch([{ op: 'replace', path: 'groups', value: [] }]), /read-only/);
    assert.throws(() => patch([{ op: 'replace', value: { id: 'other' } }]), /read-only/);
    assert.deepEqual(
      patch([{ op: 'replace', value: { id: 'u1', title: 'Dr', 'name.givenName': 'A' } }]),
      view,
    );
    refused(() => patch([{ op: 'remove' }]), 'noTarget', /needs a "path"/);
    refused(
      () => patch([{ op: 'move', path: 'userName' }]),
      'invalidSyntax',
      /add, replace or remove/,
    );
  });
});

describe('the lookup shape read without the parser', () => {
  /** What the parser and the translation make of the filter, or the error's scimType. */
  function parsed(filter: string): unknown {
    try {
      return toUserPredicate(parseFilter(filter));
    } catch (error) {
      assert.ok(error instanceof ScimError);
      return error.scimType;
    }
  }

  it('reads the lookups Okta and Entra send', () => {
    for (const [filter, attribute, value] of [
      ['userName eq "grace@example.com"', 'identifier', 'grace@example.com'],
      ['externalId eq "00u1abc"', 'externalId', '00u1abc'],
      ['id eq "5b2c"', 'id', '5b2c'],
      ['USERNAME EQ "Éva"', 'identifier', 'Éva'],
      ['userName eq ""', 'identifier', ''],
    ] as const) {
      const expected = { kind: 'compare', attribute, operator: 'eq', value };
      assert.deepEqual(plainLookupPredicate(filter), expected, filter);
      assert.deepEqual(parsed(filter), expected, filter);
    }
  });

  it('leaves escapes, other attributes, operators and shapes to the parser', () => {
    for (const filter of [
      'userName eq "a\\"b"',
      'userName eq "a\\u0041"',
      'userName eq "a\tb"',
      'userName eq "tab\there"',
      'userName  eq "x"',
      ' userName eq "x"',
      'userName eq "x" ',
      'userName eq x',
      'userName ne "x"',
      'displayName eq "x"',
      'urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x"',
      'userName eq "x" and active eq true',
      'userName eq "x" or userName eq "y"',
      '(userName eq "x")',
    ]) {
      assert.equal(plainLookupPredicate(filter), null, filter);
    }
  });

  it('gives what the parser gives whenever it reads a filter (property)', () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom('a"b', 'a\\b', '\u0000', 'x\ny', '\u2028', '\ud800', 'é', ' '),
    );
    const filter = fc.oneof(
      fc
        .tuple(
          fc.constantFrom('userName', 'USERNAME', 'externalid', 'ExternalId', 'id', 'ID', 'name'),
          fc.constantFrom(' eq ', ' EQ ', ' Eq ', ' ne ', '  eq ', ' eq'),
          text,
          fc.constantFrom('"', ''),
        )
        .map(([attribute, operator, value, quote]) => `${attribute}${operator}"${value}${quote}`),
      fc.string(),
    );
    fc.assert(
      fc.property(filter, (candidate) => {
        const plain = plainLookupPredicate(candidate);
        if (plain !== null) assert.deepEqual(plain, parsed(candidate), candidate);
      }),
      { numRuns: 2000 },
    );
  });
});
