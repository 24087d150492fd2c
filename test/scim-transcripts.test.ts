// tessera-test: both-stores
// Okta's and Microsoft Entra ID's provisioning conversations (test/scim/*.transcript.json, in
// the request shapes their documentation shows) replayed over real HTTP against a listening
// server, on the store of this pass. Each step's expected response is a subset of the actual one.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { API_PREFIX } from '../src/app.js';
import { type TestContext, buildTestApp, createApplication } from './helpers.js';

interface Step {
  name: string;
  method?: string;
  path?: string;
  /** A call to the Tessera API instead: "METHOD /path" (admin key). */
  tessera?: string;
  body?: unknown;
  contentType?: string;
  capture?: Record<string, string>;
  expect: { status: number; body?: unknown; headers?: Record<string, string>; absent?: string[] };
}

function pointer(document: unknown, path: string): unknown {
  let value = document;
  for (const token of path.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return value;
}

/** `expected` is within `actual`: objects by member, arrays element by element (same length). */
function assertSubset(actual: unknown, expected: unknown, where: string): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${where}: length of ${JSON.stringify(actual)}`);
    expected.forEach((item, index) => assertSubset(actual[index], item, `${where}/${index}`));
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(
      actual !== null && typeof actual === 'object',
      `${where}: expected an object, got ${JSON.stringify(actual)}`,
    );
    for (const [key, value] of Object.entries(expected)) {
      assertSubset((actual as Record<string, unknown>)[key], value, `${where}/${key}`);
    }
  } else {
    assert.deepEqual(actual, expected, where);
  }
}

function replayTranscript(file: string, provider: string) {
  const transcript = JSON.parse(
    readFileSync(new URL(`./scim/${file}`, import.meta.url), 'utf8'),
  ) as {
    description: string;
    steps: Step[];
  };
  describe(`SCIM transcript: ${file}`, () => {
    let ctx: TestContext;
    let origin: string;
    let key: string;
    const variables: Record<string, string> = { clientId: 'hr-portal' };
    const fill = <T>(value: T): T =>
      JSON.parse(
        JSON.stringify(value).replace(/\$\{(\w+)\}/g, (_, name: string) => {
          assert.ok(variables[name] !== undefined, `no value for \${${name}}`);
          return variables[name];
        }),
      ) as T;

    before(async () => {
      ctx = await buildTestApp();
      await createApplication(ctx, { client_id: 'hr-portal', scim_provider: provider });
      // What an operator gives the directory: a key for this application's users only.
      key = await ctx.createKey({
        roles: ['users:read', 'users:write'],
        applications: ['hr-portal'],
        name: 'scim',
      });
      origin = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      variables.base = `${origin}/scim/v2/hr-portal`;
    });
    after(() => ctx.close());

    it(transcript.description.slice(0, 80), async () => {
      for (const raw of transcript.steps) {
        const step = { ...fill({ ...raw, expect: undefined }), expect: raw.expect };
        const [method, path] =
          step.tessera === undefined
            ? [step.method!, `/scim/v2/hr-portal${step.path!}`]
            : (step.tessera.split(' ') as [string, string]);
        const url = step.tessera === undefined ? path : `${API_PREFIX}${path}`;
        const authorization =
          step.tessera === undefined ? `Bearer ${key}` : `apikey ${ctx.adminKey}`;
        const response = await fetch(`${origin}${url}`, {
          method,
          headers: {
            authorization,
            ...(step.body === undefined
              ? {}
              : { 'content-type': step.contentType ?? 'application/scim+json' }),
          },
          ...(step.body === undefined ? {} : { body: JSON.stringify(step.body) }),
        });
        const text = await response.text();
        const body: unknown = text === '' ? undefined : JSON.parse(text);
        assert.equal(response.status, step.expect.status, `${step.name}: ${text}`);
        for (const [name, pointerPath] of Object.entries(step.capture ?? {})) {
          variables[name] = String(pointer(body, pointerPath));
        }
        const expected = fill(step.expect);
        if (expected.body !== undefined) assertSubset(body, expected.body, step.name);
        for (const [header, value] of Object.entries(expected.headers ?? {})) {
          assert.equal(response.headers.get(header), value, `${step.name}: header ${header}`);
        }
        for (const absent of expected.absent ?? []) {
          assert.equal(pointer(body, absent), undefined, `${step.name}: ${absent} must be absent`);
        }
        if (response.status >= 400 && step.tessera === undefined) {
          assert.equal(response.headers.get('content-type'), 'application/scim+json', step.name);
        }
      }
    });
  });
}

replayTranscript('okta.transcript.json', 'okta_scim');
replayTranscript('entra.transcript.json', 'entra_scim');
