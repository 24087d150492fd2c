// The peer for the token scenarios: panva's oidc-provider (the certified OpenID provider
// for Node) in its own process, issuing JWT access tokens through the client_credentials
// grant — the cheapest grant it has: one client authentication, no user, no storage (a JWT
// access token is not saved). Its access tokens are ES256, as Tessera's are by default.
//
// It is also the outside issuer of the ID tokens Tessera's exchange takes: it publishes the
// RS256 key the benchmark signs them with at /jwks, as Google or Apple publish theirs.
//
// Plain JavaScript run by plain `node`, like Tessera's compiled dist/. Its parent
// (bench/run.ts) passes the private keys and the client in PEER_CONFIG (JSON:
// { keys: [JWK…], clientId, clientSecret, resource }) and gets { issuer, port } back over
// IPC once it listens.

import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const { keys, clientId, clientSecret, resource } = JSON.parse(process.env.PEER_CONFIG ?? '{}');

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  ttl: { ClientCredentials: 3600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'api:read',
        audience: resource,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
});
server.on('request', provider.callback());
// Tessera's settings (src/app.ts): keep-alive 72 s, request timeout 30 s.
server.keepAliveTimeout = 72_000;
server.requestTimeout = 30_000;

process.on('disconnect', () => process.exit(0));
process.send?.({ issuer, port });
