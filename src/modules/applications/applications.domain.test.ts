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
