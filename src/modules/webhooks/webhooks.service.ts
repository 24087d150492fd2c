// Webhooks: where events are pushed, and how. The service keeps their configuration and
// secrets; delivery itself is the dispatcher's (webhook-dispatcher.ts), which this service
// wakes after every change that gives it work.

import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { invalid, problem } from '../../problems.js';
import { DuplicateError } from '../../store/errors.js';
import type {
  DeliveryFilter,
  DeliveryRecord,
  NewEvent,
  Store,
  WebhookFilter,
  WebhookHealth,
  WebhookRecord,
} from '../../store/store.js';
import type { KeyCaller } from '../api-keys/api-keys.service.js';
import { type ChangeOrigin, type Snapshot, changeEvent } from '../changes.js';
import {
  KeyedQueue,
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import { type OutboundPolicy, refuseTarget } from '../outbound-fence.js';
import { type SealedSecrets, webhookSecretContext } from '../secret-key/secret-key.service.js';

/** The Standard Webhooks secret prefix; the rest is the base64 of the HMAC key. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;

export interface NewWebhook {
  url: string;
  eventTypes: string[];
  clientIds: string[] | null;
  description: string;
  enabled: boolean;
}

export interface WebhookChange {
  url?: string;
  eventTypes?: string[];
  /** null: every application. */
  clientIds?: string[] | null;
  description?: string | null;
  enabled?: boolean | null;
}

export interface WebhookWithSecret {
  record: WebhookRecord;
  /** The secret in clear: exists only in this answer. */
  secret: string;
}

