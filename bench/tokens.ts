// The token scenarios of `npm run bench` (issue 6): how many access tokens Tessera issues
// per second, from the trusted back-end endpoint and from the RFC 8693 exchange with the
// provider's keys already cached, against panva's oidc-provider issuing JWT access tokens
// through client_credentials on the same machine in the same run (bench/peer-oidc-provider.mjs).

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type CryptoKey, SignJWT, exportJWK, generateKeyPair } from 'jose';
import {
  ID_TOKEN_TYPE,
  TOKEN_EXCHANGE_GRANT,
} from '../src/modules/tokens/token-exchange.service.js';
import { repository } from '../test/run-server.js';
import type { RequestShape, Scenario } from './scenario.js';

/** The audience of the ID tokens: the native app's client id at the provider. */
const NATIVE_AUDIENCE = 'com.example.bench';
const ID_TOKEN_KID = 'bench-rsa-1';
const PEER_CLIENT = 'bench-peer';
const PEER_RESOURCE = 'urn:example:bench-api';
/** Distinct ID tokens the exchange cycles through, each for a different user. */
const ID_TOKENS = 1000;

export interface Peer {
  issuer: string;
  port: number;
  pid: number;
  /** The private half of the RS256 key the peer publishes for its ID tokens. */
  idTokenKey: CryptoKey;
  clientSecret: string;
  stop: () => void;
}

/** Starts oidc-provider in its own process, with an RS256 key (ID tokens) and an ES256 one. */
export async function startPeer(): Promise<Peer> {
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const keys = [
    { ...(await exportJWK(rsa.privateKey)), kid: ID_TOKEN_KID, alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(ec.privateKey)), kid: 'bench-ec-1', alg: 'ES256', use: 'sig' },
  ];
  const clientSecret = randomBytes(32).toString('base64url');
  const child: ChildProcess = spawn(
    process.execPath,
    [join(repository, 'bench', 'peer-oidc-provider.mjs')],
    {
      env: {
        ...process.env,
        PEER_CONFIG: JSON.stringify({
          keys,
          clientId: PEER_CLIENT,
          clientSecret,
          resource: PEER_RESOURCE,
        }),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const { issuer, port } = await new Promise<{ issuer: string; port: number }>(
    (resolve, reject) => {
      child.once('message', (message) => resolve(message as { issuer: string; port: number }));
      child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code})`)));
    },
  );
  return {
    issuer,
    port,
    pid: child.pid!,
    idTokenKey: rsa.privateKey,
    clientSecret,
    stop: () => child.kill('SIGTERM'),
  };
}

/** The application's external_token_validation: the peer as the provider of `provider`. */
export function externalTokenValidation(peer: Peer, provider: string) {
  return {
    [provider]: {
      issuer: peer.issuer,
      jwks_uri: `${peer.issuer}/jwks`,
      audience: NATIVE_AUDIENCE,
      algorithms: ['RS256'],
    },
  };
}

/**
 * ID tokens as the peer would issue them after a sign-in (RS256, like Google's and Apple's),
 * for `subjects` — users that exist, so the exchange finds them and registers no one.
 */
export async function mintIdTokens(peer: Peer, subjects: () => string): Promise<string[]> {
  const now = Math.floor(Date.now() / 1000);
  const tokens: string[] = [];
  for (let i = 0; i < ID_TOKENS; i++) {
    const subject = subjects();
    tokens.push(
      await new SignJWT({
        email: `user${subject}@example.com`,
        email_verified: true,
        name: `Bench User ${subject}`,
      })
        .setProtectedHeader({ alg: 'RS256', kid: ID_TOKEN_KID, typ: 'JWT' })
        .setIssuer(peer.issuer)
        .setSubject(subject)
        .setAudience(NATIVE_AUDIENCE)
        .setIssuedAt(now)
        // Long enough for a full run, as a token the app just got is valid for its whole use.
        .setExpirationTime(now + 3 * 3600)
        .sign(peer.idTokenKey),
    );
  }
  return tokens;
}

const form = (parameters: Record<string, string>) => new URLSearchParams(parameters).toString();
const FORM = 'application/x-www-form-urlencoded';

/** oidc-provider's client_credentials grant: the request the peer answers. */
function peerGrant(peer: Peer): RequestShape {
  const credentials = Buffer.from(`${PEER_CLIENT}:${peer.clientSecret}`).toString('base64');
  return {
    method: 'POST',
    path: '/token',
    headers: { authorization: `Basic ${credentials}`, 'content-type': FORM },
    body: form({ grant_type: 'client_credentials', scope: 'api:read' }),
  };
}

export function tokenScenarios(options: {
  peer: Peer;
  apiKey: string;
  clientId: string;
  /** The path of a random existing user. */
  randomUserPath: () => string;
  idTokens: string[];
}): Scenario[] {
  const { peer, apiKey, clientId, randomUserPath, idTokens } = options;
  const grant = peerGrant(peer);
  const versusPeer = { expect: 200, next: () => grant };
  const trusted = (): RequestShape => ({
    method: 'POST',
    path: `${randomUserPath()}/tokens`,
    headers: { authorization: `apikey ${apiKey}` },
  });
  const bodies = idTokens.map((token) =>
    form({
      grant_type: TOKEN_EXCHANGE_GRANT,
      client_id: clientId,
      subject_token: token,
      subject_token_type: ID_TOKEN_TYPE,
    }),
  );
  let sent = 0;
  const exchange = (): RequestShape => ({
    method: 'POST',
    path: '/oauth2/token',
    headers: { 'content-type': FORM },
    body: bodies[sent++ % bodies.length]!,
  });
  return [
    {
      name: 'token-trusted',
      description: 'access token for a random user (trusted back-end endpoint)',
      expect: 201,
      next: trusted,
      samples: () => [trusted()],
      peer: versusPeer,
    },
    {
      name: 'token-exchange',
      description: `RFC 8693 exchange of ${ID_TOKENS} RS256 ID tokens, provider keys cached`,
      expect: 200,
      next: exchange,
      samples: () => [exchange()],
      peer: versusPeer,
    },
  ];
}
