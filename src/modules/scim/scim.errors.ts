// SCIM's own error kinds (RFC 7644 §3.12). Thrown by the SCIM module's pure parts and its
// service; rendered as an `urn:ietf:params:scim:api:messages:2.0:Error` body by the routes.

/** The scimType values of RFC 7644 Table 9, plus RFC 9865's cursor errors. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive'
  | 'invalidCursor';

export class ScimError extends Error {
  override readonly name = 'ScimError';
  constructor(
    readonly status: number,
    readonly scimType: ScimType | null,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** A 400 with a scimType: what is wrong with the request, in words a client can act on. */
export function scimBadRequest(scimType: ScimType, detail: string): ScimError {
  return new ScimError(400, scimType, detail);
}
