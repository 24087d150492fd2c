// The error catalogue. Every failure Tessera reports is one of these kinds, rendered by the
// one error handler as RFC 9457 problem details. Code throws by name:
//   throw problem('not-found', `No application "${clientId}".`)

import { type Static, Type } from 'typebox';
import { named } from './http/openapi.js';

export const PROBLEM_TYPE_BASE = 'https://tessera.dev/problems/';

export const problemKinds = {
  'validation-failed': { status: 400, title: 'The request is not valid' },
  'malformed-request': { status: 400, title: 'The request cannot be read' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  forbidden: { status: 403, title: 'Not allowed' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  'user-inactive': { status: 409, title: 'The user is inactive' },
  'last-admin-key': { status: 409, title: 'The last administrator key cannot be revoked' },
  'precondition-failed': { status: 412, title: 'Precondition failed' },
  'payload-too-large': { status: 413, title: 'Request body too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'headers-too-large': { status: 431, title: 'Request headers too large' },
  internal: { status: 500, title: 'Internal error' },
  'store-unavailable': { status: 503, title: 'Service unavailable' },
  'write-contention': { status: 503, title: 'Service busy' },
  'shutting-down': { status: 503, title: 'Service unavailable' },
  'http-version-not-supported': { status: 505, title: 'HTTP version not supported' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemKind = keyof typeof problemKinds;

/** One invalid input: a JSON Pointer into the body, or a query/path parameter name. */
export const InvalidParamSchema = named(
  'InvalidParam',
  Type.Object({
    pointer: Type.Optional(Type.String({ description: 'JSON Pointer into the request body' })),
    parameter: Type.Optional(Type.String({ description: 'Query or path parameter' })),
    header: Type.Optional(Type.String()),
    detail: Type.String(),
  }),
);
export type InvalidParam = Static<typeof InvalidParamSchema>;

export const ProblemSchema = named(
  'Problem',
  Type.Object(
    {
      type: Type.String({ description: 'URI identifying the kind of problem' }),
      title: Type.String(),
      status: Type.Integer(),
      detail: Type.String(),
      instance: Type.Optional(
        Type.String({
          description: 'The request path (absent only if the request was unreadable)',
        }),
      ),
      errors: Type.Optional(Type.Array(InvalidParamSchema)),
    },
    { description: 'RFC 9457 problem details' },
  ),
);
export type ProblemBody = Static<typeof ProblemSchema>;

export interface ProblemOptions {
  errors?: InvalidParam[];
  headers?: Record<string, string>;
  cause?: unknown;
}

export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly status: number;
  readonly title: string;
  readonly errors: InvalidParam[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    readonly kind: ProblemKind,
    readonly detail: string,
    options: ProblemOptions = {},
  ) {
    super(detail, { cause: options.cause });
    this.status = problemKinds[kind].status;
    this.title = problemKinds[kind].title;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

export function problem(kind: ProblemKind, detail: string, options?: ProblemOptions): ProblemError {
  if (problemKinds[kind].status >= 500) return new ProblemError(kind, detail, options);
  // A 4xx is an answer, not a fault: nobody reads its stack trace, and capturing one costs
  // more than the rest of a refused request (the 401 path).
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ProblemError(kind, detail, options);
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** A 400 for one or more invalid inputs; `detail` summarises them for humans. */
export function invalid(errors: InvalidParam[]): ProblemError {
  const described = errors
    .slice(0, 3)
    .map((error) => `${describeLocation(error)} ${error.detail}`)
    .join('; ');
  const more = errors.length > 3 ? ` (and ${errors.length - 3} more)` : '';
  return problem('validation-failed', `${described}${more}.`, { errors });
}

function describeLocation(error: InvalidParam): string {
  if (error.parameter !== undefined) return `parameter "${error.parameter}"`;
  if (error.header !== undefined) return `header ${error.header}`;
  if (error.pointer === '' || error.pointer === undefined) return 'the body';
  return `"${error.pointer.slice(1).replaceAll('/', '.')}"`;
}

/** Input echoed in an error is cut to this many characters. */
export const MAX_ECHOED_INPUT = 200;

/** A caller's input as an error may echo it: at most MAX_ECHOED_INPUT characters. */
export function quoteInput(text: string): string {
  if (text.length <= MAX_ECHOED_INPUT) return text;
  return `${Array.from(text.slice(0, MAX_ECHOED_INPUT * 2))
    .slice(0, MAX_ECHOED_INPUT)
    .join('')}… (${text.length} characters)`;
}

export function toProblemBody(error: ProblemError, instance: string | undefined): ProblemBody {
  const body: ProblemBody = {
    type: PROBLEM_TYPE_BASE + error.kind,
    title: error.title,
    status: error.status,
    detail: error.detail,
    ...(instance === undefined ? {} : { instance }),
  };
  if (error.errors !== undefined) body.errors = error.errors;
  return body;
}
