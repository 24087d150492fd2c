// A real OpenID provider for the token tests and the console's sign-in: panva's oidc-provider,
// in this process, on 127.0.0.1. ID tokens come out of a genuine authorization-code flow with
// PKCE, driven by a scripted login and consent, exactly as a native app's browser tab would
// drive it. The provider's private keys are kept, so tests can also sign tokens that are well
// signed but wrong in one claim, and have the token endpoint hand out such a token.

import { createHash, randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type JWK,
  type JWTPayload,
  SignJWT,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  importJWK,
} from 'jose';
import Provider from 'oidc-provider';

export const NATIVE_CLIENT = 'com.example.notes';
export const OTHER_CLIENT = 'com.example.other';
export const ES256_CLIENT = 'com.example.notes-es';
const REDIRECT_URI = 'com.example.notes:/oauth2redirect';

export interface Account {
  sub: string;
  email?: string;
  name?: string;
  locale?: string;
  picture?: string;
  /** Claims an organisation's provider adds (roles, groups, applications), in the ID token. */
  [claim: string]: unknown;
}

/** A confidential web client (a server-side application such as Tessera's console). */
export interface WebClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** The claims the ID token carries beside the standard ones, when the account has them. */
const ORGANISATION_CLAIMS = ['roles', 'groups', 'applications', 'realm_access'];

export interface TestProvider {
  issuer: string;
  jwksUri: string;
  /** The provider's signing keys, private members included (kid rsa-1 and ec-1). */
  privateKeys: { rsa: JWK; ec: JWK };
  accounts: Map<string, Account>;
  /** Requests to the JWKS endpoint so far. */
  jwksFetches: number;
  /** While true the JWKS endpoint drops connections (the provider's keys cannot be fetched). */
  jwksDown: boolean;
  /** Who logs in when the authorization request names nobody (no login_hint). */
  nextAccount: string;
  /** While true, logging in takes a click on the provider's own page (a form it posts). */
  loginForm: boolean;
  /**
   * While set, the token endpoint's ID token is replaced by one with these claims changed
   * (undefined removes one), signed with `signingKey` (default: the provider's own RSA key).
   */
  idTokenChanges: { claims: Record<string, unknown>; signingKey?: JWK } | null;
  /** An ID token for the account, from authorization code + PKCE. */
  signIn(accountId: string, clientId?: string): Promise<string>;
  close(): Promise<void>;
}

async function providerKey(alg: 'RS256' | 'ES256', kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
}

export async function startTestProvider(
  options: {
    webClients?: readonly WebClient[];
    /** Listen on this port (default: any free one). */
    port?: number;
    /**
     * The host name of the issuer URL (default 127.0.0.1): `localhost` makes the provider
     * another site than a server on 127.0.0.1, as an organisation's provider is.
     */
    hostname?: string;
  } = {},
): Promise<TestProvider> {
  const privateKeys = {
    rsa: await providerKey('RS256', 'rsa-1'),
    ec: await providerKey('ES256', 'ec-1'),
  };
  const accounts = new Map<string, Account>();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://${options.hostname ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;

  const nativeClient = (clientId: string, alg: 'RS256' | 'ES256') => ({
    client_id: clientId,
    application_type: 'native' as const,
    token_endpoint_auth_method: 'none' as const,
    redirect_uris: [REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code' as const],
    id_token_signed_response_alg: alg,
  });
  const provider = new Provider(issuer, {
    clients: [
      nativeClient(NATIVE_CLIENT, 'RS256'),
      nativeClient(OTHER_CLIENT, 'RS256'),
      nativeClient(ES256_CLIENT, 'ES256'),
      ...(options.webClients ?? []).map((client) => ({
        client_id: client.clientId,
        client_secret: client.clientSecret,
        token_endpoint_auth_method: 'client_secret_basic' as const,
        redirect_uris: [client.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code' as const],
      })),
    ],
    // Every client proves its code with PKCE (S256).
    pkce: { methods: ['S256'], required: () => true },
    jwks: { keys: [privateKeys.rsa, privateKeys.ec] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub', ...ORGANISATION_CLAIMS],
      email: ['email'],
      profile: ['name', 'locale', 'picture'],
    },
    // ID tokens carry the profile claims, as Google's and Apple's do.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    adapter: MemoryAdapter,
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 3600, IdToken: 3600 },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, id) {
      const account = accounts.get(id);
      if (account === undefined) return undefined;
      return { accountId: id, claims: async () => ({ ...account }) };
    },
  });
  const handle = provider.callback();

  const harness: TestProvider = {
    issuer,
    jwksUri: `${issuer}/jwks`,
    privateKeys,
    accounts,
    jwksFetches: 0,
    jwksDown: false,
    nextAccount: '',
    loginForm: false,
    idTokenChanges: null,
    signIn: (accountId, clientId = NATIVE_CLIENT) => signIn(issuer, accountId, clientId),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  // The scripted user: logs in as the requested account and consents to everything.
  async function interact(request: IncomingMessage, response: ServerResponse) {
    const details = await provider.interactionDetails(request, response);
    if (details.prompt.name === 'login') {
      const accountId = String(details.params.login_hint ?? harness.nextAccount);
      if (harness.loginForm && request.method === 'GET') {
        // A page of the provider's own, whose form the person submits: what follows is a
        // navigation this site began, as after typing a password.
        response.setHeader('content-type', 'text/html; charset=utf-8');
        response.end(
          `<!doctype html><html lang="en"><title>Example SSO</title><main><h1>Example SSO</h1>` +
            `<form method="post" action="${request.url}"><button>Continue as ${accountId}</button></form></main></html>`,
        );
        return;
      }
      await provider.interactionFinished(request, response, { login: { accountId } });
      return;
    }
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: String(details.params.client_id),
    });
    grant.addOIDCScope(String(details.params.scope));
    await provider.interactionFinished(
      request,
      response,
      { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true },
    );
  }

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '').split('?')[0]!;
    if (path === '/jwks') {
      harness.jwksFetches++;
      if (harness.jwksDown) {
        request.socket.destroy();
        return;
      }
    }
    if (path === '/token' && harness.idTokenChanges !== null) {
      rewriteIdToken(response, harness.idTokenChanges, privateKeys.rsa);
    }
    if (path.startsWith('/interaction/')) {
      interact(request, response).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
      return;
    }
    void handle(request, response);
  });
  return harness;
}

