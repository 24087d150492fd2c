// The one error type of the services. A service says what went wrong in the domain's words
// (an invalid field, a missing resource, a taken name, a moved-on version); each edge renders
// it in its own dialect: the API and the console as RFC 9457 problem documents
// (http/error-handler.ts), SCIM as its error body with a scimType (scim.http.ts), the token
// endpoint as an RFC 6749 error (oauth.routes.ts). No service builds any of those.

/** One invalid member of a domain input: a JSON Pointer into the input, and the rule it breaks. */
export interface FieldError {
  path: string;
  detail: string;
}

/** The result of checking an input against the domain's rules. */
export type Checked<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export type DomainErrorCode =
  /** The input breaks a rule; `fields` says which members and why. */
  | 'invalid'
  /** The resource, or the application it belongs to, does not exist. */
  | 'not_found'
  /** A uniqueness rule: `rule` names it. */
  | 'conflict'
  /** The caller's condition on the resource's version does not hold (HTTP If-Match). */
  | 'version_mismatch'
  /** The user is inactive (deprovisioned): no token is issued for it. */
  | 'inactive'
  /** Writers elsewhere kept changing the resource; the caller may retry. */
  | 'busy'
  /** The change would leave no working unrestricted API key with every role: nobody could administer Tessera. */
  | 'last_admin_key';

/** Which uniqueness rule a conflict broke. */
export type ConflictRule =
  /** (provider, identifier) within an application. */
  | 'user_identity'
  /** An identifier of the application's SCIM provider, ignoring ASCII case (SCIM userName). */
  | 'user_name'
  /** An application's client_id. */
  | 'client_id'
  /** Another rule (a group's display name, a key's id). */
  | 'other';

/** What a not-found is about: SCIM answers a missing application unlike a missing user. */
export type DomainResource = 'application' | 'user' | 'group' | 'other';

export interface DomainErrorOptions {
  fields?: readonly FieldError[];
  rule?: ConflictRule;
  resource?: DomainResource;
  /** For `busy`: how long to wait before retrying. */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class DomainError extends Error {
  override readonly name = 'DomainError';
  readonly fields: readonly FieldError[];
  readonly rule: ConflictRule | null;
  readonly resource: DomainResource | null;
  readonly retryAfterSeconds: number | null;

  constructor(
    readonly code: DomainErrorCode,
    /** A sentence for people, without internals; edges may show it as it is. */
    readonly detail: string,
    options: DomainErrorOptions = {},
  ) {
    super(detail, { cause: options.cause });
    this.fields = options.fields ?? [];
    this.rule = options.rule ?? null;
    this.resource = options.resource ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
  }
}

/**
 * A domain error without a stack trace: a refusal is an answer, not a fault, and capturing a
 * stack costs more than the rest of a refused request.
 */
export function domainError(
  code: DomainErrorCode,
  detail: string,
  options?: DomainErrorOptions,
): DomainError {
  if (code === 'busy') return new DomainError(code, detail, options);
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new DomainError(code, detail, options);
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** `invalid` with these field errors; the detail names the first three. */
export function invalidFields(errors: readonly FieldError[]): DomainError {
  const described = errors
    .slice(0, 3)
    .map((error) => `${describePath(error.path)} ${error.detail}`)
    .join('; ');
  const more = errors.length > 3 ? ` (and ${errors.length - 3} more)` : '';
  return domainError('invalid', `${described}${more}.`, { fields: errors });
}

/** The value of a check, or the `invalid` error of its field errors. */
export function valueOrThrow<T>(checked: Checked<T>): T {
  if (checked.ok) return checked.value;
  throw invalidFields(checked.errors);
}

function describePath(path: string): string {
  return path === '' ? 'the input' : `"${path.slice(1).replaceAll('/', '.')}"`;
}
