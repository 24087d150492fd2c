// Issue 11: what a hostile body costs before authentication, against a plain body of the same
// size. A body of 308-digit runs cost 200–460 ms to refuse (a regular expression restarted at
// every digit); 85,000 empty scopes cost 0.4–1.2 s in validation. Each hostile scenario is
// measured against its plain twin (same size, same route) on Tessera itself, in alternation;
// the report prints both CPU figures per request and their ratio. A user's route reads at most
// 64 KiB: the keyed body stays under it (and is parsed and validated), while a 250 KiB one
// with a key is refused from its Content-Length, unread.

import type { RequestShape, Scenario } from './scenario.js';

/** About 250 KiB, what any route took before each had a limit of its own. */
const BODY_BYTES = 250 * 1024;
/** Under the 64 KiB a user's route reads. */
const USER_BODY_BYTES = 62 * 1024;

/** A JSON array of 308-digit numbers: each one a double, the worst case of the old check. */
function digitRuns(): string {
  const run = '1'.repeat(308);
  return `[${Array.from({ length: Math.floor(BODY_BYTES / (run.length + 1)) }, () => run).join(',')}]`;
}

/** A user whose scopes are `count` empty strings (the 100-scope limit, broken `count` times). */
function emptyScopes(count: number): string {
  return JSON.stringify({
    provider: 'google_oauth2',
    identifier: 'hostile',
    name: 'Hostile',
    email: 'hostile@example.com',
    locale: 'en',
    roles: [],
    scopes: Array.from({ length: count }, () => ''),
  });
}

/** A JSON document of exactly `bytes` bytes: one long string member. */
function plainOfSize(bytes: number): string {
  const frame = JSON.stringify({ note: '' }).length;
  return JSON.stringify({ note: 'x'.repeat(bytes - frame) });
}

export function preAuthScenarios(options: { apiKey: string; usersPath: string }): Scenario[] {
  const json = { 'content-type': 'application/json' };
  const keyed = { ...json, authorization: `apikey ${options.apiKey}` };
  const digits = digitRuns();
  const scopes = emptyScopes(85_000);
  const underLimit = emptyScopes(Math.floor((USER_BODY_BYTES - 200) / 3));
  /** A fixed hostile request, measured against a plain body of its size on the same route. */
  const hostile = (
    name: string,
    description: string,
    expect: number,
    path: string,
    headers: Record<string, string>,
    body: string,
  ): Scenario => {
    const shape: RequestShape = { method: 'POST', path, headers, body };
    const plain: RequestShape = { ...shape, body: plainOfSize(body.length) };
    return {
      name,
      description,
      expect,
      next: () => shape,
      samples: () => [shape],
      twin: { kind: 'plain-body', expect, next: () => plain },
    };
  };
  return [
    hostile(
      'pre-auth-digits',
      'no key, unknown route: 250 KiB of 308-digit runs',
      404,
      '/nope',
      json,
      digits,
    ),
    hostile(
      'pre-auth-scopes',
      'no key: a user with 85,000 empty scopes',
      401,
      options.usersPath,
      json,
      scopes,
    ),
    hostile(
      'keyed-scopes',
      'with a key: a user with 21,000 empty scopes, 62 KiB (400)',
      400,
      options.usersPath,
      keyed,
      underLimit,
    ),
    hostile(
      'keyed-oversized',
      "with a key: 85,000 empty scopes, 250 KiB, over the route's 64 KiB (413)",
      413,
      options.usersPath,
      keyed,
      scopes,
    ),
  ];
}
