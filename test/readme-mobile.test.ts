// tessera-test: both-stores
// The README's "native mobile app" section must work as written: its application document is
// accepted and every entry passes the checks (SSRF fence on), its exchange request returns an
// access token, and its back-end snippet verifies that token. A real OpenID provider
// (oidc-provider) stands in for Google, which a test cannot reach.

import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readEntry } from '../src/modules/tokens/external-tokens.js';
import { TestClock, type TestContext, buildTestApp, call } from './helpers.js';
import { NATIVE_CLIENT, type TestProvider, startTestProvider } from './oidc-provider.js';
import { freePort, repository } from './server-process.js';

// Asynchronous: the Tessera these commands call answers from this very process.
const run = promisify(execFile);

function readmeBlock(marker: string, language: string): string {
  const readme = readFileSync(join(repository, 'README.md'), 'utf8');
  const section = readme.split(`<!-- ${marker} -->`)[1]?.split(`<!-- /${marker} -->`)[0];
  assert.ok(section, `README.md has a <!-- ${marker} --> section`);
  const block = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(section)?.[1];
  assert.ok(block, `the ${marker} section has a ${language} block`);
  return block;
}

describe('README: signing in from a native mobile app', () => {
  const application = JSON.parse(readmeBlock('mobile-config', 'json')) as {
    client_id: string;
    external_token_validation: Record<string, Record<string, unknown>>;
  };

  it('gives an application document Tessera accepts, with entries that pass the fence', async () => {
    const ctx = await buildTestApp();
    try {
      const response = await call(ctx, 'POST', '/applications', { body: application });
      assert.equal(response.statusCode, 201, response.body);
      for (const [provider, entry] of Object.entries(application.external_token_validation)) {
        const checked = readEntry(provider, entry, { allowInsecure: false });
        assert.ok(!('check' in checked), `${provider}: ${JSON.stringify(checked)}`);
      }
      assert.deepEqual(Object.keys(application.external_token_validation), [
        'google_oauth2',
        'apple_oauth2',
      ]);
    } finally {
      await ctx.close();
    }
  });

  describe('with a live Tessera and an OpenID provider in place of Google', () => {
    let provider: TestProvider;
    let ctx: TestContext;
    let issuer: string;
    const directory = mkdtempSync(join(tmpdir(), 'tessera-mobile-'));

    before(async () => {
      provider = await startTestProvider();
      provider.accounts.set('ada', { sub: 'ada-1', email: 'ada@example.com', name: 'Ada' });
      const port = await freePort();
      issuer = `http://127.0.0.1:${port}`;
      ctx = await buildTestApp({
        clock: new TestClock(Date.now()),
        tokens: { issuer, allowInsecureJwks: true },
      });
      await ctx.app.listen({ port, host: '127.0.0.1' });
      const google = {
        ...application.external_token_validation.google_oauth2,
        issuer: provider.issuer,
        jwks_uri: provider.jwksUri,
        audience: [NATIVE_CLIENT],
      };
      const body = {
        ...application,
        external_token_validation: {
          ...application.external_token_validation,
          google_oauth2: google,
        },
      };
      assert.equal((await call(ctx, 'POST', '/applications', { body })).statusCode, 201);
    });
    after(async () => {
      await ctx.close();
      await provider.close();
      rmSync(directory, { recursive: true, force: true });
    });

    it('exchanges the ID token with the curl request as written, and the back-end snippet verifies it', async () => {
      const idToken = await provider.signIn('ada');
      const exchanged = await run(
        'bash',
        ['-euo', 'pipefail', '-c', readmeBlock('mobile-exchange', 'sh')],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            TESSERA: issuer,
            CLIENT_ID: application.client_id,
            ID_TOKEN: idToken,
          },
        },
      );
      const answer = JSON.parse(exchanged.stdout) as Record<string, unknown>;
      assert.equal(answer.token_type, 'Bearer');
      assert.equal(answer.expires_in, 15 * 60);

      const snippet = readmeBlock('mobile-backend', 'js').replace(
        "'https://iam.example.com'",
        JSON.stringify(issuer),
      );
      symlinkSync(join(repository, 'node_modules'), join(directory, 'node_modules'));
      writeFileSync(join(directory, 'backend.mjs'), snippet);
      const { stdout: output } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { authenticate } from ${JSON.stringify(join(directory, 'backend.mjs'))};
           console.log(JSON.stringify(await authenticate(process.env.HEADER)));`,
        ],
        {
          encoding: 'utf8',
          env: { ...process.env, HEADER: `Bearer ${String(answer.access_token)}` },
        },
      );
      const payload = JSON.parse(output) as Record<string, unknown>;
      assert.equal(payload.sub, 'google_oauth2|ada-1');
      assert.equal(payload.aud, 'notes-mobile');
      assert.equal(payload.iss, issuer);
      assert.equal(payload.email, 'ada@example.com');
    });
  });
});
