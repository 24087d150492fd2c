// Discovery (RFC 7644 §4, RFC 7643 §5–7): what this SCIM service supports, stated as it is.
// Built from the same attribute catalog that resolves names in requests.

import {
  type AttributeDefinition,
  GROUP_ATTRIBUTES,
  GROUP_SCHEMA,
  LIST_RESPONSE,
  USER_ATTRIBUTES,
  USER_SCHEMA,
} from './scim.catalog.js';

type Json = Record<string, unknown>;

export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;

export function serviceProviderConfig(base: string): Json {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_PAGE_SIZE },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    pagination: {
      cursor: true,
      index: true,
      defaultPaginationMethod: 'index',
      defaultPageSize: DEFAULT_PAGE_SIZE,
      maxPageSize: MAX_PAGE_SIZE,
    },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'API key as bearer token',
        description:
          'A Tessera API key (tsr_…) with users:read and users:write, sent as Authorization: Bearer <key>.',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string): Json[] {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: "The application's users of its SCIM provider",
      schema: USER_SCHEMA,
      schemaExtensions: [],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: "The application's roles; members are the users holding them",
      schema: GROUP_SCHEMA,
      schemaExtensions: [],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

function describeAttribute(definition: AttributeDefinition): Json {
  const { subAttributes, ...rest } = definition;
  return {
    ...rest,
    ...(subAttributes === undefined ? {} : { subAttributes: subAttributes.map(describeAttribute) }),
  };
}

export function schemas(base: string): Json[] {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
      id: USER_SCHEMA,
      name: 'User',
      description:
        'User Account. Other attributes of the User schema and of the enterprise extension ' +
        '(title, phoneNumbers, addresses, password, manager…) are accepted and ignored; ' +
        'name.givenName and name.familyName make the name when displayName and name.formatted ' +
        'are absent, and are not kept.',
      attributes: USER_ATTRIBUTES.map(describeAttribute),
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${USER_SCHEMA}` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
      id: GROUP_SCHEMA,
      name: 'Group',
      description: 'Group (a role of the application)',
      attributes: GROUP_ATTRIBUTES.map(describeAttribute),
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${GROUP_SCHEMA}` },
    },
  ];
}

export function listResponse(resources: Json[], extra: Json = {}): Json {
  return {
    schemas: [LIST_RESPONSE],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    ...extra,
    Resources: resources,
  };
}
