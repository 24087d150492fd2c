// What a benchmark scenario is: the requests autocannon sends, and what they are measured
// against.

/** One request: what autocannon sends. */
export interface RequestShape {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A stream of requests and the status every answer must have. */
export interface Load {
  expect: number;
  /** A fresh request each call (random user, new identifier, …). */
  next: () => RequestShape;
}

export interface Scenario extends Load {
  name: string;
  description: string;
  /** One request per method the scenario sends, whose answers the bare server replays. */
  samples: () => RequestShape[];
  /**
   * Measured against this load on the peer (oidc-provider) instead of against the bare
   * server replaying Tessera's answers.
   */
  peer?: Load;
  /**
   * Measured against this load on Tessera itself, in alternation, instead of against the bare
   * server: what a hostile request costs over a plain one of the same size, or what a SCIM lookup
   * costs over GET user. Both sides share every round, so a machine whose speed drifts during
   * the run moves them together.
   */
  twin?: Load & { kind: 'plain-body' | 'get-user' };
}
