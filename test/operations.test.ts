// tessera-test: both-stores
// The endpoints operators and tooling use: health, readiness, metrics, the OpenAPI document
// and the interactive reference.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildTestApp, useTestApp, call, createApplication, problemOf } from './helpers.js';

describe('operational endpoints', () => {
  const ctx = useTestApp({}, async () => {
    await createApplication(ctx);
  });

  it('GET / sends a browser to the admin console', async () => {
    const response = await call(ctx, 'GET', '//', { key: null });
    assert.equal(response.statusCode, 302);
    assert.equal(response.headers.location, '/console');
  });

  it('GET /healthz answers 200 without a key', async () => {
    const response = await call(ctx, 'GET', '//healthz', { key: null });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'ok' });
  });

  it('GET /readyz answers 200 while the store answers', async () => {
    const response = await call(ctx, 'GET', '//readyz', { key: null });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'ready' });
  });

  describe('GET /metrics', () => {
    it('exposes request counts and latency by route pattern and status', async () => {
      await call(ctx, 'GET', '/applications/billing-web');
      await call(ctx, 'GET', '/applications/some-missing-app');
      await call(ctx, 'GET', '/applications', { key: null });
      const response = await call(ctx, 'GET', '//metrics', { key: null });
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['content-type']), /^text\/plain/);
      const text = response.body;
      assert.match(
        text,
        /tessera_http_requests_total\{method="GET",route="\/iam\/api\/v1\/applications\/:client_id",status="200"\} 1/,
      );
      assert.match(
        text,
        /tessera_http_requests_total\{method="GET",route="\/iam\/api\/v1\/applications\/:client_id",status="404"\} 1/,
      );
      assert.match(
        text,
        /tessera_http_requests_total\{method="GET",route="\/iam\/api\/v1\/applications",status="401"\} 1/,
      );
      assert.match(
        text,
        /tessera_http_request_duration_seconds_bucket\{le="0.005",method="GET",route=/,
      );
      // The standard names, so stock Node.js dashboards work.
      assert.match(text, /^process_resident_memory_bytes \d/m);
      assert.match(text, /^nodejs_eventloop_lag_seconds /m);
      assert.doesNotMatch(text, /tessera_process_|tessera_nodejs_/);
      assert.doesNotMatch(text, /some-missing-app/, 'raw URLs never become labels');
    });
  });

  describe('GET /openapi.json', () => {
    /** A schema, or the component its $ref names. */
    const resolve = (
      document: ReturnType<typeof JSON.parse>,
      schema: ReturnType<typeof JSON.parse>,
    ) =>
      schema.$ref === undefined
        ? schema
        : document.components.schemas[String(schema.$ref).replace('#/components/schemas/', '')];

    it('is an OpenAPI 3.1 document covering every API route', async () => {
      const response = await call(ctx, 'GET', '//openapi.json', { key: null });
      assert.equal(response.statusCode, 200);
      const document = response.json();
      assert.equal(document.openapi, '3.1.0');
      const operations = Object.entries(
        document.paths as Record<string, Record<string, unknown>>,
      ).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      );
      for (const expected of [
        'POST /iam/api/v1/applications',
        'GET /iam/api/v1/applications',
        'GET /iam/api/v1/applications/{client_id}',
        'PUT /iam/api/v1/applications/{client_id}',
        'PATCH /iam/api/v1/applications/{client_id}',
        'DELETE /iam/api/v1/applications/{client_id}',
        'POST /iam/api/v1/applications/{client_id}/users',
        'GET /iam/api/v1/applications/{client_id}/users',
        'GET /iam/api/v1/applications/{client_id}/users/{provider}/{identifier}',
        'PUT /iam/api/v1/applications/{client_id}/users/{provider}/{identifier}',
        'PATCH /iam/api/v1/applications/{client_id}/users/{provider}/{identifier}',
        'DELETE /iam/api/v1/applications/{client_id}/users/{provider}/{identifier}',
        'POST /iam/api/v1/api-keys',
        'GET /iam/api/v1/api-keys',
        'GET /iam/api/v1/api-keys/{id}',
        'DELETE /iam/api/v1/api-keys/{id}',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
      ]) {
        assert.ok(operations.includes(expected), `${expected} is documented`);
      }
      assert.equal(document.components.securitySchemes.apiKey.type, 'apiKey');
    });

    it('is valid against the OpenAPI 3.1 schema', async () => {
      const document = (await call(ctx, 'GET', '//openapi.json', { key: null })).json();
      const result = await new Validator().validate(document);
      assert.deepEqual(result.errors ?? [], []);
      assert.equal(result.valid, true);
      assert.doesNotMatch(
        JSON.stringify(document),
        /\\\\p\{/,
        'patterns avoid \\p{…}, which non-JS tools cannot read',
      );
    });

    it('documents PATCH as JSON Merge Patch and the headers responses carry', async () => {
      const document = (await call(ctx, 'GET', '//openapi.json', { key: null })).json();
      const patch = document.paths['/iam/api/v1/applications/{client_id}'].patch;
      assert.ok(patch.requestBody.content['application/merge-patch+json']);
      assert.deepEqual(
        resolve(document, patch.requestBody.content['application/merge-patch+json'].schema)
          .properties.display_name.type,
        'string',
        'members without a default are not documented as nullable',
      );
      const create = document.paths['/iam/api/v1/applications'].post;
      assert.deepEqual(Object.keys(create.responses['201'].headers).sort(), ['etag', 'location']);
      assert.ok(create.responses['401'].headers['www-authenticate']);
      assert.ok(create.responses['429'].headers['retry-after']);
      const list = document.paths['/iam/api/v1/applications'].get;
      assert.ok(list.responses['200'].headers.link);
    });

    it('documents the same schemas that validate requests', async () => {
      const document = (await call(ctx, 'GET', '//openapi.json', { key: null })).json();
      const create = document.paths['/iam/api/v1/applications'].post;
      const schema = resolve(document, create.requestBody.content['application/json'].schema);
      assert.equal(schema.additionalProperties, false);
      assert.deepEqual([...schema.required].sort(), ['client_id', 'description', 'display_name']);
      assert.equal(schema.properties.client_id.maxLength, 128);
      assert.equal(schema.properties.jwt_expiration_in_minutes.maximum, 43200);
      assert.ok(create.responses['409'].content['application/problem+json']);
      assert.deepEqual(create.security, [{ apiKey: [] }]);
    });
  });

  it('GET /docs serves the interactive reference from the service itself (no CDN)', async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const externalAssets = page.body.match(/(?:src|href)="(https?:)?\/\/[^"]+"/g) ?? [];
    assert.deepEqual(externalAssets, []);
    const script = page.body.match(/src="([^"]+\.js)"/)?.[1];
    assert.ok(script, 'the page loads a script');
    const asset = await ctx.app.inject({
      method: 'GET',
      url: new URL(script, 'http://x/docs/').pathname,
    });
    assert.equal(asset.statusCode, 200);
  });

  it('GET /docs sends a strict Content-Security-Policy, X-Frame-Options and Referrer-Policy', async () => {
    for (const url of ['/docs/', '/docs/json', '/docs/static/swagger-initializer.js']) {
      const response = await ctx.app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.headers['x-frame-options'], 'DENY', url);
      assert.equal(response.headers['referrer-policy'], 'no-referrer', url);
      const policy = String(response.headers['content-security-policy']);
      for (const directive of [
        "default-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "script-src 'self'",
      ]) {
        assert.ok(policy.includes(directive), `${url}: ${directive} in ${policy}`);
      }
      assert.doesNotMatch(policy, /https:|unsafe-inline|unsafe-eval|\*/, url);
    }
  });
});

describe('GET /readyz when the store is gone', () => {
  it('answers 503 with a problem body', async () => {
    const ctx = await buildTestApp();
    await ctx.store.close();
    const response = await call(ctx, 'GET', '//readyz', { key: null });
    problemOf(response, 503);
    assert.equal(response.headers['retry-after'], '2');
    await ctx.app.close();
  });
});
