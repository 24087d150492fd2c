// What Tessera's SCIM resources are made of (RFC 7643 §7 attribute definitions): the one list
// that discovery (/Schemas) publishes, that resolves attribute names (case-insensitively) in
// filters, PATCH paths and `attributes`, and that says which comparisons are case-exact.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface AttributeDefinition {
  name: string;
  type: 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex';
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable';
  returned: 'always' | 'default';
  uniqueness: 'none' | 'server';
  subAttributes?: AttributeDefinition[];
  referenceTypes?: string[];
  /** Suggested values (RFC 7643 §7): clients MAY use others where the description allows. */
  canonicalValues?: string[];
}

function attribute(
  name: string,
  description: string,
  options: Partial<AttributeDefinition> = {},
): AttributeDefinition {
  return {
    name,
    type: 'string',
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...options,
  };
}

const readOnly = { mutability: 'readOnly' } as const;

/** Attributes every resource has (RFC 7643 §3.1), outside any schema's list. */
export const COMMON_ATTRIBUTES: AttributeDefinition[] = [
  attribute('id', 'Immutable identifier assigned by Tessera.', {
    ...readOnly,
    caseExact: true,
    returned: 'always',
    uniqueness: 'server',
  }),
  attribute('externalId', "The provisioning client's identifier for the resource.", {
    caseExact: true,
  }),
  attribute('meta', 'Resource metadata.', {
    ...readOnly,
    type: 'complex',
    subAttributes: [
      attribute('resourceType', 'User or Group.', { ...readOnly, caseExact: true }),
      attribute('created', 'When the resource was created.', { ...readOnly, type: 'dateTime' }),
      attribute('lastModified', 'When the resource last changed.', {
        ...readOnly,
        type: 'dateTime',
      }),
      attribute('location', 'The URI of the resource.', {
        ...readOnly,
        type: 'reference',
        caseExact: true,
        referenceTypes: ['uri'],
      }),
      attribute('version', 'The entity tag of this version (as in ETag).', {
        ...readOnly,
        caseExact: true,
      }),
    ],
  }),
];

/** Some BCP 47 language tags, as examples of what locale and preferredLanguage take. */
const LANGUAGE_TAGS = ['en', 'en-US', 'en-GB', 'fr-FR', 'de-DE', 'pt-BR', 'zh-Hant-TW'];

/** The sub-attributes of a multi-valued attribute of which Tessera keeps one element. */
const typedValue = (
  description: string,
  types: string[],
  options: { reference?: boolean; required?: boolean } = {},
) => [
  attribute('value', description, {
    ...(options.reference === true
      ? { type: 'reference', caseExact: true, referenceTypes: ['external'] }
      : {}),
    required: options.required ?? false,
  }),
  attribute('type', `A label of the value's function (${types.join(', ')}, or another).`, {
    canonicalValues: types,
  }),
  attribute('primary', 'Whether this is the one Tessera keeps (else the first is).', {
    type: 'boolean',
  }),
  attribute('display', 'The same as value.', readOnly),
];

export const USER_ATTRIBUTES: AttributeDefinition[] = [
  attribute('userName', "The user's identifier at the application's SCIM provider.", {
    required: true,
    uniqueness: 'server',
  }),
  // Required here means what RFC 7643's errata 8280 says it means: the attribute always has a
  // value. A user always has a name, a locale and a state; what a request leaves out, Tessera
  // fills in (see the descriptions), and a PATCH that removes one sets it to that value.
  attribute('name', "The user's name; Tessera keeps the full name only.", {
    type: 'complex',
    required: true,
    subAttributes: [
      attribute('formatted', 'The full name (the same as displayName).', { required: true }),
    ],
  }),
  attribute(
    'displayName',
    'The full name. Always has a value: left out, it is name.formatted, else givenName and ' +
      'familyName, else userName.',
    { required: true },
  ),
  attribute(
    'emails',
    'The e-mail address (one: the primary, else the first given). Required: a create or replace ' +
      'without one is refused, unless userName is itself an e-mail address (then it is used).',
    {
      type: 'complex',
      multiValued: true,
      required: true,
      subAttributes: typedValue('The address.', ['work', 'home', 'other'], { required: true }),
    },
  ),
  attribute(
    'preferredLanguage',
    'A BCP 47 language tag; the same value as locale. Always has a value (left out: "en").',
    { required: true, canonicalValues: LANGUAGE_TAGS },
  ),
  attribute('locale', 'A BCP 47 language tag. Always has a value (left out: "en").', {
    required: true,
    canonicalValues: LANGUAGE_TAGS,
  }),
  attribute('photos', "The avatar's URL (one).", {
    type: 'complex',
    multiValued: true,
    subAttributes: typedValue('An http: or https: URL.', ['photo', 'thumbnail'], {
      reference: true,
    }),
  }),
  attribute(
    'active',
    'Inactive users are kept but get no access tokens. Always has a value: left out of a ' +
      'create, true; left out of a replace, as it was.',
    { type: 'boolean', required: true },
  ),
  attribute('groups', "The Groups (the application's roles) the user has.", {
    ...readOnly,
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', 'The id of the Group.', { ...readOnly, caseExact: true }),
      attribute('$ref', 'The URI of the Group.', {
        ...readOnly,
        type: 'reference',
        caseExact: true,
        referenceTypes: ['Group'],
      }),
      attribute('display', 'The role name.', readOnly),
      attribute('type', 'Always "direct".', readOnly),
    ],
  }),
];

export const GROUP_ATTRIBUTES: AttributeDefinition[] = [
  attribute('displayName', 'The role name.', {
    required: true,
    uniqueness: 'server',
    caseExact: true,
  }),
  attribute('members', 'The users (of the SCIM provider) holding the role.', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', 'The id of the User.', { caseExact: true, mutability: 'immutable' }),
      // Immutable, not read-only (RFC 7643 §8.7.1): a client may name a member by its URI.
      attribute('$ref', 'The URI of the User (value, when given, must name the same User).', {
        type: 'reference',
        caseExact: true,
        mutability: 'immutable',
        referenceTypes: ['User'],
      }),
      attribute('display', "The member's userName.", readOnly),
      attribute('type', 'Always "User" (Groups are not members).', {
        mutability: 'immutable',
        canonicalValues: ['User'],
      }),
    ],
  }),
];

/**
 * Attributes of RFC 7643's User schema (and the enterprise extension) that Tessera does not
 * keep. Clients send them with the defaults of their mappings; they are accepted and ignored,
 * so provisioning does not fail on them. Any other name is an error (a typo is not ignored).
 */
export const IGNORED_USER_ATTRIBUTES = new Set(
  [
    'nickName',
    'profileUrl',
    'title',
    'userType',
    'timezone',
    'password',
    'phoneNumbers',
    'ims',
    'addresses',
    'entitlements',
    'roles',
    'x509Certificates',
  ].map((name) => name.toLowerCase()),
);

/** Sub-attributes of `name` Tessera does not keep (the full name is `formatted`). */
export const IGNORED_NAME_PARTS = new Set(
  ['familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((name) =>
    name.toLowerCase(),
  ),
);

/** The definition named `name` (any case) in `definitions`, or undefined. */
export function findAttribute(
  definitions: readonly AttributeDefinition[],
  name: string,
): AttributeDefinition | undefined {
  const lower = name.toLowerCase();
  return definitions.find((definition) => definition.name.toLowerCase() === lower);
}
