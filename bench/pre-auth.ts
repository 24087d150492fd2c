// Issue 11: what a hostile body costs before authentication, against a plain body of the same
// size. A body of 308-digit runs cost 200–460 ms to refuse (a regular expression restarted at
// every digit); 85,000 empty scopes cost 0.4–1.2 s in validation. Each hostile scenario has a
// plain twin of the same size on the same route; the report prints their CPU per request and
// the ratio, which must stay near 1.

import type { RequestShape, Scenario } from './scenario.js';

/** About 250 KiB, under the 256 KiB body limit. */
const BODY_BYTES = 250 * 1024;

/** A JSON array of 308-digit numbers: each one a double, the worst case of the old check. */
function digitRuns(): string {
  const run = '1'.repeat(308);
  return `[${Array.from({ length: Math.floor(BODY_BYTES / (run.length + 1)) }, () => run).join(',')}]`;
}

/** A user whose scopes are 85,000 empty strings (the 100-scope limit, broken 85,000 times). */
function emptyScopes(): string {
  return JSON.stringify({
    provider: 'google_oauth2',
    identifier: 'hostile',
    name: 'Hostile',
    email: 'hostile@example.com',
    locale: 'en',
    roles: [],
    scopes: Array.from({ length: 85_000 }, () => ''),
  });
}

/** A JSON document of exactly `bytes` bytes: one long string member. */
function plainOfSize(bytes: number): string {
  const frame = JSON.stringify({ note: '' }).length;
  return JSON.stringify({ note: 'x'.repeat(bytes - frame) });
}

/** The hostile and plain twins, paired for the report: [hostile, plain]. */
export const PRE_AUTH_PAIRS: [string, string][] = [
  ['pre-auth-digits', 'pre-auth-digits-plain'],
  ['pre-auth-scopes', 'pre-auth-scopes-plain'],
  ['keyed-scopes', 'keyed-scopes-plain'],
];

export function preAuthScenarios(options: { apiKey: string; usersPath: string }): Scenario[] {
  const json = { 'content-type': 'application/json' };
  const keyed = { ...json, authorization: `apikey ${options.apiKey}` };
  const digits = digitRuns();
  const scopes = emptyScopes();
  const fixed = (name: string, description: string, expect: number, shape: RequestShape) => ({
    name,
    description,
    expect,
    next: () => shape,
    samples: () => [shape],
  });
  const post = (path: string, headers: Record<string, string>, body: string): RequestShape => ({
    method: 'POST',
    path,
    headers,
    body,
  });
  return [
    fixed(
      'pre-auth-digits',
      'no key, unknown route: 250 KiB of 308-digit runs',
      404,
      post('/nope', json, digits),
    ),
    fixed(
      'pre-auth-digits-plain',
      'no key, unknown route: a plain body of that size',
      404,
      post('/nope', json, plainOfSize(digits.length)),
    ),
    fixed(
      'pre-auth-scopes',
      'no key: a user with 85,000 empty scopes',
      401,
      post(options.usersPath, json, scopes),
    ),
    fixed(
      'pre-auth-scopes-plain',
      'no key: a plain body of that size',
      401,
      post(options.usersPath, json, plainOfSize(scopes.length)),
    ),
    fixed(
      'keyed-scopes',
      'with a key: a user with 85,000 empty scopes (400)',
      400,
      post(options.usersPath, keyed, scopes),
    ),
    fixed(
      'keyed-scopes-plain',
      'with a key: a plain body of that size (400)',
      400,
      post(options.usersPath, keyed, plainOfSize(scopes.length)),
    ),
  ];
}
