// tessera-test: both-stores
// The OpenAPI document as code generators and Swagger UI read it: named component schemas, an
// operationId on every operation, standard formats, and examples that succeed. The last spec
// does what "Try it out" does: each operation in turn, with nothing but the document's examples
// (server-made ids, which no example can know, are taken from earlier answers).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, type TestContext } from './helpers.js';

/** Parsed JSON, read without ceremony. */
type Json = ReturnType<typeof JSON.parse>;

interface Operation {
  method: string;
  path: string;
  operation: Json;
}

function operationsOf(document: Json): Map<string, Operation> {
  const operations = new Map<string, Operation>();
  for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item as Record<string, Json>)) {
      operations.set(operation.operationId ?? `${method} ${path}`, { method, path, operation });
    }
  }
  return operations;
}

/** Every schema object in the document outside components: what would be inlined. */
function* inlineSchemas(value: unknown, path: string[] = []): Generator<string[]> {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) yield* inlineSchemas(item, [...path, `${index}`]);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'schema' && typeof inner === 'object' && inner !== null) {
      if ((inner as Json).type === 'object') yield [...path, key];
    }
    yield* inlineSchemas(inner, [...path, key]);
  }
}

/** The value Swagger UI fills in: `example`, else the first of the named `examples`. */
function exampleOf(parameter: Json): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const named = Object.values((parameter.examples ?? {}) as Record<string, { value: unknown }>);
  return named[0]?.value;
}

let ctx: TestContext;
let document: Json;

before(async () => {
  ctx = await buildTestApp();
  const response = await ctx.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(response.statusCode, 200);
  document = response.json();
});
after(() => ctx.close());

describe('the OpenAPI document', () => {
  it('names every resource, page, request body and problem in components.schemas', () => {
    const names = Object.keys(document.components.schemas as Json);
    for (const name of [
      'Application',
      'ApplicationPage',
      'ApplicationCreate',
      'ApplicationReplace',
      'ApplicationPatch',
      'User',
      'UserPage',
      'UserCreate',
      'UserReplace',
      'UserPatch',
      'ApiKey',
      'ApiKeyPage',
      'ApiKeyCreate',
      'ApiKeyWithSecret',
      'SigningKey',
      'SigningKeyList',
      'Event',
      'EventPage',
      'Problem',
      'AccessToken',
      'ScimUserRequest',
      'ScimError',
    ]) {
      assert.ok(names.includes(name), `${name} is a component`);
    }
    const create = document.paths['/iam/api/v1/applications'].post;
    assert.deepEqual(create.responses['201'].content['application/json'].schema, {
      $ref: '#/components/schemas/Application',
    });
    assert.deepEqual(create.responses['409'].content['application/problem+json'].schema, {
      $ref: '#/components/schemas/Problem',
    });
    const page = document.components.schemas.UserPage;
    assert.deepEqual(page.properties.items.items, { $ref: '#/components/schemas/User' });
    // No object schema is left inline in an operation: each one is a component.
    assert.deepEqual([...inlineSchemas(document.paths)], []);
  });

  it('says which members the server sets (readOnly), in resources and in request bodies', () => {
    const { Application, User, ApiKeyWithSecret, UserCreate } = document.components.schemas;
    assert.equal(Application.properties.created_at.readOnly, true);
    assert.equal(Application.properties.updated_at.readOnly, true);
    assert.equal(Application.properties.display_name.readOnly, undefined);
    assert.equal(User.properties.id.readOnly, true);
    assert.equal(ApiKeyWithSecret.properties.key.readOnly, true);
    assert.equal(UserCreate.properties.created_at.readOnly, true);
    assert.equal(UserCreate.properties.id.readOnly, true);
  });

  it('uses only standard formats', () => {
    const formats = new Set(
      [...JSON.stringify(document).matchAll(/"format":"([^"]+)"/g)].map((match) => match[1]),
    );
    assert.deepEqual([...formats].sort(), ['date-time', 'email', 'uri']);
    const avatar = document.components.schemas.UserCreate.properties.avatar;
    assert.equal(avatar.format, 'uri');
    assert.match('https://example.com/a.png', new RegExp(avatar.pattern));
    assert.doesNotMatch('mailto:ada@example.com', new RegExp(avatar.pattern));
  });

  it('gives every operation a unique operationId, and every body and path parameter an example', () => {
    const ids: string[] = [];
    for (const [key, { method, path, operation }] of operationsOf(document)) {
      assert.ok(operation.operationId, `${method.toUpperCase()} ${path} has an operationId`);
      ids.push(key);
      for (const media of Object.values(
        (operation.requestBody?.content ?? {}) as Record<string, Json>,
      )) {
        assert.notEqual(media.example, undefined, `${key}: the request body has an example`);
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'path') {
          assert.notEqual(
            exampleOf(parameter),
            undefined,
            `${key}: ${parameter.name} has an example`,
          );
        }
      }
    }
    assert.equal(new Set(ids).size, ids.length);
  });
});

/**
 * The order a person trying the API from /docs would take: create before read, delete last.
 * Every operation of the document is in it (the last spec checks).
 */
