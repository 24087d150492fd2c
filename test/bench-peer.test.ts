// The benchmark's peer (bench/peer-oidc-provider.mjs) is not exercised by CI otherwise: this
// keeps `npm run bench` honest. The peer must issue what the comparison claims it issues (ES256
// JWT access tokens through client_credentials), and the ID tokens the benchmark mints for the
// exchange must verify against the keys the peer publishes, as Tessera will verify them.

import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { type Peer, externalTokenValidation, mintIdTokens, startPeer } from '../bench/tokens.js';

describe('the benchmark peer (oidc-provider)', () => {
  let peer: Peer;
  before(async () => {
    peer = await startPeer();
  });
  after(() => peer.stop());

  it('issues ES256 JWT access tokens through client_credentials', async () => {
    const response = await fetch(`${peer.issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`bench-peer:${peer.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials&scope=api%3Aread',
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { access_token: string; token_type: string };
    assert.equal(body.token_type, 'Bearer');
    assert.equal(decodeProtectedHeader(body.access_token).alg, 'ES256');
    const { payload } = await jwtVerify(
      body.access_token,
      createRemoteJWKSet(new URL(`${peer.issuer}/jwks`)),
      { issuer: peer.issuer },
    );
    assert.equal(payload.client_id, 'bench-peer');
  });

  it('publishes the key that verifies the ID tokens the exchange scenario sends', async () => {
    let n = 0;
    const tokens = await mintIdTokens(peer, () => `1000000000000${n++}`);
    assert.equal(new Set(tokens).size, tokens.length, 'one distinct token per user');
    const entry = externalTokenValidation(peer, 'google_oauth2').google_oauth2!;
    const { payload, protectedHeader } = await jwtVerify(
      tokens[0]!,
      createRemoteJWKSet(new URL(entry.jwks_uri)),
      { issuer: entry.issuer, audience: entry.audience, algorithms: entry.algorithms },
    );
    assert.equal(protectedHeader.alg, 'RS256');
    assert.equal(payload.sub, '10000000000000');
  });
});