/** 256 random bits, Standard Webhooks form (whsec_ + base64). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

export class WebhooksService {
  readonly #writes = new KeyedQueue();

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      policy: OutboundPolicy;
      /** Seals webhook secrets at rest (IAM_SECRET_KEY); without it, they are stored in clear. */
      secrets: SealedSecrets;
      /** Told after every change that may give the dispatcher work. */
      onChange?: () => void;
    },
  ) {}

  async createWebhook(
    caller: KeyCaller,
    input: NewWebhook,
    origin: ChangeOrigin,
  ): Promise<WebhookWithSecret> {
    assertClientIdsWithinCaller(caller, input.clientIds);
    this.assertUrlAllowed(input.url);
    const now = this.deps.clock.now();
    const id = randomUUID();
    const secret = generateWebhookSecret();
    const sealed = await this.deps.secrets.seal(secret, webhookSecretContext(id));
    const record: WebhookRecord = {
      id,
      url: input.url,
      eventTypes: input.eventTypes,
      clientIds: input.clientIds,
      description: input.description,
      enabled: input.enabled,
      disabledReason: null,
      secret: sealed,
      previousSecret: null,
      previousSecretExpiresAt: null,
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    try {
      // Deliveries start with the events that follow the webhook's creation.
      await this.deps.store.webhooks.insertWebhook(record, await this.lastEventId(), [
        webhookEvent('webhook.created', origin, now, null, record),
      ]);
    } catch (error) {
      if (error instanceof DuplicateError) throw problem('conflict', 'Retry: the id was taken.');
      throw error;
    }
    this.deps.onChange?.();
    return { record, secret };
  }

  async findWebhook(caller: KeyCaller, id: string): Promise<WebhookRecord> {
    const webhook = await this.deps.store.webhooks.findWebhook(id);
    // A webhook outside a restricted caller's applications does not exist for it.
    if (webhook === undefined || !isVisibleTo(caller, webhook)) throw webhookNotFound(id);
    return webhook;
  }

  listWebhooks(caller: KeyCaller, after: string | null, limit: number): Promise<WebhookRecord[]> {
    return this.deps.store.webhooks.listWebhooks(filterFor(caller), { after, limit });
  }

  countWebhooks(caller: KeyCaller): Promise<number> {
    return this.deps.store.webhooks.countWebhooks(filterFor(caller));
  }

  patchWebhook(
    caller: KeyCaller,
    id: string,
    change: WebhookChange,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<WebhookRecord> {
    if (change.clientIds !== undefined) assertClientIdsWithinCaller(caller, change.clientIds);
    if (change.url !== undefined) this.assertUrlAllowed(change.url);
    return this.update(caller, id, condition, origin, (current) => {
      const enabled = change.enabled === undefined ? current.enabled : (change.enabled ?? true);
      const next: WebhookRecord = {
        ...current,
        url: change.url ?? current.url,
        eventTypes: change.eventTypes ?? current.eventTypes,
        clientIds: change.clientIds === undefined ? current.clientIds : change.clientIds,
        description:
          change.description === undefined ? current.description : (change.description ?? ''),
        enabled,
        // Enabled again by an operator: whatever made Tessera disable it is over.
        disabledReason: enabled ? null : current.disabledReason,
      };
      return sameConfiguration(current, next) ? null : next;
    });
  }

  /** A new secret; the current one keeps signing beside it for SECRET_OVERLAP_MS. */
  async rotateSecret(
    caller: KeyCaller,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<WebhookWithSecret> {
    const secret = generateWebhookSecret();
    const sealed = await this.deps.secrets.seal(secret, webhookSecretContext(id));
    const record = await this.update(caller, id, condition, origin, (current) => ({
      ...current,
      secret: sealed,
      previousSecret: current.secret,
      previousSecretExpiresAt: this.deps.clock.now() + SECRET_OVERLAP_MS,
    }));
    return { record, secret };
  }

  deleteWebhook(
    caller: KeyCaller,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    return this.#writes.run(id, () =>
      deleteConditionally({
        load: () => this.findVisible(caller, id),
        notFound: () => webhookNotFound(id),
        condition,
        remove: (current) =>
          this.deps.store.webhooks.deleteWebhook(id, current.etag, [
            webhookEvent('webhook.deleted', origin, this.deps.clock.now(), current, null),
          ]),
      }).then(() => this.deps.onChange?.()),
    );
  }

  /** Delivers again every matching event after `after` (null: every event kept). */
  async replay(caller: KeyCaller, id: string, after: string | null): Promise<void> {
    await this.findWebhook(caller, id);
    if (!(await this.deps.store.webhooks.replayWebhook(id, after))) throw webhookNotFound(id);
    this.deps.onChange?.();
  }

  async listDeliveries(
    caller: KeyCaller,
    filter: DeliveryFilter,
    before: string | null,
    limit: number,
  ): Promise<DeliveryRecord[]> {
    await this.findWebhook(caller, filter.webhookId);
    return this.deps.store.webhooks.listDeliveries(filter, { after: before, limit });
  }

  /** How the webhook's deliveries are going: its latest attempt, failing since when, backlog. */
  async findWebhookHealth(caller: KeyCaller, id: string): Promise<WebhookHealth> {
    await this.findWebhook(caller, id);
    const health = await this.deps.store.webhooks.findWebhookHealth(id);
    if (health === undefined) throw webhookNotFound(id);
    return health;
  }

  countDeliveries(filter: DeliveryFilter): Promise<number> {
    return this.deps.store.webhooks.countDeliveries(filter);
  }

  /** The secrets that sign a delivery now, in clear: the current one, and a rotated-out one in its overlap. */
  signingSecrets(webhook: WebhookRecord): string[] {
    // The overlap was set by this service's clock: compared with the same clock.
    const now = this.deps.clock.now();
    const secrets = [this.deps.secrets.open(webhook.secret, webhookSecretContext(webhook.id))];
    if (
      webhook.previousSecret !== null &&
      webhook.previousSecretExpiresAt !== null &&
      webhook.previousSecretExpiresAt > now
    ) {
      secrets.push(
        this.deps.secrets.open(webhook.previousSecret, webhookSecretContext(webhook.id)),
      );
    }
    return secrets;
  }

  private async findVisible(caller: KeyCaller, id: string): Promise<WebhookRecord | undefined> {
    const webhook = await this.deps.store.webhooks.findWebhook(id);
    return webhook !== undefined && isVisibleTo(caller, webhook) ? webhook : undefined;
  }

  private async update(
    caller: KeyCaller,
    id: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    change: (current: WebhookRecord) => WebhookRecord | null,
  ): Promise<WebhookRecord> {
    // The version each attempt read: the event shows what changed since then.
    let before: WebhookRecord | null = null;
    const record = await this.#writes.run(id, () =>
      updateConditionally({
        load: () => this.findVisible(caller, id),
        notFound: () => webhookNotFound(id),
        condition,
        change: (current) => {
          before = current;
          const next = change(current);
          return next === null
            ? null
            : { ...next, updatedAt: this.deps.clock.now(), etag: newVersion() };
        },
        save: (next, expected) =>
          this.deps.store.webhooks.replaceWebhook(next, expected, [
            webhookEvent('webhook.updated', origin, next.updatedAt, before, next),
          ]),
      }),
    );
    this.deps.onChange?.();
    return record;
  }

  private lastEventId(): Promise<string | null> {
    return this.deps.store.events.lastEventId();
  }

  private assertUrlAllowed(url: string): void {
    const refusal = refuseTarget(new URL(url), this.deps.policy, 'url');
    if (refusal !== null) throw invalid([{ pointer: '/url', detail: refusal }]);
  }
}

