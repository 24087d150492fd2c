// OpenID AuthZEN Authorization API 1.0 over HTTPS: the evaluation, evaluations and
// search endpoints under /access/v1, and the PDP metadata at /.well-known/authzen-configuration.
// This edge turns AuthZEN's requests into the service's questions: the defaults of a batch,
// the application each question is about (checked against the key's restriction before any
// lookup), page tokens bound to the search they came from, and the caller's X-Request-ID
// echoed exactly. A deny is an answer (200 {"decision": false}); errors are problem documents.

import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { allowedApplications, assertApplicationAllowed } from '../../http/auth.js';
import type { CursorCodec } from '../../http/pagination.js';
import {
  DEFAULT_PAGE_SIZE,
  JsonResponse,
  noSecurity,
  problemResponses,
  unreadableRequestResponse,
} from '../../http/schemas.js';
import { type InvalidParam, invalid } from '../../problems.js';
import type { UserPosition, UserRecord } from '../../store/store.js';
import {
  ActionSearchBody,
  ActionSearchResponse,
  Decision,
  EntitySearchResponse,
  EvaluationBody,
  EvaluationsBody,
  EvaluationsResponse,
  PdpMetadata,
  ResourceSearchBody,
  SubjectSearchBody,
} from './authzen.schemas.js';
import {
  type AuthzenService,
  type EvaluationInput,
  type SearchPage,
  USER_SUBJECT,
} from './authzen.service.js';
import { BODY_LIMITS } from '../../http/body-limits.js';

export const AUTHZEN_METADATA_PATH = '/.well-known/authzen-configuration';

/** The endpoints at their default paths (AuthZEN's table of API endpoints). */
const ENDPOINTS = {
  evaluation: '/access/v1/evaluation',
  evaluations: '/access/v1/evaluations',
  subjectSearch: '/access/v1/search/subject',
  resourceSearch: '/access/v1/search/resource',
  actionSearch: '/access/v1/search/action',
} as const;

const tags = ['authorization'];
/** AuthZEN's PEPs send OAuth-style `Bearer <KEY>`; Tessera's own `apikey <KEY>` works too. */
const security: { [scheme: string]: string[] }[] = [{ bearerApiKey: [] }, { apiKey: [] }];
const MAX_PAGE_SIZE = 1000;
const METADATA_CACHE = 'public, max-age=300';
/** What a header value may hold (RFC 9110 field-value, as Node writes it). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

type Context = { client_id?: string } | undefined;

/**
 * The application a question is about: `context.client_id`, or the key's only application.
 * 403 for one outside the key's restriction, before anything is looked up; a field error
 * when neither names one.
 */
function applicationOf(
  request: FastifyRequest,
  context: Context,
  contextPointer: string,
  errors: InvalidParam[],
): string {
  const named = context?.client_id;
  if (named !== undefined) {
    assertApplicationAllowed(request, named);
    return named;
  }
  const allowed = allowedApplications(request);
  if (allowed !== null && allowed.length === 1) return allowed[0]!;
  errors.push({
    pointer: `${contextPointer}/client_id`,
    detail:
      allowed === null
        ? 'is required: this API key may act on every application, so name one'
        : 'is required: this API key may act on several applications, so name one',
  });
  return '';
}

function questionOf(
  clientId: string,
  entities: Pick<EvaluationBody, 'subject' | 'action' | 'resource'>,
): EvaluationInput {
  return {
    clientId,
    subject: entities.subject,
    action: entities.action.name,
    resource: entities.resource,
  };
}

/** JSON with every object's members in one order: equal documents, equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const members = Object.keys(value)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A search as its page tokens are bound to it: the search, the application, every entity and the limit. */
function searchScope(search: string, clientId: string, body: object, limit: number): string {
  const { page: _page, ...entities } = body as { page?: unknown };
  const digest = createHash('sha256').update(canonicalJson(entities)).digest('base64url');
  return JSON.stringify(['authzen', search, clientId, limit, digest]);
}

function invalidToken() {
  return invalid([
    {
      pointer: '/page/token',
      detail: 'is not a token of this search (the request changed since, or the token was altered)',
    },
  ]);
}

interface Paging<Position> {
  after: Position | null;
  limit: number;
  /** The next_token of a page: empty at the end. */
  tokenOf: (page: SearchPage<unknown, Position>) => string;
}

function pagingOf<Position>(
  cursors: CursorCodec,
  scope: string,
  token: string | undefined,
  toPosition: (decoded: unknown) => Position | undefined,
): Omit<Paging<Position>, 'limit'> {
  let after: Position | null = null;
  if (token !== undefined && token !== '') {
    let decoded: unknown;
    try {
      decoded = cursors.decode(scope, token);
    } catch {
      throw invalidToken();
    }
    const position = toPosition(decoded);
    if (position === undefined) throw invalidToken();
    after = position;
  }
  return {
    after,
    tokenOf: (page) => (page.next === null ? '' : cursors.encode(scope, page.next)),
  };
}

