import type { EventRecord } from '../../store/store.js';

/** The JSON body of a delivery: the event as the API shows it. */
export function toEventPayload(event: EventRecord): unknown {
  return {
    id: event.id,
    type: event.type,
    occurred_at: new Date(event.occurredAt).toISOString(),
    actor: event.actor,
    client_id: event.clientId,
    resource: event.resource,
    changes: event.changes,
    request_id: event.requestId,
  };
}
