// Private signing keys encrypted at rest with IAM_SECRET_KEY (AES-256-GCM): sealed
// when written, keys stored in clear sealed at start-up, and a missing or wrong key stops
// start-up with one line. Without the key, one warning at start-up.

import assert from 'node:assert/strict';
import { CLI_ORIGIN } from '../src/modules/changes.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { PrivateKeySealer, SealedKeyError, isSealed } from '../src/modules/private-key-sealing.js';
import { SealedSecrets } from '../src/modules/secret-key/secret-key.service.js';
import { SigningKeys } from '../src/modules/tokens/signing-keys.service.js';
import { warnAboutConfiguration } from '../src/server.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { TestClock, openTestStore } from './helpers.js';
import { repository, serverEntry } from './server-process.js';

const KEY_A = Buffer.alloc(32, 0xa1);
const KEY_B = Buffer.alloc(32, 0xb2);

function signingKeys(store: Store, secretKey: Buffer | null) {
  const clock = new TestClock(Date.now());
  return new SigningKeys({
    store,
    clock,
    algorithm: 'ES256',
    secrets: new SealedSecrets({ store, clock, secretKey }),
  });
}

/** Signs a token with the current key and verifies it against the published keys. */
async function signsAndVerifies(keys: SigningKeys): Promise<string> {
  const signer = await keys.currentSigner();
  const token = await signer.sign({ sub: 'someone', aud: 'app', exp: 4_102_444_800 });
  await jwtVerify(token, createLocalJWKSet({ keys: await keys.publishedKeys() }), {
    audience: 'app',
  });
  return signer.kid;
}

describe('sealing private signing keys with IAM_SECRET_KEY', () => {
  let store: Store;
  before(async () => {
    store = await openTestStore();
    await store.migrate();
  });
  after(() => store.close());

  it('stores new keys sealed, and signs with them', async () => {
    const keys = signingKeys(store, KEY_A);
    await keys.ensureSigningKey();
    const [stored] = await store.signingKeys.listSigningKeys();
    assert.ok(isSealed(stored!.privateKey), 'sealed at rest');
    assert.doesNotMatch(stored!.privateKey, /"d"/);
    assert.equal(await signsAndVerifies(keys), stored!.kid);
  });

  it('refuses to open sealed keys without the secret key, or with another one, saying which', async () => {
    await assert.rejects(signingKeys(store, null).sealStoredKeys(), (error: unknown) => {
      assert.ok(error instanceof SealedKeyError);
      assert.match(error.message, /encrypted: set IAM_SECRET_KEY/);
      return true;
    });
    await assert.rejects(signingKeys(store, KEY_B).sealStoredKeys(), (error: unknown) => {
      assert.ok(error instanceof SealedKeyError);
      const [a, b] = [new PrivateKeySealer(KEY_A).keyId, new PrivateKeySealer(KEY_B).keyId];
      assert.ok(error.message.includes(a) && error.message.includes(b), error.message);
      return true;
    });
    // Nor will a process without the key add a key in clear beside the sealed ones.
    await assert.rejects(signingKeys(store, null).rotate(CLI_ORIGIN), SealedKeyError);
    assert.equal((await store.signingKeys.listSigningKeys()).length, 1);
  });

  it('does not open a sealed key copied onto another kid', () => {
    const sealer = new PrivateKeySealer(KEY_A);
    const sealed = sealer.seal('{"kty":"EC"}', 'kid-1');
    assert.equal(sealer.open(sealed, 'kid-1'), '{"kty":"EC"}');
    assert.throws(() => sealer.open(sealed, 'kid-2'), SealedKeyError);
    const damaged = sealed.slice(0, -3) + (sealed.endsWith('AAA') ? 'BBB' : 'AAA');
    assert.throws(() => sealer.open(damaged, 'kid-1'), SealedKeyError);
  });
});

describe('keys stored in clear before IAM_SECRET_KEY was set', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-sealing-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it('keep working, and are sealed at the next start', async () => {
    const store = openSqliteStore({ path: join(directory, 't.db') });
    await store.migrate();
    try {
      const clear = signingKeys(store, null);
      await clear.ensureSigningKey();
      const [stored] = await store.signingKeys.listSigningKeys();
      const secretPart = (JSON.parse(stored!.privateKey) as { d: string }).d;
      assert.deepEqual(await clear.sealStoredKeys(), { sealed: 0, inClear: 1 });

      const sealed = signingKeys(store, KEY_A);
      assert.deepEqual(await sealed.sealStoredKeys(), { sealed: 1, inClear: 0 });
      assert.deepEqual(await sealed.sealStoredKeys(), { sealed: 0, inClear: 0 });
      const [after] = await store.signingKeys.listSigningKeys();
      assert.ok(isSealed(after!.privateKey));
      assert.ok(!after!.privateKey.includes(secretPart));
      assert.equal(await signsAndVerifies(sealed), stored!.kid, 'the same key signs on');
    } finally {
      await store.close();
    }
  });
});

/** Runs `npm start`'s entry point and returns how it ended. */
function start(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', PORT: '0', ...env };
  delete childEnv.NODE_TEST_CONTEXT;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      serverEntry(),
      { cwd: repository, env: childEnv, encoding: 'utf8', timeout: 60_000 },
      (error, _stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stderr });
      },
    );
    // A server that did start is stopped: these tests only look at start-up refusals.
    setTimeout(() => child.kill('SIGTERM'), 30_000).unref();
  });
}

describe('start-up with sealed keys', () => {
  let directory: string;
  let url: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tessera-sealed-start-'));
    url = `sqlite:${join(directory, 't.db')}`;
    const store = openSqliteStore({ path: join(directory, 't.db') });
    await store.migrate();
    await signingKeys(store, KEY_A).ensureSigningKey();
    await store.close();
  });
  after(() => rm(directory, { recursive: true, force: true }));

  for (const [label, env] of [
    ['without IAM_SECRET_KEY', {}],
    ['with another IAM_SECRET_KEY', { IAM_SECRET_KEY: KEY_B.toString('base64') }],
  ] as const) {
    it(`stops ${label}, with one line and exit code 2`, async () => {
      const result = await start({ DATABASE_URL: url, ...env });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^tessera: cannot start: [^\n]*IAM_SECRET_KEY[^\n]*\n$/);
    });
  }
});

describe('start-up warnings', () => {
  function warningsFor(env: Record<string, string>): string[] {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(...chunk.toString().trim().split('\n'));
          callback();
        },
      }),
    );
    warnAboutConfiguration(loadConfig(env), logger);
    return lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
  }

  it('warns once when private keys would be stored in clear', () => {
    const warnings = warningsFor({});
    assert.equal(warnings.filter((msg) => msg.includes('IAM_SECRET_KEY is not set')).length, 1);
    assert.deepEqual(warningsFor({ IAM_SECRET_KEY: KEY_A.toString('base64') }), []);
  });

  it('warns when HOST=0.0.0.0 would make the issuer http://0.0.0.0:8080', () => {
    const secret = { IAM_SECRET_KEY: KEY_A.toString('base64') };
    const [warning] = warningsFor({ ...secret, HOST: '0.0.0.0' });
    assert.match(warning!, /HOST=0\.0\.0\.0 without IAM_ISSUER.*http:\/\/0\.0\.0\.0:8080/);
    assert.deepEqual(
      warningsFor({ ...secret, HOST: '0.0.0.0', IAM_ISSUER: 'https://iam.example.com' }),
      [],
    );
  });
});
