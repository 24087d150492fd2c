import type { EventRecord } from '../../store/store.js';
import { type FieldErrors, type Viewer, field, formatTime, page } from './console-layout.view.js';
import { type Html, html } from './html.js';

export const EVENT_FILTERS = ['type', 'client_id', 'actor_id', 'resource_type', 'since'] as const;
export type EventFilterValues = Record<(typeof EVENT_FILTERS)[number], string>;

const RESOURCE_TYPES = ['application', 'user', 'api_key', 'signing_key', 'webhook'];

export function eventQuery(filters: EventFilterValues, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const name of EVENT_FILTERS) if (filters[name] !== '') params.set(name, filters[name]);
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function resourceName(event: EventRecord): string {
  return Object.entries(event.resource.id)
    .filter(([name]) => name !== 'client_id')
    .map(([, value]) => String(value))
    .join(' · ');
}

export function eventRows(events: readonly EventRecord[]): Html {
  return html`${events.map(
    (event) =>
      html`<tr>
        <td>${formatTime(event.occurredAt)}</td>
        <td><span class="chip">${event.type}</span></td>
        <td>
          ${event.actor.type}${event.actor.id === null ? '' : html`<br /><span class="subtle mono">${event.actor.id}</span>`}
        </td>
        <td>${event.clientId ?? '—'}</td>
        <td>${event.resource.type}<br /><span class="subtle">${resourceName(event)}</span></td>
        <td>
          ${
            event.changes === null || event.changes.length === 0
              ? '—'
              : html`<details>
                  <summary>${event.changes.map((change) => change.member).join(', ')}</summary>
                  <dl class="changes">
                    ${event.changes.map(
                      (change) =>
                        html`<dt>${change.member}</dt>
                          <dd>
                            <code>${JSON.stringify(change.before)}</code> →
                            <code>${JSON.stringify(change.after)}</code>
                          </dd>`,
                    )}
                  </dl>
                </details>`
          }
        </td>
      </tr>`,
  )}`;
}

/**
 * The live tail of the table: htmx asks the server for events after `after` (a long poll) and
 * swaps in their rows followed by a new tail, so new events appear as they are committed.
 */
export function liveTail(filters: EventFilterValues, after: string | null): Html {
  const query = eventQuery(filters, after === null ? {} : { after });
  return html`<tbody
    id="event-tail"
    hx-get="/console/events/live${query}"
    hx-trigger="load delay:200ms"
    hx-swap="outerHTML"
    hx-target="this"
  ></tbody>`;
}

export function eventsPage(
  viewer: Viewer,
  view: {
    filters: EventFilterValues;
    errors: FieldErrors;
    events: EventRecord[];
    /** The id to read on from, when this page is full. */
    next: string | null;
    /** The id after which new events will appear live, when this is the last page. */
    liveAfter: string | null;
    live: boolean;
  },
): Html {
  const text = (name: (typeof EVENT_FILTERS)[number], label: string, hint?: string) =>
    field({
      name,
      label,
      errors: view.errors,
      ...(hint === undefined ? {} : { hint }),
      control: (attributes) =>
        html`<input
          ${attributes}
          value="${view.filters[name]}"
          autocomplete="off"
          spellcheck="false"
        />`,
    });
  return page({
    title: 'Events',
    viewer,
    section: 'events',
    body: html`<h1>Events</h1>
      <p>
        Every change, in the order it was committed.
        ${view.live ? 'New events appear here as they happen.' : ''}
      </p>
      <form
        method="get"
        action="/console/events"
        class="filters"
        role="search"
        aria-label="Filter events"
      >
        ${text('type', 'Types', 'e.g. user.*,application.created')}
        ${text('client_id', 'Application')} ${text('actor_id', 'Actor (API key id)')}
        ${field({
          name: 'resource_type',
          label: 'Resource',
          errors: view.errors,
          control: (attributes) =>
            html`<select ${attributes}>
              ${['', ...RESOURCE_TYPES].map(
                (type) =>
                  html`<option
                    value="${type}"
                    ${view.filters.resource_type === type ? 'selected' : ''}
                  >
                    ${type === '' ? 'any' : type}
                  </option>`,
              )}
            </select>`,
        })}
        ${text('since', 'Since', 'RFC 3339; empty: the last 24 hours')}
        <div class="actions">
          <button type="submit" class="secondary">Filter</button>
          <a href="/console/events">Clear</a>
        </div>
      </form>
      <section aria-label="Events found">
        <table id="events">
          <caption class="visually-hidden">
            Events, oldest first
          </caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Type</th>
              <th scope="col">Actor</th>
              <th scope="col">Application</th>
              <th scope="col">Resource</th>
              <th scope="col">Changed</th>
            </tr>
          </thead>
          <tbody>
            ${eventRows(view.events)}
          </tbody>
          ${view.live ? liveTail(view.filters, view.liveAfter) : ''}
        </table>
        ${view.events.length === 0 ? html`<p class="empty" role="status">No event yet${view.live ? '; new ones appear here' : ''}.</p>` : ''}
        <nav class="pager" aria-label="Pages">
          ${view.next !== null ? html`<a href="/console/events${eventQuery(view.filters, { after: view.next })}" rel="next">Next page</a>` : ''}
        </nav>
      </section>`,
  });
}