function userPosition(decoded: unknown): UserPosition | undefined {
  const position = decoded as Partial<UserPosition> | null;
  return typeof position === 'object' &&
    position !== null &&
    typeof position.provider === 'string' &&
    typeof position.identifier === 'string'
    ? { provider: position.provider, identifier: position.identifier }
    : undefined;
}

function actionPosition(decoded: unknown): string | undefined {
  return typeof decoded === 'string' ? decoded : undefined;
}

function pageLimit(page: { limit?: number } | undefined): number {
  return Math.min(page?.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
}

/** A user as AuthZEN names it in results: the form a question may name it by. */
function userEntity(type: string) {
  return (user: UserRecord) => ({ type, id: `${user.provider}:${user.identifier}` });
}

/** GET /.well-known/authzen-configuration: where each endpoint is (public, like OIDC discovery). */
export function registerAuthzenMetadata(app: FastifyInstance, deps: { issuer: string }): void {
  const base = deps.issuer;
  const metadata = {
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}${ENDPOINTS.evaluation}`,
    access_evaluations_endpoint: `${base}${ENDPOINTS.evaluations}`,
    search_subject_endpoint: `${base}${ENDPOINTS.subjectSearch}`,
    search_resource_endpoint: `${base}${ENDPOINTS.resourceSearch}`,
    search_action_endpoint: `${base}${ENDPOINTS.actionSearch}`,
  };
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    AUTHZEN_METADATA_PATH,
    {
      schema: {
        tags,
        operationId: 'getAuthzenConfiguration',
        summary: 'AuthZEN Policy Decision Point metadata: where each endpoint is',
        security: noSecurity,
        response: {
          200: JsonResponse(PdpMetadata, 'PDP metadata'),
          ...unreadableRequestResponse,
        },
      },
    },
    async function serveAuthzenConfiguration(_request, reply) {
      reply.header('cache-control', METADATA_CACHE);
      return metadata;
    },
  );
}

/** The AuthZEN endpoints, in a scope that authenticates API keys (Bearer or apikey). */
export function registerAuthzenRoutes(
  scope: FastifyInstance,
  deps: { authzen: AuthzenService; cursors: CursorCodec },
): void {
  const api = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { authzen, cursors } = deps;
  const config = { role: 'decisions:read' } as const;
  const errorResponses = problemResponses(403, 413, 415);

  // AuthZEN: a request's identifier comes back as it was sent, whatever it holds (the
  // access log and events keep their own, made safe, in request.id).
  scope.addHook('onSend', function echoRequestId(request, reply, payload, done) {
    const given = request.headers['x-request-id'];
    if (typeof given === 'string' && FIELD_VALUE.test(given)) reply.header('x-request-id', given);
    done(null, payload);
  });

  api.post(
    ENDPOINTS.evaluation,
    {
      bodyLimit: BODY_LIMITS.batch,
      config,
      schema: {
        tags,
        operationId: 'evaluateAccess',
        summary: 'May this user take this action on this resource? (AuthZEN Access Evaluation)',
        security,
        body: EvaluationBody,
        response: { 200: JsonResponse(Decision, 'The decision'), ...errorResponses },
      },
    },
    async function evaluateAccess(request) {
      const { body } = request;
      const errors: InvalidParam[] = [];
      const clientId = applicationOf(request, body.context, '/context', errors);
      if (errors.length > 0) throw invalid(errors);
      const [decision = false] = await authzen.evaluate([questionOf(clientId, body)]);
      return { decision };
    },
  );

  api.post(
    ENDPOINTS.evaluations,
    {
      bodyLimit: BODY_LIMITS.batch,
      config,
      schema: {
        tags,
        operationId: 'evaluateAccessBatch',
        summary: 'Many questions in one request (AuthZEN Access Evaluations)',
        security,
        body: EvaluationsBody,
        response: { 200: JsonResponse(EvaluationsResponse, 'The decisions'), ...errorResponses },
      },
    },
    async function evaluateAccessBatch(request) {
      const { body } = request;
      const items = body.evaluations ?? [];
      const errors: InvalidParam[] = [];
      if (items.length === 0) {
        // Without evaluations, the request is a single evaluation (AuthZEN §7.1).
        for (const member of ['subject', 'action', 'resource'] as const) {
          if (body[member] === undefined)
            errors.push({ pointer: `/${member}`, detail: 'is required' });
        }
        const clientId = applicationOf(request, body.context, '/context', errors);
        if (errors.length > 0) throw invalid(errors);
        const [decision = false] = await authzen.evaluate([
          questionOf(clientId, body as Required<typeof body>),
        ]);
        return { decision };
      }
      const questions: EvaluationInput[] = [];
      // The top-level context's application, found once for the items that leave theirs out.
      let shared: string | undefined;
      const required = (index: number, member: string) =>
        errors.push({
          pointer: `/evaluations/${index}/${member}`,
          detail: 'is required, here or at the top level',
        });
      for (let index = 0; index < items.length; index++) {
        const item = items[index]!;
        const subject = item.subject ?? body.subject;
        const action = item.action ?? body.action;
        const resource = item.resource ?? body.resource;
        if (subject === undefined) required(index, 'subject');
        if (action === undefined) required(index, 'action');
        if (resource === undefined) required(index, 'resource');
        const clientId =
          item.context === undefined
            ? (shared ??= applicationOf(request, body.context, '/context', errors))
            : applicationOf(request, item.context, `/evaluations/${index}/context`, errors);
        if (subject !== undefined && action !== undefined && resource !== undefined) {
          questions.push({ clientId, subject, action: action.name, resource });
        }
      }
      if (errors.length > 0) throw invalid(dedupe(errors));
      const decisions = await authzen.evaluate(questions, body.options?.evaluations_semantic);
      return { evaluations: decisions.map((decision) => ({ decision })) };
    },
  );

  api.post(
    ENDPOINTS.subjectSearch,
    {
      bodyLimit: BODY_LIMITS.batch,
      config,
      schema: {
        tags,
        operationId: 'searchSubjects',
        summary: 'The users this action on this resource is allowed to (AuthZEN Subject Search)',
        security,
        body: SubjectSearchBody,
        response: { 200: JsonResponse(EntitySearchResponse, 'A page of users'), ...errorResponses },
      },
    },
    async function searchSubjects(request) {
      const { body } = request;
      const clientId = requiredApplication(request, body.context);
      const limit = pageLimit(body.page);
      const paging = pagingOf(
        cursors,
        searchScope('subject', clientId, body, limit),
        body.page?.token,
        userPosition,
      );
      const page = await authzen.searchSubjects({
        clientId,
        subjectType: body.subject.type,
        action: body.action.name,
        resource: body.resource,
        after: paging.after,
        limit,
      });
      return {
        page: { next_token: paging.tokenOf(page), count: page.items.length },
        results: page.items.map(userEntity(USER_SUBJECT)),
      };
    },
  );

  api.post(
    ENDPOINTS.resourceSearch,
    {
      bodyLimit: BODY_LIMITS.batch,
      config,
      schema: {
        tags,
        operationId: 'searchResources',
        summary:
          "The resources this user may take this action on: of type `user`, the application's users (AuthZEN Resource Search)",
        security,
        body: ResourceSearchBody,
        response: {
          200: JsonResponse(EntitySearchResponse, 'A page of resources'),
          ...errorResponses,
        },
      },
    },
    async function searchResources(request) {
      const { body } = request;
      const clientId = requiredApplication(request, body.context);
      const limit = pageLimit(body.page);
      const paging = pagingOf(
        cursors,
        searchScope('resource', clientId, body, limit),
        body.page?.token,
        userPosition,
      );
      const page = await authzen.searchResources({
        clientId,
        subject: body.subject,
        action: body.action.name,
        resourceType: body.resource.type,
        after: paging.after,
        limit,
      });
      return {
        page: { next_token: paging.tokenOf(page), count: page.items.length },
        results: page.items.map(userEntity(body.resource.type)),
      };
    },
  );

  api.post(
    ENDPOINTS.actionSearch,
    {
      bodyLimit: BODY_LIMITS.batch,
      config,
      schema: {
        tags,
        operationId: 'searchActions',
        summary: 'The actions this user may take on this resource (AuthZEN Action Search)',
        security,
        body: ActionSearchBody,
        response: {
          200: JsonResponse(ActionSearchResponse, 'A page of actions'),
          ...errorResponses,
        },
      },
    },
    async function searchActions(request) {
      const { body } = request;
      const clientId = requiredApplication(request, body.context);
      const limit = pageLimit(body.page);
      const paging = pagingOf(
        cursors,
        searchScope('action', clientId, body, limit),
        body.page?.token,
        actionPosition,
      );
      const page = await authzen.searchActions({
        clientId,
        subject: body.subject,
        resource: body.resource,
        after: paging.after,
        limit,
      });
      return {
        page: { next_token: paging.tokenOf(page), count: page.items.length },
        results: page.items.map((name) => ({ name })),
      };
    },
  );
}

/** The application of a search, or 400 (or 403) before anything is looked up. */
function requiredApplication(request: FastifyRequest, context: Context): string {
  const errors: InvalidParam[] = [];
  const clientId = applicationOf(request, context, '/context', errors);
  if (errors.length > 0) throw invalid(errors);
  return clientId;
}

/** One entry per pointer: items that share the top-level context share its error. */
function dedupe(errors: InvalidParam[]): InvalidParam[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.pointer}\u0000${error.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
