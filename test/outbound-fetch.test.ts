// tessera-test: both-stores
// The SSRF fence around outside JWKS fetches (docs/api.md, Access tokens), tested with the escape hatch off:
// nothing inside the machine or the network is ever contacted.

import { strict as assert } from 'node:assert';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  OutboundRefusedError,
  OutboundUnavailableError,
  fencedFetch,
  isPublicAddress,
} from '../src/modules/tokens/outbound-fetch.js';
import { buildTestApp, call, createApplication } from './helpers.js';

const fenced = fencedFetch({ allowInsecure: false });
const insecure = fencedFetch({ allowInsecure: true });

function get(fetcher: typeof fenced, url: string) {
  return fetcher(url, { headers: new Headers(), signal: AbortSignal.timeout(10_000) });
}

/** A local server that counts every connection and request it gets. */
async function startCountingServer(
  answer: (
    url: string,
    respond: (status: number, body: string, headers?: Record<string, string>) => void,
  ) => void,
) {
  const counts = { connections: 0, requests: 0 };
  const server: Server = createServer((request, response) => {
    counts.requests++;
    answer(request.url ?? '', (status, body, headers = {}) => {
      response.writeHead(status, headers);
      response.end(body);
    });
  });
  server.on('connection', () => counts.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    counts,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('isPublicAddress', () => {
  const refused = [
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '64:ff9b::7f00:1',
    '2001:db8::1',
    // IPv4-compatible IPv6 (deprecated, RFC 4291 §2.5.5.1): 127.0.0.1 and 169.254.169.254.
    '::7f00:1',
    '::a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe', // local-use NAT64 (RFC 8215)
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '2001:2::1', // benchmarking
    '100::1', // discard
    '5f00::1', // segment routing, outside 2000::/3
    '3fff::1', // documentation (RFC 9637)
    'not an address',
  ];
  for (const address of refused) {
    it(`refuses ${address}`, () => assert.equal(isPublicAddress(address), false));
  }
  for (const address of [
    '8.8.8.8',
    '142.250.74.78',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
  ]) {
    it(`accepts the public ${address}`, () => assert.equal(isPublicAddress(address), true));
  }
});

describe('fenced JWKS fetches (IAM_ALLOW_INSECURE_JWKS off)', () => {
  let target: Awaited<ReturnType<typeof startCountingServer>>;
  before(async () => {
    target = await startCountingServer((_url, respond) => respond(200, '{"keys":[]}'));
  });
  after(() => target.close());

  const addresses = (port: number) => [
    `https://127.0.0.1:${port}/jwks`,
    `https://127.1:${port}/jwks`,
    `https://0x7f.1:${port}/jwks`,
    `https://2130706433:${port}/jwks`,
    `https://[::1]:${port}/jwks`,
    `https://[::ffff:127.0.0.1]:${port}/jwks`,
    `https://[::ffff:7f00:1]:${port}/jwks`,
    'https://169.254.169.254/latest/meta-data/',
    'https://[fe80::1]/jwks',
    'https://10.0.0.1/jwks',
    'https://192.168.0.1/jwks',
    'https://0.0.0.0/jwks',
  ];

  it('refuses loopback, private, link-local and unspecified addresses in every spelling, without connecting', async () => {
    for (const url of addresses(target.port)) {
      await assert.rejects(get(fenced, url), OutboundRefusedError, url);
    }
    assert.deepEqual(target.counts, { connections: 0, requests: 0 });
  });

  it('refuses a host name that resolves to loopback (checked at connection time)', async () => {
    await assert.rejects(get(fenced, `https://localhost:${target.port}/jwks`), (error: Error) => {
      assert.ok(error instanceof OutboundRefusedError, String(error));
      assert.match(error.message, /non-public address/);
      // The resolved address is never named: callers learn nothing of the inside network.
      assert.doesNotMatch(error.message, /127\.0\.0\.1|::1/);
      return true;
    });
    assert.equal(target.counts.connections, 0);
  });

  it('refuses http: and URLs with credentials', async () => {
    await assert.rejects(get(fenced, 'http://example.com/jwks'), /must be an https: URL/);
    await assert.rejects(get(fenced, 'https://user:pw@example.com/jwks'), /credentials/);
  });
});

describe('fetch limits that hold even with the escape hatch on', () => {
  it('never follows a redirect (to loopback or anywhere)', async () => {
    const inner = await startCountingServer((_url, respond) => respond(200, '{"keys":[]}'));
    const outer = await startCountingServer((_url, respond) =>
      respond(302, '', { location: `http://127.0.0.1:${inner.port}/jwks` }),
    );
    try {
      await assert.rejects(get(insecure, `http://127.0.0.1:${outer.port}/jwks`), (error: Error) => {
        assert.ok(error instanceof OutboundRefusedError);
        assert.match(error.message, /redirect/);
        return true;
      });
      assert.equal(outer.counts.requests, 1);
      assert.deepEqual(inner.counts, { connections: 0, requests: 0 });
    } finally {
      await inner.close();
      await outer.close();
    }
  });

  it('reads at most 256 KiB', async () => {
    const big = await startCountingServer((_url, respond) => respond(200, 'x'.repeat(300 * 1024)));
    try {
      await assert.rejects(
        get(insecure, `http://127.0.0.1:${big.port}/jwks`),
        /larger than 256 KiB/,
      );
      assert.equal(big.counts.requests, 1);
    } finally {
      await big.close();
    }
  });

  it('reports a refused connection as unavailable (retryable), not as refused', async () => {
    const closed = await startCountingServer(() => {});
    await closed.close();
    await assert.rejects(
      get(insecure, `http://127.0.0.1:${closed.port}/jwks`),
      OutboundUnavailableError,
    );
  });

  it('gives up after the caller-side abort signal (jose passes its 5 s timeout)', async () => {
    const silent = await startCountingServer(() => {});
    try {
      const started = Date.now();
      await assert.rejects(
        insecure(`http://127.0.0.1:${silent.port}/jwks`, {
          headers: new Headers(),
          signal: AbortSignal.timeout(200),
        }),
        OutboundUnavailableError,
      );
      assert.ok(Date.now() - started < 4_000, 'aborted well before the 5 s cap');
    } finally {
      await silent.close();
    }
  });
});

describe('the fence through the token exchange and the dry run', () => {
  it('refuses an application whose jwks_uri is loopback: invalid_grant, and nothing is contacted', async () => {
    const target = await startCountingServer((_url, respond) => respond(200, '{"keys":[]}'));
    const ctx = await buildTestApp();
    try {
      const issuer = 'https://accounts.example.test';
      await createApplication(ctx, {
        client_id: 'fenced',
        mode: 'external',
        external_token_validation: {
          google_oauth2: { issuer, jwks_uri: `https://127.1:${target.port}/jwks`, audience: 'app' },
          apple_oauth2: {
            issuer: 'https://appleid.example.test',
            jwks_uri: 'https://169.254.169.254/keys',
            audience: 'app',
          },
        },
      });
      const token = (iss: string) =>
        `${Buffer.from('{"alg":"RS256","kid":"k"}').toString('base64url')}.${Buffer.from(
          JSON.stringify({ iss, aud: 'app', sub: 'x', exp: 4102444800 }),
        ).toString('base64url')}.c2ln`;
      for (const iss of [issuer, 'https://appleid.example.test']) {
        const response = await ctx.app.inject({
          method: 'POST',
          url: '/oauth2/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({
            grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
            client_id: 'fenced',
            subject_token: token(iss),
            subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
          }).toString(),
        });
        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.json<{ error: string }>().error, 'invalid_grant');
        assert.match(
          response.json<{ error_description: string }>().error_description,
          /^jwks_uri:.*non-public/,
        );
        const report = await call(ctx, 'POST', '/applications/fenced/external-tokens/validate', {
          body: { token: token(iss) },
        });
        assert.equal(report.json<{ failed_check: string }>().failed_check, 'jwks_uri');
      }
      assert.deepEqual(target.counts, { connections: 0, requests: 0 });
    } finally {
      await ctx.close();
      await target.close();
    }
  });
});