/**
 * Replaces the ID token in the token endpoint's answer (written in one end() call, its headers
 * not yet sent) by one with some claims changed, signed with the given key.
 */
function rewriteIdToken(
  response: ServerResponse,
  changes: { claims: Record<string, unknown>; signingKey?: JWK },
  providerKey: JWK,
): void {
  const end = response.end.bind(response) as (chunk?: unknown) => ServerResponse;
  response.end = ((chunk?: unknown) => {
    const body = JSON.parse(String(chunk)) as { id_token?: string };
    if (body.id_token === undefined) return end(chunk);
    const key = changes.signingKey ?? providerKey;
    const claims: JWTPayload = { ...decodeJwt(body.id_token), ...changes.claims };
    for (const [name, value] of Object.entries(changes.claims)) {
      if (value === undefined) delete claims[name];
    }
    void importJWK(key, 'RS256').then(async (privateKey) => {
      body.id_token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: key.kid ?? 'rsa-1' })
        .sign(privateKey);
      const text = JSON.stringify(body);
      response.setHeader('content-length', Buffer.byteLength(text));
      end(text);
    });
    return response;
  }) as typeof response.end;
}

/** oidc-provider's storage, in memory (its own warns that it is for development only). */
class MemoryAdapter {
  static readonly #rows = new Map<string, Record<string, unknown>>();
  constructor(private readonly model: string) {}
  #key(id: string) {
    return `${this.model}:${id}`;
  }
  async upsert(id: string, payload: Record<string, unknown>) {
    MemoryAdapter.#rows.set(this.#key(id), payload);
  }
  async find(id: string) {
    return MemoryAdapter.#rows.get(this.#key(id));
  }
  async findByUid(uid: string) {
    return [...MemoryAdapter.#rows.values()].find((row) => row.uid === uid);
  }
  async findByUserCode(userCode: string) {
    return [...MemoryAdapter.#rows.values()].find((row) => row.userCode === userCode);
  }
  async consume(id: string) {
    const row = MemoryAdapter.#rows.get(this.#key(id));
    if (row !== undefined) row.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string) {
    MemoryAdapter.#rows.delete(this.#key(id));
  }
  async revokeByGrantId(grantId: string) {
    for (const [key, row] of MemoryAdapter.#rows) {
      if (row.grantId === grantId) MemoryAdapter.#rows.delete(key);
    }
  }
}

/** Authorization code + PKCE, following redirects by hand with a cookie jar. */
async function signIn(issuer: string, accountId: string, clientId: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorize = new URL('/auth', issuer);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
    login_hint: accountId,
    prompt: 'login consent',
  }).toString();
  const cookies = new Map<string, string>();
  let next = authorize.href;
  for (let hop = 0; hop < 12; hop++) {
    const response = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const separator = pair!.indexOf('=');
      cookies.set(pair!.slice(0, separator), pair!.slice(separator + 1));
    }
    const location = response.headers.get('location');
    if (location === null) {
      throw new Error(`sign-in stopped at ${next}: ${response.status} ${await response.text()}`);
    }
    if (location.startsWith(REDIRECT_URI)) {
      const code = new URL(location).searchParams.get('code');
      if (code === null) throw new Error(`no code in ${location}`);
      return redeem(issuer, clientId, code, verifier);
    }
    next = new URL(location, next).href;
  }
  throw new Error('sign-in did not finish within 12 redirects');
}

async function redeem(issuer: string, clientId: string, code: string, verifier: string) {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: clientId,
    }),
  });
  const body = (await response.json()) as { id_token?: string };
  if (body.id_token === undefined) throw new Error(`no ID token: ${JSON.stringify(body)}`);
  return body.id_token;
}
