// The wire shapes of OpenID AuthZEN Authorization API 1.0 as Tessera serves it. AuthZEN asks
// receivers to ignore members they do not know, so, unlike the rest of the API, these request
// schemas accept unknown members (and drop them); members Tessera reads are checked.

import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { StringEnum } from '../../http/schemas.js';
import { ClientId } from '../applications/applications.schemas.js';
import { EVALUATIONS_SEMANTICS } from './authzen.service.js';

/** An object with any members (AuthZEN's `properties` and `context`). */
const FreeObject = (description: string) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description });

const entity = (kind: string, id: 'required' | 'ignored', examples: object[]) =>
  Type.Object(
    {
      type: Type.String({ description: `The type of the ${kind}.` }),
      ...(id === 'required'
        ? { id: Type.String({ description: `The ${kind}'s id, scoped to its type.` }) }
        : {
            id: Type.Optional(
              Type.String({ description: `Ignored: this search lists the ${kind}s.` }),
            ),
          }),
      properties: Type.Optional(FreeObject(`More attributes of the ${kind}.`)),
    },
    { examples },
  );

const SUBJECT_DESCRIPTION =
  "A user of the application: `type` `user`, `id` `<provider>:<identifier>` or the user's " +
  'id. A subject of another type, or no such user, is denied.';

export const Subject = named(
  'AuthzenSubject',
  Type.Object(
    { ...entity('subject', 'required', []).properties },
    {
      description: SUBJECT_DESCRIPTION,
      examples: [{ type: 'user', id: 'google_oauth2:108234823498234' }],
    },
  ),
);

export const Resource = named(
  'AuthzenResource',
  Type.Object(
    { ...entity('resource', 'required', []).properties },
    {
      description:
        'What the action is taken on. An action open to owners compares a member of ' +
        "`properties` with the user (the application's `authorization`).",
      examples: [{ type: 'todo', id: '7240d0db', properties: { ownerID: 'morty@example.com' } }],
    },
  ),
);

export const Action = named(
  'AuthzenAction',
  Type.Object(
    {
      name: Type.String({
        description: "The action, as the application's `authorization` names it.",
      }),
      properties: Type.Optional(FreeObject('More attributes of the action (not used).')),
    },
    { examples: [{ name: 'can_update_todo' }] },
  ),
);

export const Context = named(
  'AuthzenContext',
  Type.Object(
    {
      client_id: Type.Optional(
        Type.String({
          ...ClientId,
          description:
            'The application the question is about. May be left out when the API key is ' +
            'restricted to exactly one application.',
        }),
      ),
    },
    {
      additionalProperties: true,
      description: 'The environment of the request; Tessera reads `client_id`.',
    },
  ),
);

export const EvaluationBody = named(
  'AuthzenEvaluationRequest',
  Type.Object(
    {
      subject: Subject,
      action: Action,
      resource: Resource,
      context: Type.Optional(Context),
    },
    {
      examples: [
        {
          subject: { type: 'user', id: 'google_oauth2:108234823498234' },
          action: { name: 'can_read_invoices' },
          resource: { type: 'invoice', id: 'inv-1' },
          context: { client_id: 'billing-web' },
        },
      ],
    },
  ),
);
export type EvaluationBody = Static<typeof EvaluationBody>;

/** The most evaluations one request may hold. */
export const MAX_EVALUATIONS = 1000;

export const EvaluationsBody = named(
  'AuthzenEvaluationsRequest',
  Type.Object(
    {
      subject: Type.Optional(Subject),
      action: Type.Optional(Action),
      resource: Type.Optional(Resource),
      context: Type.Optional(Context),
      evaluations: Type.Optional(
        Type.Array(
          Type.Object({
            subject: Type.Optional(Subject),
            action: Type.Optional(Action),
            resource: Type.Optional(Resource),
            context: Type.Optional(Context),
          }),
          {
            maxItems: MAX_EVALUATIONS,
            description:
              'The questions, answered in this order. A member an item leaves out is taken ' +
              'from the top level (a context given in an item replaces the top-level one).',
          },
        ),
      ),
      options: Type.Optional(
        Type.Object({
          evaluations_semantic: Type.Optional(
            StringEnum(EVALUATIONS_SEMANTICS, {
              description:
                '`execute_all` (the default): every decision; `deny_on_first_deny`: up to and ' +
                'including the first deny; `permit_on_first_permit`: up to and including the ' +
                'first permit.',
            }),
          ),
        }),
      ),
    },
    {
      examples: [
        {
          subject: { type: 'user', id: 'google_oauth2:108234823498234' },
          context: { client_id: 'billing-web' },
          options: { evaluations_semantic: 'execute_all' },
          evaluations: [
            { action: { name: 'can_read_invoices' }, resource: { type: 'invoice', id: 'inv-1' } },
            {
              action: { name: 'can_refund_invoice' },
              resource: {
                type: 'invoice',
                id: 'inv-1',
                properties: { customer_email: 'ada@example.com' },
              },
            },
          ],
        },
      ],
    },
  ),
);
export type EvaluationsBody = Static<typeof EvaluationsBody>;

