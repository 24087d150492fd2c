// Tessera's ES256 signatures are written r ‖ s from node:crypto's DER form; every one of them
// must verify as a JWS signature, whatever leading zero bytes DER gave r and s.

import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import { describe, it } from 'node:test';
import { ecdsaDerToJose } from './signing-keys.service.js';

describe('ES256 signatures converted from DER', () => {
  it('verify as r ‖ s, with integers of 33 bytes (high bit) and of fewer than 32 alike', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const lengths = new Set<number>();
    // r or s is under 32 bytes about one signature in 128: keep signing until both kinds came.
    for (let n = 0; n < 20_000 && !(lengths.has(33) && [...lengths].some((l) => l < 32)); n++) {
      const message = randomBytes(64);
      const der = sign('sha256', message, privateKey);
      const rLength = der[3]!;
      lengths.add(rLength).add(der[4 + rLength + 1]!);
      const jose = ecdsaDerToJose(der, 32);
      assert.equal(jose.length, 64);
      assert.ok(
        verify('sha256', message, { key: publicKey, dsaEncoding: 'ieee-p1363' }, jose),
        `the signature of DER ${der.toString('hex')} does not verify`,
      );
    }
    assert.ok(lengths.has(33) && [...lengths].some((length) => length < 32), `${[...lengths]}`);
  });

  it('refuses what is not a DER ECDSA signature', () => {
    assert.throws(() => ecdsaDerToJose(Buffer.from('3006050000000000', 'hex'), 32));
  });
});
