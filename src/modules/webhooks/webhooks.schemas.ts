import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import {
  Nullable,
  Page,
  PageQueryProperties,
  ReadOnlyEcho,
  StringEnum,
  Timestamp,
  toTimestamp,
} from '../../http/schemas.js';
import { RULE_KEYWORD } from '../../http/validation.js';
import type { DeliveryRecord, WebhookRecord } from '../../store/store.js';
import { ClientId, Description } from '../applications/applications.schemas.js';

export const WebhookUrl = Type.String({
  format: 'http-url',
  maxLength: 2048,
  description:
    'Where events are POSTed: https:, on a public address (http: and private addresses only ' +
    'with IAM_ALLOW_INSECURE_WEBHOOKS=true).',
  examples: ['https://hooks.example.com/tessera'],
});

export const EventTypePattern = Type.String({
  pattern: '^(\\*|[a-z_]{1,32}\\.(\\*|[a-z_]{1,32}))$',
  [RULE_KEYWORD]: 'an event type (user.created), a family (user.*) or *',
  examples: ['user.*', 'application.trust_changed'],
});

const EventTypes = Type.Array(EventTypePattern, {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'The event types delivered: exact types, `<family>.*`, or `*` for all.',
});

const ClientIds = Nullable(
  Type.Array(ClientId, {
    minItems: 1,
    maxItems: 1000,
    uniqueItems: true,
    description:
      'Only events of these applications; null: every event (including those of no ' +
      'application, such as API keys). A restricted API key must name some of its own.',
  }),
);

export const CreateWebhookBody = named(
  'WebhookCreate',
  Type.Object(
    {
      url: WebhookUrl,
      event_types: EventTypes,
      client_ids: Type.Optional(ClientIds),
      description: Type.Optional(Description),
      enabled: Type.Optional(Type.Boolean({ default: true })),
    },
    {
      additionalProperties: false,
      examples: [
        {
          url: 'https://hooks.example.com/tessera',
          event_types: ['user.*'],
          client_ids: ['billing-web'],
          description: 'User changes for the billing back end',
        },
      ],
    },
  ),
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = named(
  'WebhookPatch',
  Type.Object(
    {
      url: Type.Optional(WebhookUrl),
      event_types: Type.Optional(EventTypes),
      client_ids: Type.Optional(ClientIds),
      description: Type.Optional(Nullable(Description)),
      enabled: Type.Optional(Nullable(Type.Boolean())),
      id: Type.Optional(ReadOnlyEcho),
      disabled_reason: Type.Optional(ReadOnlyEcho),
      previous_secret_expires_at: Type.Optional(ReadOnlyEcho),
      created_at: Type.Optional(ReadOnlyEcho),
      updated_at: Type.Optional(ReadOnlyEcho),
    },
    {
      additionalProperties: false,
      description:
        'JSON Merge Patch (RFC 7396): `null` resets client_ids (every application), description ' +
        "('') and enabled (true). Enabling a webhook that its receiver disabled (410) resumes " +
        'delivery with the event that was refused.',
      examples: [{ description: 'User changes, billing', enabled: true }],
    },
  ),
);
export type PatchWebhookBody = Static<typeof PatchWebhookBody>;

const webhookProperties = {
  id: Type.String(),
  url: Type.String(),
  event_types: Type.Array(Type.String()),
  client_ids: Nullable(Type.Array(Type.String())),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(
    Type.String({
      description: '`gone` when Tessera disabled the webhook because its receiver answered 410.',
    }),
  ),
  previous_secret_expires_at: Nullable(
    Type.String({
      format: 'date-time',
      description: 'Until when the secret replaced by the last rotation still signs, or null.',
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const Webhook = named('Webhook', Type.Object(webhookProperties));
export type Webhook = Static<typeof Webhook>;

export const WebhookWithSecret = named(
  'WebhookWithSecret',
  Type.Object({
    ...webhookProperties,
    secret: Type.String({
      description:
        'The signing secret, `whsec_` + 256 random bits in base64 (Standard Webhooks). Shown ' +
        'only in this response.',
    }),
  }),
);

export const WebhookParams = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9._~-]*$',
      [RULE_KEYWORD]: '1–64 characters of A–Z a–z 0–9 . _ ~ -',
      description: 'The `id` the webhook was created with.',
      examples: ['3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00'],
    }),
  },
  { additionalProperties: false },
);

export const WebhookPage = Page(Webhook);

export const WebhookListQuery = Type.Object(PageQueryProperties, { additionalProperties: false });

export const ReplayBody = named(
  'WebhookReplay',
  Type.Object(
    {
      after: Nullable(
        Type.String({
          pattern: '^[0-9]{1,32}$',
          [RULE_KEYWORD]: 'an event id (digits)',
          description:
            'Deliver again every matching event after this one; null: from the oldest kept.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ after: null }] },
  ),
);

export const ReplayResult = named(
  'WebhookReplayResult',
  Type.Object({
    webhook_id: Type.String(),
    after: Nullable(Type.String()),
  }),
);

export const DeliveryStatusSchema = StringEnum(['pending', 'delivered', 'failed'] as const);

export const DeliveryListQuery = Type.Object(
  { ...PageQueryProperties, status: Type.Optional(DeliveryStatusSchema) },
  { additionalProperties: false },
);

export const Delivery = named(
  'WebhookDelivery',
  Type.Object({
    event_id: Type.String(),
    event_type: Type.String(),
    status: DeliveryStatusSchema,
    attempts: Type.Integer(),
    first_attempt_at: Timestamp,
    last_attempt_at: Timestamp,
    next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
    last_status_code: Nullable(Type.Integer()),
    log: Type.Array(
      Type.Object({
        at: Timestamp,
        status_code: Nullable(Type.Integer({ description: 'The answer, or null when none came.' })),
        error: Nullable(Type.String()),
        duration_ms: Type.Integer(),
      }),
      { description: 'The latest attempts, oldest first.' },
    ),
  }),
);
export type Delivery = Static<typeof Delivery>;

export const DeliveryPage = Page(Delivery);

export function toWebhookResource(webhook: WebhookRecord): Webhook {
  return {
    id: webhook.id,
    url: webhook.url,
    event_types: webhook.eventTypes,
    client_ids: webhook.clientIds,
    description: webhook.description,
    enabled: webhook.enabled,
    disabled_reason: webhook.disabledReason,
    previous_secret_expires_at:
      webhook.previousSecretExpiresAt === null
        ? null
        : toTimestamp(webhook.previousSecretExpiresAt),
    created_at: toTimestamp(webhook.createdAt),
    updated_at: toTimestamp(webhook.updatedAt),
  };
}

export function toDeliveryResource(delivery: DeliveryRecord): Delivery {
  return {
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    first_attempt_at: toTimestamp(delivery.firstAttemptAt),
    last_attempt_at: toTimestamp(delivery.lastAttemptAt),
    next_attempt_at: delivery.nextAttemptAt === null ? null : toTimestamp(delivery.nextAttemptAt),
    last_status_code: delivery.log.at(-1)?.statusCode ?? null,
    log: delivery.log.map((attempt) => ({
      at: toTimestamp(attempt.at),
      status_code: attempt.statusCode,
      error: attempt.error,
      duration_ms: attempt.durationMs,
    })),
  };
}
