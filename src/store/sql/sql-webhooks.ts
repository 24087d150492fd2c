import type { Insertable, Selectable } from 'kysely';
import { ConditionFailedError } from '../errors.js';
import type { NewEvent, PageQuery } from '../store.js';
import type {
  DeliveryAttempt,
  DeliveryFilter,
  DeliveryProgress,
  DeliveryRecord,
  DeliveryStatus,
  WebhookCursor,
  WebhookFilter,
  WebhookRecord,
  WebhookRepository,
  WebhookBacklog,
  WebhookHealth,
  WebhookState,
} from '../webhook-records.js';
import type { SqlExecutor } from './sql-executor.js';
import { parseEventId, toEventRow, toMillis, toOptionalMillis } from './rows.js';
import type { WebhookDeliveriesTable, WebhooksTable } from './tables.js';

// Leases are compare-and-set updates on the webhook's row: "take it when nobody holds an
// unexpired lease". Of two instances racing, the database serialises the two UPDATEs of the
// row and the second finds the lease taken, so exactly one works a webhook at a time; no
// advisory lock, no FOR UPDATE, so the same SQL runs on SQLite, PostgreSQL and its
// distributed cousins. Every write of the holder re-checks the lease and the generation in
// its own transaction, so a holder that lost its lease (or raced a replay) writes nothing.
export class SqlWebhookRepository implements WebhookRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertWebhook(
    webhook: WebhookRecord,
    startAfter: string | null,
    events: readonly NewEvent[],
  ): Promise<void> {
    await this.sql.write(
      [
        this.sql.db
          .insertInto('webhooks')
          .values({
            ...toWebhookRow(webhook),
            cursor: startAfter,
            generation: 0,
            lease_owner: null,
            lease_until: null,
          })
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
  }

  async findWebhook(id: string): Promise<WebhookRecord | undefined> {
    const rows = await this.sql.select(
      this.sql.db.selectFrom('webhooks').selectAll().where('id', '=', id).compile(),
    );
    return rows[0] && toWebhookRecord(rows[0]);
  }

  async listWebhooks(filter: WebhookFilter, page: PageQuery<string>): Promise<WebhookRecord[]> {
    let query = this.sql.db.selectFrom('webhooks').selectAll();
    if (page.after !== null) query = query.where('id', '>', page.after);
    if (filter.visibleClientIds === null) {
      const rows = await this.sql.select(query.orderBy('id').limit(page.limit).compile());
      return rows.map(toWebhookRecord);
    }
    // Visibility depends on a JSON list: filtered here, reading on until the page is full.
    const visible: WebhookRecord[] = [];
    let after = page.after;
    for (;;) {
      let batch = this.sql.db.selectFrom('webhooks').selectAll();
      if (after !== null) batch = batch.where('id', '>', after);
      const rows = await this.sql.select(batch.orderBy('id').limit(500).compile());
      for (const row of rows) {
        const webhook = toWebhookRecord(row);
        if (isVisible(webhook, filter)) visible.push(webhook);
        if (visible.length === page.limit) return visible;
      }
      if (rows.length < 500) return visible;
      after = rows.at(-1)!.id;
    }
  }

  async countWebhooks(filter: WebhookFilter): Promise<number> {
    if (filter.visibleClientIds === null) {
      const [row] = await this.sql.select(
        this.sql.db
          .selectFrom('webhooks')
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .compile(),
      );
      return Number(row?.count ?? 0);
    }
    const all = await this.listWebhooks(filter, { after: null, limit: Number.MAX_SAFE_INTEGER });
    return all.length;
  }

  async replaceWebhook(
    next: WebhookRecord,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const { id, created_at: _createdAt, ...changes } = toWebhookRow(next);
    const [changed] = await this.sql.write(
      [
        this.sql.db
          .updateTable('webhooks')
          .set(changes)
          .where('id', '=', id)
          .where('etag', '=', expectedEtag)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return changed === 1;
  }

  async deleteWebhook(
    id: string,
    expectedEtag: string,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    // webhook_deliveries references webhooks ON DELETE CASCADE: the log goes with it.
    const [changed] = await this.sql.write(
      [
        this.sql.db
          .deleteFrom('webhooks')
          .where('id', '=', id)
          .where('etag', '=', expectedEtag)
          .compile(),
      ],
      { events: events.map(toEventRow) },
    );
    return changed === 1;
  }

  async listWebhookStates(): Promise<WebhookState[]> {
    const rows = await this.sql.select(
      this.sql.db
        .selectFrom('webhooks')
        .select(['id', 'cursor', 'lease_owner', 'lease_until'])
        .where('enabled', '=', 1)
        .orderBy('id')
        .compile(),
    );
    return rows.map((row) => ({
      id: row.id,
      cursor: row.cursor,
      leaseOwner: row.lease_owner,
      leaseUntil: toOptionalMillis(row.lease_until),
    }));
  }

  async claimWebhook(
    id: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<WebhookCursor | undefined> {
    const { db } = this.sql;
    const [claimed] = await this.sql.write([
      db
        .updateTable('webhooks')
        .set({ lease_owner: owner, lease_until: until })
        .where('id', '=', id)
        .where('enabled', '=', 1)
        .where((eb) =>
          eb.or([
            eb('lease_owner', 'is', null),
            eb('lease_owner', '=', owner),
            eb('lease_until', '<', now),
          ]),
        )
        .compile(),
    ]);
    if (claimed !== 1) return undefined;
    const [row] = await this.sql.select(
      db
        .selectFrom('webhooks')
        .select(['cursor', 'generation'])
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .compile(),
    );
    return row && { webhookId: id, cursor: row.cursor, generation: Number(row.generation) };
  }

  async releaseWebhook(id: string, owner: string): Promise<void> {
    await this.sql.write([
      this.sql.db
        .updateTable('webhooks')
        .set({ lease_owner: null, lease_until: null })
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .compile(),
    ]);
  }

  async recordDeliveries(
    id: string,
    owner: string,
    generation: number,
    progress: DeliveryProgress,
  ): Promise<boolean> {
    const { db } = this.sql;
    const set: Partial<Insertable<WebhooksTable>> = { lease_owner: owner };
    if (progress.cursor !== null) set.cursor = progress.cursor;
    if (progress.disable !== undefined) {
      set.enabled = 0;
      set.disabled_reason = progress.disable.reason;
      set.updated_at = progress.disable.at;
      set.etag = progress.disable.etag;
    }
    const statements = [
      db
        .updateTable('webhooks')
        .set(set)
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('generation', '=', generation)
        .compile(),
    ];
    if (progress.deliveries.length > 0) {
      statements.push(
        db
          .insertInto('webhook_deliveries')
          .values(progress.deliveries.map(toDeliveryRow))
          .onConflict((conflict) =>
            conflict.columns(['webhook_id', 'event_id']).doUpdateSet((eb) => ({
              event_type: eb.ref('excluded.event_type'),
              status: eb.ref('excluded.status'),
              attempts: eb.ref('excluded.attempts'),
              first_attempt_at: eb.ref('excluded.first_attempt_at'),
              last_attempt_at: eb.ref('excluded.last_attempt_at'),
              next_attempt_at: eb.ref('excluded.next_attempt_at'),
              attempt_log: eb.ref('excluded.attempt_log'),
            })),
          )
          .compile(),
      );
    }
    try {
      await this.sql.write(statements, {
        everyStatementChanges: true,
        events: (progress.disable?.events ?? []).map(toEventRow),
      });
      return true;
    } catch (error) {
      if (error instanceof ConditionFailedError) return false;
      throw error;
    }
  }

  async replayWebhook(id: string, after: string | null): Promise<boolean> {
    const { db } = this.sql;
    const [changed] = await this.sql.write([
      db
        .updateTable('webhooks')
        .set((eb) => ({ cursor: after, generation: eb('generation', '+', 1) }))
        .where('id', '=', id)
        .compile(),
      db
        .deleteFrom('webhook_deliveries')
        .where('webhook_id', '=', id)
        .where('status', '=', 'pending')
        .compile(),
    ]);
    return changed === 1;
  }

  async findPendingDelivery(id: string, after: string | null): Promise<DeliveryRecord | undefined> {
    let query = this.sql.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', id)
      .where('status', '=', 'pending');
    if (after !== null) query = query.where('event_id', '>', after);
    const rows = await this.sql.select(query.orderBy('event_id').limit(1).compile());
    return rows[0] && toDeliveryRecord(rows[0]);
  }

  async pruneDeliveries(before: number, limit: number): Promise<number> {
    const { db } = this.sql;
    // By the (last_attempt_at) index: one batch reads only the rows it deletes.
    const [deleted] = await this.sql.write([
      db
        .deleteFrom('webhook_deliveries')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('webhook_id', 'event_id'),
            'in',
            selectFrom('webhook_deliveries')
              .select(['webhook_id', 'event_id'])
              .where('last_attempt_at', '<', before)
              .where('status', '!=', 'pending')
              .orderBy('last_attempt_at')
              .limit(limit)
              .$asTuple('webhook_id', 'event_id'),
          ),
        )
        .compile(),
    ]);
    return deleted ?? 0;
  }

  async listDeliveries(filter: DeliveryFilter, page: PageQuery<string>): Promise<DeliveryRecord[]> {
    let query = this.sql.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', filter.webhookId);
    if (filter.status !== null) query = query.where('status', '=', filter.status);
    if (page.after !== null) query = query.where('event_id', '<', page.after);
    const rows = await this.sql.select(
      query.orderBy('event_id', 'desc').limit(page.limit).compile(),
    );
    return rows.map(toDeliveryRecord);
  }

  async countDeliveries(filter: DeliveryFilter): Promise<number> {
    let query = this.sql.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('webhook_id', '=', filter.webhookId);
    if (filter.status !== null) query = query.where('status', '=', filter.status);
    const [row] = await this.sql.select(query.compile());
    return Number(row?.count ?? 0);
  }

  async measureBacklog(): Promise<WebhookBacklog> {
    await this.sql.sequenceEvents?.();
    const { db } = this.sql;
    const [[newest], cursors] = await Promise.all([
      this.sql.select(
        db
          .selectFrom('events')
          .select((eb) => eb.fn.max('seq').as('last'))
          .compile(),
      ),
      this.sql.select(
        db.selectFrom('webhooks').select('cursor').where('enabled', '=', 1).compile(),
      ),
    ]);
    const last = Number(newest?.last ?? 0);
    let events = 0;
    let oldestCursor: number | undefined;
    for (const { cursor } of cursors) {
      const seq = cursor === null ? 0 : (parseEventId(cursor) ?? last);
      if (seq >= last) continue;
      events += last - seq;
      oldestCursor = Math.min(oldestCursor ?? seq, seq);
    }
    if (oldestCursor === undefined) return { events: 0, oldestEventAt: null };
    const [oldest] = await this.sql.select(
      db
        .selectFrom('events')
        .select('occurred_at')
        .where('seq', '>', oldestCursor)
        .orderBy('seq')
        .limit(1)
        .compile(),
    );
    return { events, oldestEventAt: oldest === undefined ? null : toMillis(oldest.occurred_at) };
  }

  async findWebhookHealth(id: string): Promise<WebhookHealth | undefined> {
    await this.sql.sequenceEvents?.();
    const { db } = this.sql;
    const [[webhook], [newest], [latest]] = await Promise.all([
      this.sql.select(db.selectFrom('webhooks').select('cursor').where('id', '=', id).compile()),
      this.sql.select(
        db
          .selectFrom('events')
          .select((eb) => eb.fn.max('seq').as('last'))
          .compile(),
      ),
      // By the primary key (webhook_id, event_id): one row read.
      this.sql.select(
        db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('webhook_id', '=', id)
          .orderBy('event_id', 'desc')
          .limit(1)
          .compile(),
      ),
    ]);
    if (webhook === undefined) return undefined;
    const last = Number(newest?.last ?? 0);
    const cursor = webhook.cursor === null ? 0 : (parseEventId(webhook.cursor) ?? last);
    const delivery = latest && toDeliveryRecord(latest);
    const attempt = delivery?.log.at(-1);
    return {
      lastAttempt:
        delivery === undefined || attempt === undefined
          ? null
          : { ...attempt, eventId: delivery.eventId, status: delivery.status },
      failingSince:
        delivery === undefined || delivery.status === 'delivered' ? null : delivery.firstAttemptAt,
      eventsBehind: Math.max(0, last - cursor),
    };
  }
}

function isVisible(webhook: WebhookRecord, filter: WebhookFilter): boolean {
  const visible = filter.visibleClientIds;
  if (visible === null) return true;
  return webhook.clientIds !== null && webhook.clientIds.every((id) => visible.includes(id));
}

type WebhookConfigRow = Omit<
  Insertable<WebhooksTable>,
  'cursor' | 'generation' | 'lease_owner' | 'lease_until'
>;

function toWebhookRow(webhook: WebhookRecord): WebhookConfigRow & { id: string } {
  return {
    id: webhook.id,
    url: webhook.url,
    event_types: JSON.stringify(webhook.eventTypes),
    client_ids: webhook.clientIds === null ? null : JSON.stringify(webhook.clientIds),
    description: webhook.description,
    enabled: webhook.enabled ? 1 : 0,
    disabled_reason: webhook.disabledReason,
    secret: webhook.secret,
    previous_secret: webhook.previousSecret,
    previous_secret_expires_at: webhook.previousSecretExpiresAt,
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
    etag: webhook.etag,
  };
}

function toWebhookRecord(row: Selectable<WebhooksTable>): WebhookRecord {
  return {
    id: row.id,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as string[],
    clientIds: row.client_ids === null ? null : (JSON.parse(row.client_ids) as string[]),
    description: row.description,
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: toOptionalMillis(row.previous_secret_expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    etag: row.etag,
  };
}

function toDeliveryRow(delivery: DeliveryRecord): Insertable<WebhookDeliveriesTable> {
  return {
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    first_attempt_at: delivery.firstAttemptAt,
    last_attempt_at: delivery.lastAttemptAt,
    next_attempt_at: delivery.nextAttemptAt,
    attempt_log: JSON.stringify(delivery.log),
  };
}

function toDeliveryRecord(row: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return {
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    firstAttemptAt: Number(row.first_attempt_at),
    lastAttemptAt: Number(row.last_attempt_at),
    nextAttemptAt: toOptionalMillis(row.next_attempt_at),
    log: JSON.parse(row.attempt_log) as DeliveryAttempt[],
  };
}