export const Decision = named(
  'AuthzenDecision',
  Type.Object({
    decision: Type.Boolean({ description: 'true: allowed; false: denied.' }),
  }),
);

export const EvaluationsResponse = named(
  'AuthzenEvaluationsResponse',
  Type.Object(
    {
      decision: Type.Optional(
        Type.Boolean({ description: 'Only when the request held no `evaluations`.' }),
      ),
      evaluations: Type.Optional(Type.Array(Decision)),
    },
    {
      description:
        "The decisions in the order of the request's `evaluations`; a request without " +
        '`evaluations` is answered as a single evaluation.',
    },
  ),
);

const PageRequest = Type.Object(
  {
    token: Type.Optional(
      Type.String({ description: 'The `next_token` of the previous page; opaque.' }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'At most this many results (default 100, at most 1000; 0: none, a count).',
      }),
    ),
  },
  {
    description:
      'Paging. A request with a token must repeat the first request exactly (entities and limit).',
  },
);

const searchExample = (members: object) => ({
  ...members,
  context: { client_id: 'billing-web' },
  page: { limit: 50 },
});

export const SubjectSearchBody = named(
  'AuthzenSubjectSearchRequest',
  Type.Object(
    {
      subject: entity('subject', 'ignored', []),
      action: Action,
      resource: Resource,
      context: Type.Optional(Context),
      page: Type.Optional(PageRequest),
    },
    {
      examples: [
        searchExample({
          subject: { type: 'user' },
          action: { name: 'can_read_invoices' },
          resource: { type: 'invoice', id: 'inv-1' },
        }),
      ],
    },
  ),
);
export type SubjectSearchBody = Static<typeof SubjectSearchBody>;

export const ResourceSearchBody = named(
  'AuthzenResourceSearchRequest',
  Type.Object(
    {
      subject: Subject,
      action: Action,
      resource: entity('resource', 'ignored', []),
      context: Type.Optional(Context),
      page: Type.Optional(PageRequest),
    },
    {
      examples: [
        searchExample({
          subject: { type: 'user', id: 'google_oauth2:108234823498234' },
          action: { name: 'can_read_invoices' },
          resource: { type: 'user' },
        }),
      ],
    },
  ),
);
export type ResourceSearchBody = Static<typeof ResourceSearchBody>;

export const ActionSearchBody = named(
  'AuthzenActionSearchRequest',
  Type.Object(
    {
      subject: Subject,
      resource: Resource,
      context: Type.Optional(Context),
      page: Type.Optional(PageRequest),
    },
    {
      examples: [
        searchExample({
          subject: { type: 'user', id: 'google_oauth2:108234823498234' },
          resource: { type: 'invoice', id: 'inv-1' },
        }),
      ],
    },
  ),
);
export type ActionSearchBody = Static<typeof ActionSearchBody>;

const PageResponse = Type.Object({
  next_token: Type.String({
    description: 'Send as `page.token` for the next page; the empty string: this is the last.',
  }),
  count: Type.Integer({ description: 'How many results this page holds.' }),
});

const searchResponse = (name: string, result: ReturnType<typeof Type.Object>) =>
  named(name, Type.Object({ page: PageResponse, results: Type.Array(result) }));

export const EntitySearchResponse = searchResponse(
  'AuthzenEntitySearchResponse',
  Type.Object({ type: Type.String(), id: Type.String() }),
);

export const ActionSearchResponse = searchResponse(
  'AuthzenActionSearchResponse',
  Type.Object({ name: Type.String() }),
);

export const PdpMetadata = named(
  'AuthzenPdpMetadata',
  Type.Object({
    policy_decision_point: Type.String({ description: 'This Tessera (IAM_ISSUER).' }),
    access_evaluation_endpoint: Type.String(),
    access_evaluations_endpoint: Type.String(),
    search_subject_endpoint: Type.String(),
    search_resource_endpoint: Type.String(),
    search_action_endpoint: Type.String(),
  }),
);
