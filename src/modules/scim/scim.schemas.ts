// The shapes of SCIM requests and responses, for validation and the OpenAPI document. SCIM
// bodies are open-ended JSON (attributes in any case, extensions Tessera ignores), so bodies are
// objects checked by the mapping code (scim.users.ts, scim.groups.ts, scim.patch.ts), which
// answers invalidValue / invalidSyntax naming the member at fault.

import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { ClientId } from '../applications/applications.schemas.js';
import { ERROR_SCHEMA } from './scim.catalog.js';
import { MAX_PAGE_SIZE } from './scim.discovery.js';

export const SCIM_MEDIA_TYPE = 'application/scim+json';

export const ScimParams = Type.Object({ client_id: ClientId }, { additionalProperties: false });
export type ScimParams = Static<typeof ScimParams>;

/** A discovery resource by its id (RFC 7644 §4): a resource type's name or a schema's URN. */
function discoveryParams(description: string, example: string) {
  return Type.Object(
    {
      client_id: ClientId,
      id: Type.String({ minLength: 1, maxLength: 256, description, examples: [example] }),
    },
    { additionalProperties: false },
  );
}

export const ResourceTypeParams = discoveryParams(
  'The name of the resource type: `User` or `Group`.',
  'User',
);
export const SchemaParams = discoveryParams(
  'The URN of the schema.',
  'urn:ietf:params:scim:schemas:core:2.0:User',
);

export const ResourceParams = Type.Object(
  {
    client_id: ClientId,
    id: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The `id` Tessera gave the resource.',
      examples: ['5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a'],
    }),
  },
  { additionalProperties: false },
);
export type ResourceParams = Static<typeof ResourceParams>;

export const ProjectionQuery = Type.Object(
  {
    attributes: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'Comma-separated: return only these (and id, schemas).',
        examples: ['displayName,meta'],
      }),
    ),
    excludedAttributes: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'Comma-separated: return all but these.',
        examples: ['externalId'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type ProjectionQuery = Static<typeof ProjectionQuery>;

export const ListQuery = Type.Object(
  {
    ...ProjectionQuery.properties,
    filter: Type.Optional(
      Type.String({
        maxLength: 4096,
        description: 'RFC 7644 §3.4.2.2.',
        examples: ['displayName pr'],
      }),
    ),
    startIndex: Type.Optional(
      Type.Integer({ description: '1-based index paging; below 1 counts as 1.', examples: [1] }),
    ),
    count: Type.Optional(
      Type.Integer({
        description: `Page size; 0–${MAX_PAGE_SIZE} (larger asks get ${MAX_PAGE_SIZE}).`,
        examples: [10],
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'RFC 9865: empty for the first page, then nextCursor.',
      }),
    ),
    sortBy: Type.Optional(Type.String({ description: 'Not supported (400).' })),
    sortOrder: Type.Optional(Type.String({ description: 'Not supported (400).' })),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

/** Attribute names, as a list or comma-separated (as in the query). */
const AttributeNames = Type.Union([
  Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 }),
  Type.String({ maxLength: 2048 }),
]);

/** POST …/.search (RFC 7644 §3.4.3): the query parameters of a list, in a body. */
export const SearchRequest = named(
  'ScimSearchRequest',
  Type.Object(
    {
      schemas: Type.Optional(
        Type.Array(Type.String({ maxLength: 256 }), {
          maxItems: 10,
          description: `["${SEARCH_REQUEST}"]`,
        }),
      ),
      attributes: Type.Optional(AttributeNames),
      excludedAttributes: Type.Optional(AttributeNames),
      filter: ListQuery.properties.filter,
      startIndex: ListQuery.properties.startIndex,
      count: ListQuery.properties.count,
      cursor: ListQuery.properties.cursor,
      sortBy: ListQuery.properties.sortBy,
      sortOrder: ListQuery.properties.sortOrder,
    },
    {
      additionalProperties: false,
      description: 'A SCIM SearchRequest (RFC 7644 §3.4.3): a list query in a body.',
      examples: [{ schemas: [SEARCH_REQUEST], filter: 'userName eq "ada@example.com"', count: 10 }],
    },
  ),
);
export type SearchRequest = Static<typeof SearchRequest>;

/** A SearchRequest as the query of a list. */
export function searchQuery(body: SearchRequest): ListQuery {
  const names = (value: string[] | string | undefined) =>
    value === undefined ? undefined : Array.isArray(value) ? value.join(',') : value;
  const { schemas: _schemas, attributes, excludedAttributes, ...rest } = body;
  const query: ListQuery = { ...rest };
  const included = names(attributes);
  const excluded = names(excludedAttributes);
  if (included !== undefined) query.attributes = included;
  if (excluded !== undefined) query.excludedAttributes = excluded;
  return query;
}

/**
 * Any JSON object (a SCIM resource or PatchOp message, read by the SCIM mapping), named for the
 * OpenAPI document with an example that succeeds there.
 */
function scimBody(name: string, description: string, example: Record<string, unknown>) {
  return named(
    name,
    Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      additionalProperties: true,
      description,
      examples: [example],
    }),
  );
}

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

