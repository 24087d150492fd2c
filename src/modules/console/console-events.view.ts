// The audit trail's pages: the feed newest first (who did it by name, a link to what it was
// done to), one event in full, and a resource's own history (a user's page shows it).

import type { EventRecord } from '../../store/store.js';
import {
  type FieldErrors,
  type Viewer,
  can,
  field,
  formatTime,
  page,
  tableBox,
} from './console-layout.view.js';
import { type Html, html } from './html.js';

export const EVENT_FILTERS = [
  'type',
  'client_id',
  'actor_id',
  'resource_type',
  'resource_id',
  'since',
] as const;
export type EventFilterValues = Record<(typeof EVENT_FILTERS)[number], string>;

const RESOURCE_TYPES = ['application', 'user', 'api_key', 'signing_key', 'webhook'];

/** The names of the API keys that made the events shown, by key id. */
export type ActorNames = ReadonlyMap<string, string>;

export function eventQuery(filters: EventFilterValues, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const name of EVENT_FILTERS) if (filters[name] !== '') params.set(name, filters[name]);
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The key ids whose names the events' actors are shown by. */
export function actorKeyIds(events: readonly EventRecord[]): string[] {
  return events.flatMap((event) =>
    event.actor.id !== null && (event.actor.type === 'api_key' || event.actor.type === 'scim')
      ? [event.actor.id]
      : [],
  );
}

/** Who made the change, in words: the API key's name, "SCIM (key …)", "the CLI", … */
export function actorLabel(event: EventRecord, names: ActorNames): string {
  const { type, id } = event.actor;
  const keyName = id === null ? null : (names.get(id) ?? `key ${id.slice(0, 8)}`);
  switch (type) {
    case 'api_key':
      return keyName ?? 'an API key';
    case 'operator':
      // Signed in through the OpenID provider: its subject there is all the event keeps.
      return id === null ? 'an operator' : `operator ${id}`;
    case 'scim':
      return keyName === null ? 'SCIM' : `SCIM (${keyName})`;
    case 'cli':
      return 'the CLI';
    case 'token_exchange':
      return 'token exchange (first sign-in)';
    case 'system':
      return 'Tessera';
    case 'import':
      // The job's id: GET /imports/<id> tells which import it was.
      return id === null ? 'an import' : `import ${id}`;
  }
}

function resourceName(event: EventRecord): string {
  const parts = Object.entries(event.resource.id)
    .filter(([name]) => name !== 'client_id' || event.resource.type === 'application')
    .filter(([name]) => !(event.resource.type === 'user' && name === 'id'))
    .map(([, value]) => String(value));
  return parts.join(' · ');
}

/** The resource's own id member (a user's, a key's, a webhook's), when it has one. */
function ownId(event: EventRecord): string | null {
  const id = event.resource.id.id;
  return typeof id === 'string' ? id : null;
}

/**
 * Where the event's resource is shown in the console, for this viewer: null when its roles
 * open no such page, or the event deleted the resource.
 */
export function resourceHref(viewer: Viewer, event: EventRecord): string | null {
  if (event.type.endsWith('.deleted')) return null;
  const id = ownId(event);
  switch (event.resource.type) {
    case 'application':
      return can(viewer, 'applications:read') && event.clientId !== null
        ? `/console/applications/${encodeURIComponent(event.clientId)}`
        : null;
    case 'user':
      return can(viewer, 'users:read') && event.clientId !== null && id !== null
        ? `/console/applications/${encodeURIComponent(event.clientId)}/users/${encodeURIComponent(id)}`
        : null;
    case 'api_key':
      return can(viewer, 'keys:read') ? '/console/api-keys' : null;
    case 'signing_key':
      return can(viewer, 'keys:read') ? '/console/signing-keys' : null;
    case 'webhook':
      return can(viewer, 'webhooks:read') && id !== null
        ? `/console/webhooks/${encodeURIComponent(id)}`
        : null;
    default:
      return null;
  }
}

function resourceCell(viewer: Viewer, event: EventRecord): Html {
  const href = resourceHref(viewer, event);
  const name = resourceName(event);
  return html`${event.resource.type}<br />${
      href === null
        ? html`<span class="subtle">${name}</span>`
        : html`<a href="${href}">${name || event.resource.type}</a>`
    }`;
}

export function eventRows(viewer: Viewer, events: readonly EventRecord[], names: ActorNames): Html {
  return html`${events.map(
    (event) =>
      html`<tr>
        <td class="when">
          <a href="/console/events/${event.id}">${formatTime(event.occurredAt)}</a>
        </td>
        <td><span class="chip">${event.type}</span></td>
        <td>${actorLabel(event, names)}</td>
        <td>${event.clientId ?? '—'}</td>
        <td>${resourceCell(viewer, event)}</td>
        <td>
          ${
            event.changes === null || event.changes.length === 0
              ? '—'
              : event.changes.map((change) => change.member).join(', ')
          }
        </td>
      </tr>`,
  )}`;
}

function eventTable(
  viewer: Viewer,
  caption: string,
  events: readonly EventRecord[],
  names: ActorNames,
  live: Html = html``,
): Html {
  return tableBox(
    caption,
    html`<table id="events">
      <caption class="visually-hidden">
        ${caption}
      </caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Type</th>
          <th scope="col">By</th>
          <th scope="col">Application</th>
          <th scope="col">Resource</th>
          <th scope="col">Changed</th>
        </tr>
      </thead>
      ${live}
      <tbody>
        ${eventRows(viewer, events, names)}
      </tbody>
    </table>`,
  );
}