/** What an event shows of a webhook: never its secrets. */
export function webhookSnapshot(webhook: WebhookRecord): Snapshot {
  return {
    url: webhook.url,
    event_types: webhook.eventTypes,
    client_ids: webhook.clientIds,
    description: webhook.description,
    enabled: webhook.enabled,
    disabled_reason: webhook.disabledReason,
    previous_secret_expires_at:
      webhook.previousSecretExpiresAt === null
        ? null
        : new Date(webhook.previousSecretExpiresAt).toISOString(),
  };
}

/** webhook.created, webhook.updated or webhook.deleted. */
export function webhookEvent(
  type: 'webhook.created' | 'webhook.updated' | 'webhook.deleted',
  origin: ChangeOrigin,
  occurredAt: number,
  before: WebhookRecord | null,
  after: WebhookRecord | null,
): NewEvent {
  return changeEvent({
    type,
    origin,
    occurredAt,
    clientId: null,
    resource: { type: 'webhook', id: { id: (after ?? before)!.id } },
    before: before && webhookSnapshot(before),
    after: after && webhookSnapshot(after),
  });
}

export function webhookNotFound(id: string) {
  return problem('not-found', `No webhook with id "${id}".`);
}

function filterFor(caller: KeyCaller): WebhookFilter {
  return { visibleClientIds: caller === 'operator' ? null : caller.applications };
}

function isVisibleTo(caller: KeyCaller, webhook: WebhookRecord): boolean {
  if (caller === 'operator' || caller.applications === null) return true;
  const allowed = caller.applications;
  return webhook.clientIds !== null && webhook.clientIds.every((id) => allowed.includes(id));
}

/**
 * A restricted key may push only its own applications' events: a webhook it manages names
 * some of them. Checked before any lookup.
 */
function assertClientIdsWithinCaller(caller: KeyCaller, clientIds: string[] | null): void {
  if (caller === 'operator' || caller.applications === null) return;
  const allowed = caller.applications;
  if (clientIds === null) {
    throw problem(
      'forbidden',
      'This API key is restricted to some applications; its webhooks must name them in client_ids.',
    );
  }
  const outside = clientIds.filter((id) => !allowed.includes(id));
  if (outside.length > 0) {
    throw problem('forbidden', 'This API key is restricted to other applications.');
  }
}

function sameConfiguration(current: WebhookRecord, next: WebhookRecord): boolean {
  return (
    current.url === next.url &&
    JSON.stringify(current.eventTypes) === JSON.stringify(next.eventTypes) &&
    JSON.stringify(current.clientIds) === JSON.stringify(next.clientIds) &&
    current.description === next.description &&
    current.enabled === next.enabled &&
    current.disabledReason === next.disabledReason
  );
}