export const ScimUserBody = scimBody('ScimUserRequest', 'A SCIM User (RFC 7643 §4.1).', {
  schemas: [USER_SCHEMA],
  userName: 'grace@example.com',
  name: { givenName: 'Grace', familyName: 'Hopper' },
  emails: [{ primary: true, value: 'grace@example.com', type: 'work' }],
  locale: 'en-US',
  externalId: '00u1',
  active: true,
});

export const ScimUserPatchBody = scimBody(
  'ScimUserPatchOp',
  'A SCIM PatchOp message (RFC 7644 §3.5.2) for a User.',
  { schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', value: { active: false } }] },
);

export const ScimGroupBody = scimBody(
  'ScimGroupRequest',
  'A SCIM Group (RFC 7643 §4.2): its displayName is a role name.',
  { schemas: [GROUP_SCHEMA], displayName: 'billing-admins', members: [] },
);

export const ScimGroupPatchBody = scimBody(
  'ScimGroupPatchOp',
  'A SCIM PatchOp message (RFC 7644 §3.5.2) for a Group.',
  {
    schemas: [PATCH_OP_SCHEMA],
    Operations: [{ op: 'replace', value: { displayName: 'billing-owners' } }],
  },
);

export const ScimResource = named(
  'ScimResource',
  Type.Object(
    { schemas: Type.Array(Type.String()), id: Type.Optional(Type.String()) },
    {
      additionalProperties: true,
      description: 'A SCIM resource or message (RFC 7643, RFC 7644).',
    },
  ),
);

export const ScimErrorBody = named(
  'ScimError',
  Type.Object({
    schemas: Type.Array(Type.Literal(ERROR_SCHEMA)),
    status: Type.String({ description: 'The HTTP status, as a string.' }),
    scimType: Type.Optional(Type.String()),
    detail: Type.String(),
  }),
);

const errorDescriptions: Record<number, string> = {
  400: 'Bad request (scimType names the problem)',
  401: 'A valid API key is required (Bearer or apikey)',
  403: 'The key lacks the role, or is restricted to other applications',
  404: 'Not found (or SCIM is off for the application)',
  409: 'userName or displayName taken (uniqueness)',
  412: 'If-Match does not match meta.version',
  413: 'Body larger than the route reads (64 KiB for a user, 256 KiB for a Group)',
  415: 'Send application/scim+json or application/json',
  429: 'Too many requests for this key',
  503: 'Store unavailable; retry',
};

/** SCIM error responses for these statuses (and those every SCIM route can give). */
export function scimErrors(...statuses: number[]) {
  const all = new Set([...statuses, 400, 401, 403, 404, 429, 503]);
  return Object.fromEntries(
    [...all].map((status) => [
      status,
      {
        description: errorDescriptions[status]!,
        content: { [SCIM_MEDIA_TYPE]: { schema: ScimErrorBody } },
      },
    ]),
  );
}

export function ScimResponse(description: string, headers: string[] = []) {
  return {
    description,
    ...(headers.length > 0
      ? { headers: Object.fromEntries(headers.map((name) => [name, { type: 'string' }])) }
      : {}),
    content: { [SCIM_MEDIA_TYPE]: { schema: ScimResource } },
  };
}

export const scimSecurity = [{ bearerApiKey: [] }];
