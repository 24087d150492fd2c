import type { EventRecord } from '../../store/store.js';
import { toEventResource } from '../events/events.schemas.js';

/** The JSON body of a delivery: the event exactly as GET /events shows it. */
export function toEventPayload(event: EventRecord): unknown {
  return toEventResource(event);
}