/**
 * The live head of the table: htmx asks the server for events after `after` (a long poll) and
 * swaps in a new head followed by their rows, newest first, above the rows already shown.
 */
export function liveHead(filters: EventFilterValues, after: string | null): Html {
  const query = eventQuery(filters, after === null ? {} : { after });
  return html`<tbody
    id="event-head"
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
    names: ActorNames;
    /** The id to read older events before, when there are more. */
    older: string | null;
    /** Whether this page is not the newest one. */
    paged: boolean;
    /** The id after which new events appear live, when this is the newest page. */
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
        Every change, newest first.
        ${view.live ? 'New events appear at the top as they happen.' : ''}
      </p>
      <form
        method="get"
        action="/console/events"
        class="filters"
        role="search"
        aria-label="Filter events"
      >
        ${text('type', 'Types', 'e.g. user.*,application.created')}
        ${text('client_id', 'Application')} ${text('actor_id', 'By (API key id)')}
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
        ${text('resource_id', 'Resource id', 'a user’s, key’s or webhook’s id')}
        ${text('since', 'Since', 'RFC 3339, e.g. 2026-01-31T00:00:00Z')}
        <div class="actions">
          <button type="submit" class="secondary">Filter</button>
          <a href="/console/events">Clear</a>
        </div>
      </form>
      <section aria-label="Events found">
        ${eventTable(
          viewer,
          'Events, newest first',
          view.events,
          view.names,
          view.live ? liveHead(view.filters, view.liveAfter) : html``,
        )}
        ${view.events.length === 0 ? html`<p class="empty" role="status">No event${view.paged ? ' before these' : ' yet'}${view.live ? '; new ones appear here' : ''}.</p>` : ''}
        <nav class="pager" aria-label="Pages">
          ${view.paged ? html`<a href="/console/events${eventQuery(view.filters)}">Newest</a>` : ''}
          ${view.older !== null ? html`<a href="/console/events${eventQuery(view.filters, { before: view.older })}" rel="next">Older events</a>` : ''}
        </nav>
      </section>`,
  });
}

function json(value: unknown): string {
  return value === undefined ? '—' : JSON.stringify(value, null, 2);
}

/** One event in full: every change with its value before and after, the request id. */
export function eventPage(viewer: Viewer, event: EventRecord, names: ActorNames): Html {
  const href = resourceHref(viewer, event);
  const id = ownId(event);
  const history =
    id === null
      ? null
      : `/console/events?resource_type=${event.resource.type}&resource_id=${encodeURIComponent(id)}`;
  return page({
    title: `Event ${event.type}`,
    viewer,
    section: 'events',
    body: html`<p class="crumbs"><a href="/console/events">Events</a> › ${event.id}</p>
      <h1>${event.type}</h1>
      <section class="card" aria-label="What happened">
        <dl class="facts">
          <dt>When</dt>
          <dd>${formatTime(event.occurredAt)}</dd>
          <dt>By</dt>
          <dd>
            ${actorLabel(event, names)}
            ${event.actor.id === null ? '' : html`<br /><span class="subtle mono">${event.actor.type} ${event.actor.id}</span>`}
          </dd>
          <dt>Application</dt>
          <dd>
            ${
              event.clientId === null
                ? '—'
                : can(viewer, 'applications:read')
                  ? html`<a href="/console/applications/${encodeURIComponent(event.clientId)}"
                      >${event.clientId}</a
                    >`
                  : event.clientId
            }
          </dd>
          <dt>Resource</dt>
          <dd>
            ${event.resource.type}:
            ${href === null ? resourceName(event) : html`<a href="${href}">${resourceName(event) || event.resource.type}</a>`}
            <br /><code>${JSON.stringify(event.resource.id)}</code>
            ${history === null ? '' : html`<br /><a href="${history}">Every event of this ${event.resource.type}</a>`}
          </dd>
          <dt>Request id</dt>
          <dd>${event.requestId === null ? '—' : html`<code>${event.requestId}</code>`}</dd>
          <dt>Event id</dt>
          <dd><code>${event.id}</code></dd>
        </dl>
      </section>
      <section aria-labelledby="changes-heading">
        <h2 id="changes-heading">Changes</h2>
        ${
          event.changes === null || event.changes.length === 0
            ? html`<p class="empty">This event records no changed member.</p>`
            : tableBox(
                'Changed members',
                html`<table id="changes">
                  <caption class="visually-hidden">
                    Each changed member, before and after
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Member</th>
                      <th scope="col">Before</th>
                      <th scope="col">After</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${event.changes.map(
                      (change) =>
                        html`<tr>
                          <th scope="row">${change.member}</th>
                          <td><pre>${json(change.before)}</pre></td>
                          <td><pre>${json(change.after)}</pre></td>
                        </tr>`,
                    )}
                  </tbody>
                </table>`,
              )
        }
      </section>`,
  });
}

/** A resource's own events, newest first, on its page (a user's). */
export function historySection(
  viewer: Viewer,
  view: { events: EventRecord[]; names: ActorNames; more: string | null },
): Html {
  return html`<section aria-labelledby="history-heading">
    <h2 id="history-heading">History</h2>
    ${
      view.events.length === 0
        ? html`<p class="empty">No event kept about it.</p>`
        : eventTable(viewer, 'History, newest first', view.events, view.names)
    }
    ${view.more === null ? '' : html`<p><a href="${view.more}">Every event of it</a></p>`}
  </section>`;
}