const SCENARIO = [
  'getLiveness',
  'getReadiness',
  'getMetrics',
  'getJwks',
  'getOpenIdConfiguration',
  'createApplication',
  'listApplications',
  'getApplication',
  'replaceApplication',
  'patchApplication',
  'createUser',
  'listUsers',
  'getUser',
  'replaceUser',
  'patchUser',
  'importUsers',
  'getImport',
  'listImportErrors',
  'exportUsers',
  'issueUserToken',
  'getAuthzenConfiguration',
  'evaluateAccess',
  'evaluateAccessBatch',
  'searchSubjects',
  'searchResources',
  'searchActions',
  'validateExternalToken',
  'createApiKey',
  'listApiKeys',
  'getApiKey',
  'rotateApiKey',
  'revokeApiKey',
  'rotateSigningKey',
  'listSigningKeys',
  'getSigningKey',
  'revokeSigningKey',
  'listEvents',
  'getScimServiceProviderConfig',
  'listScimResourceTypes',
  'listScimSchemas',
  'getScimResourceType',
  'getScimSchema',
  'createScimUser',
  'listScimUsers',
  'searchScimUsers',
  'searchScim',
  'getScimUser',
  'replaceScimUser',
  'patchScimUser',
  'createScimGroup',
  'listScimGroups',
  'searchScimGroups',
  'getScimGroup',
  'replaceScimGroup',
  'patchScimGroup',
  'createWebhook',
  'listWebhooks',
  'getWebhook',
  'patchWebhook',
  'rotateWebhookSecret',
  'replayWebhook',
  'listWebhookDeliveries',
  'deleteWebhook',
  'deleteScimGroup',
  'deleteScimUser',
  'deleteUser',
  'deleteApplication',
];

/** Operations whose examples cannot succeed anywhere, and why. */
const NEEDS_MORE_THAN_EXAMPLES: Record<string, string> = {
  cancelImport:
    'needs an import job still running (the example one has finished by then); ' +
    'test/imports-cancel.test.ts cancels one mid-file',
  exchangeToken:
    'needs an ID token freshly signed by a provider the application trusts; ' +
    'test/token-exchange.test.ts runs it against a real OpenID provider',
};

/** Server-made ids in path parameters, taken from earlier answers as a person would copy them. */
function serverMadeId(
  operationId: string,
  parameter: string,
  made: Map<string, string>,
): string | undefined {
  if (parameter === 'id' && /ApiKey$/.test(operationId)) return made.get('apiKey');
  if (parameter === 'id' && /ScimUser$/.test(operationId)) return made.get('scimUser');
  if (parameter === 'id' && /ScimGroup$/.test(operationId)) return made.get('scimGroup');
  if (parameter === 'id' && /Webhook(?:Secret|Deliveries)?$/.test(operationId)) {
    return made.get('webhook');
  }
  if (parameter === 'id' && /Imports?(Errors)?$/.test(operationId)) return made.get('import');
  if (parameter === 'kid') return made.get('signingKey');
  return undefined;
}

describe('"Try it out" with the examples of the document', () => {
  it('covers every operation', () => {
    const all = [...operationsOf(document).keys()].sort();
    const planned = [...SCENARIO, ...Object.keys(NEEDS_MORE_THAN_EXAMPLES)].sort();
    assert.deepEqual(all, planned, 'add new operations to SCENARIO, in the order to try them');
  });

  it('succeeds for each operation, in order', async (t) => {
    for (const [operationId, reason] of Object.entries(NEEDS_MORE_THAN_EXAMPLES)) {
      t.diagnostic(`${operationId} not tried here: ${reason}`);
    }
    const operations = operationsOf(document);
    const made = new Map<string, string>();
    for (const operationId of SCENARIO) {
      const { method, path, operation } = operations.get(operationId)!;
      const query = new URLSearchParams();
      const headers: Record<string, string> = {};
      let url = path;
      for (const parameter of (operation.parameters ?? []) as Json[]) {
        const value =
          (parameter.in === 'path' ? serverMadeId(operationId, parameter.name, made) : undefined) ??
          exampleOf(parameter);
        if (value === undefined) continue;
        if (parameter.in === 'path') {
          url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
        } else if (parameter.in === 'query') {
          query.set(parameter.name, String(value));
        } else if (parameter.in === 'header') {
          headers[parameter.name] = String(value);
        }
      }
      const scheme = Object.keys(operation.security?.[0] ?? {})[0];
      if (scheme === 'apiKey') headers.authorization = `apikey ${ctx.adminKey}`;
      if (scheme === 'bearerApiKey') headers.authorization = `Bearer ${ctx.adminKey}`;
      let payload: string | undefined;
      const content = Object.entries(
        (operation.requestBody?.content ?? {}) as Record<string, Json>,
      )[0];
      if (content !== undefined) {
        const [mediaType, media] = content;
        headers['content-type'] = mediaType;
        payload = JSON.stringify(media.example);
      }
      const search = query.size > 0 ? `?${query}` : '';
      const response = await ctx.app.inject({
        method: method.toUpperCase(),
        url: `${url}${search}`,
        headers,
        ...(payload === undefined ? {} : { payload }),
      });
      assert.ok(
        response.statusCode >= 200 && response.statusCode < 300,
        `${operationId}: ${method.toUpperCase()} ${url}${search} answered ` +
          `${response.statusCode} ${response.body.slice(0, 500)}`,
      );
      assert.ok(
        `${response.statusCode}` in operation.responses,
        `${operationId}: ${response.statusCode} is documented`,
      );
      const json = /json/.test(String(response.headers['content-type']));
      const body = json ? response.json() : null;
      if (operationId === 'createApiKey') made.set('apiKey', body.id);
      if (operationId === 'importUsers') made.set('import', body.id);
      if (operationId === 'createScimUser') made.set('scimUser', body.id);
      if (operationId === 'createWebhook') made.set('webhook', body.id);
      if (operationId === 'createScimGroup') made.set('scimGroup', body.id);
      if (operationId === 'listSigningKeys') made.set('signingKey', body.items[0].kid);
    }
  });
});
