import type {
  DeliveryAttempt,
  DeliveryRecord,
  WebhookHealth,
  WebhookRecord,
} from '../../store/webhook-records.js';
import {
  type FieldErrors,
  type Viewer,
  can,
  csrfField,
  field,
  formErrors,
  formatTime,
  page,
  secretField,
  tableBox,
} from './console-layout.view.js';
import { confirmPage } from './console-confirm.view.js';
import { type Html, html } from './html.js';

export interface WebhookFormValues {
  url: string;
  event_types: string;
  client_ids: string;
  description: string;
}

export const WEBHOOK_FIELDS = ['url', 'event_types', 'client_ids', 'description'];

function state(webhook: WebhookRecord): string {
  if (webhook.enabled) return 'enabled';
  return webhook.disabledReason === null ? 'disabled' : `disabled (${webhook.disabledReason})`;
}

/** An attempt's outcome in a few words: the status code, or why there was none. */
function outcome(attempt: DeliveryAttempt): string {
  if (attempt.error === null) return `HTTP ${attempt.statusCode ?? '?'}`;
  return attempt.statusCode === null || attempt.error.includes(String(attempt.statusCode))
    ? attempt.error
    : `HTTP ${attempt.statusCode}: ${attempt.error}`;
}

/**
 * How a webhook is doing, in one badge: disabled (and why), failing since when, behind, or
 * healthy. A receiver on a dead port reads "failing", not "enabled".
 */
function healthBadge(webhook: WebhookRecord, health: WebhookHealth): Html {
  if (!webhook.enabled) return html`<span class="status off">${state(webhook)}</span>`;
  if (health.failingSince !== null) {
    return html`<span class="status failing"
      >failing since ${formatTime(health.failingSince)}</span
    >`;
  }
  if (health.lastAttempt === null)
    return html`<span class="status">enabled, nothing sent yet</span>`;
  return html`<span class="status ok">delivering</span>`;
}

function lastAttemptText(health: WebhookHealth): Html {
  const last = health.lastAttempt;
  if (last === null) return html`—`;
  return html`${outcome(last)}<br /><span class="subtle">${formatTime(last.at)}</span>`;
}

function backlogText(health: WebhookHealth): string {
  return health.eventsBehind === 1 ? '1 event' : `${health.eventsBehind} events`;
}

export function webhooksPage(
  viewer: Viewer,
  view: {
    webhooks: WebhookRecord[];
    health: ReadonlyMap<string, WebhookHealth>;
    form: { values: WebhookFormValues; errors: FieldErrors; message: string | null };
  },
  notice: string | null,
): Html {
  const { values, errors } = view.form;
  return page({
    title: 'Webhooks',
    viewer,
    section: 'webhooks',
    notice,
    body: html`<h1>Webhooks</h1>
      ${
        view.webhooks.length === 0
          ? html`<p class="empty">No webhook yet.</p>`
          : tableBox(
              'Webhooks',
              html`<table id="webhook-list">
                <caption class="visually-hidden">
                  Webhooks and how their deliveries are going
                </caption>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col">Events</th>
                    <th scope="col">Applications</th>
                    <th scope="col">Health</th>
                    <th scope="col">Last attempt</th>
                    <th scope="col">Behind</th>
                  </tr>
                </thead>
                <tbody>
                  ${view.webhooks.map((webhook) => {
                    const health = view.health.get(webhook.id)!;
                    return html`<tr>
                      <td>
                        <a href="/console/webhooks/${webhook.id}">${webhook.url}</a><br /><span
                          class="subtle"
                          >${webhook.description}</span
                        >
                      </td>
                      <td>${webhook.eventTypes.join(', ')}</td>
                      <td>${webhook.clientIds === null ? 'all' : webhook.clientIds.join(', ')}</td>
                      <td>${healthBadge(webhook, health)}</td>
                      <td>${lastAttemptText(health)}</td>
                      <td>${backlogText(health)}</td>
                    </tr>`;
                  })}
                </tbody>
              </table>`,
            )
      }
      ${
        can(viewer, 'webhooks:write')
          ? html`<form method="post" action="/console/webhooks" class="card" novalidate>
              <h2>Create a webhook</h2>
              ${formErrors(errors, WEBHOOK_FIELDS, view.form.message)} ${csrfField(viewer)}
              ${field({
                name: 'url',
                label: 'URL',
                hint: 'Where events are POSTed (https:).',
                errors,
                control: (attributes) =>
                  html`<input
                    ${attributes}
                    value="${values.url}"
                    autocomplete="off"
                    spellcheck="false"
                  />`,
              })}
              ${field({
                name: 'event_types',
                label: 'Event types',
                hint: 'Separated by spaces or commas: user.created, application.*, or * for all.',
                errors,
                control: (attributes) =>
                  html`<input
                    ${attributes}
                    value="${values.event_types}"
                    autocomplete="off"
                    spellcheck="false"
                  />`,
              })}
              ${field({
                name: 'client_ids',
                label: 'Only these applications',
                hint: 'client_ids separated by spaces or commas; empty: every event.',
                errors,
                control: (attributes) =>
                  html`<input
                    ${attributes}
                    value="${values.client_ids}"
                    autocomplete="off"
                    spellcheck="false"
                  />`,
              })}
              ${field({
                name: 'description',
                label: 'Description',
                errors,
                control: (attributes) =>
                  html`<input ${attributes} value="${values.description}" />`,
              })}
              <button type="submit">Create webhook</button>
            </form>`
          : ''
      }`,
  });
}

export function webhookSecretPage(viewer: Viewer, webhook: WebhookRecord, secret: string): Html {
  return page({
    title: 'Webhook created',
    viewer,
    section: 'webhooks',
    body: html`<h1>Webhook for ${webhook.url}</h1>
      <div class="card secret" hx-history="false">
        <p role="status">
          <strong>Copy the signing secret now: it is shown this once.</strong> The receiver checks
          each delivery's signature with it.
        </p>
        ${secretField('Signing secret', secret)}
      </div>
      <p><a href="/console/webhooks/${webhook.id}">To the webhook and its deliveries</a></p>`,
  });
}

export function webhookPage(
  viewer: Viewer,
  webhook: WebhookRecord,
  health: WebhookHealth,
  deliveries: DeliveryRecord[],
  notice: string | null,
): Html {
  const base = `/console/webhooks/${webhook.id}`;
  const writable = can(viewer, 'webhooks:write');
  return page({
    title: 'Webhook',
    viewer,
    section: 'webhooks',
    notice,
    body: html`<p class="crumbs"><a href="/console/webhooks">Webhooks</a></p>
      <h1>${webhook.url}</h1>
      <p class="meta">
        events ${webhook.eventTypes.join(', ')} · applications
        ${webhook.clientIds === null ? 'all' : webhook.clientIds.join(', ')}
      </p>
      <section class="card" aria-label="Health">
        <dl class="facts">
          <dt>Health</dt>
          <dd>${healthBadge(webhook, health)}</dd>
          <dt>Last attempt</dt>
          <dd>${lastAttemptText(health)}</dd>
          <dt>Behind</dt>
          <dd>${backlogText(health)} in the feed after the last one it dealt with</dd>
        </dl>
      </section>
      ${
        writable
          ? html`<div class="row-actions">
                <form method="post" action="${base}/enabled">
                  ${csrfField(viewer)}
                  <input
                    type="hidden"
                    name="enabled"
                    value="${webhook.enabled ? 'false' : 'true'}"
                  />
                  <button type="submit" class="secondary">
                    ${webhook.enabled ? 'Disable' : 'Enable'}
                  </button>
                </form>
                <a class="button destructive" href="${base}/delete">Delete webhook…</a>
              </div>
              <form method="post" action="${base}/replay" class="card">
                <h2>Replay</h2>
                ${csrfField(viewer)}
                ${field({
                  name: 'after',
                  label: 'Deliver again every matching event after event id',
                  hint: 'Empty: every event still kept.',
                  errors: new Map(),
                  control: (attributes) =>
                    html`<input ${attributes} value="" autocomplete="off" spellcheck="false" />`,
                })}
                <button type="submit" class="secondary">Replay events</button>
              </form>`
          : ''
      }
      <section aria-label="Deliveries">
        <h2>Deliveries, newest first</h2>
        ${
          deliveries.length === 0
            ? html`<p class="empty">No delivery yet.</p>`
            : tableBox(
                'Deliveries',
                html`<table>
                  <caption class="visually-hidden">
                    Deliveries, newest event first
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Last attempt</th>
                      <th scope="col">Next attempt</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${deliveries.map((delivery) => {
                      const last = delivery.log.at(-1);
                      return html`<tr>
                        <td>
                          ${delivery.eventType}<br />${
                            can(viewer, 'events:read')
                              ? html`<a class="mono" href="/console/events/${delivery.eventId}"
                                  >${delivery.eventId}</a
                                >`
                              : html`<span class="subtle mono">${delivery.eventId}</span>`
                          }
                        </td>
                        <td>${delivery.status}</td>
                        <td>${delivery.attempts}</td>
                        <td>
                          ${formatTime(delivery.lastAttemptAt)}${
                            last === undefined
                              ? ''
                              : html`<br /><span class="subtle"
                                    >${last.statusCode ?? 'no answer'}${last.error === null ? '' : ` · ${last.error}`}</span
                                  >`
                          }
                        </td>
                        <td>${formatTime(delivery.nextAttemptAt)}</td>
                      </tr>`;
                    })}
                  </tbody>
                </table>`,
              )
        }
      </section>`,
  });
}

/** Asks before deleting a webhook: its deliveries stop, and its log goes with it. */
export function deleteWebhookPage(
  viewer: Viewer,
  webhook: WebhookRecord,
  message: string | null,
): Html {
  const base = `/console/webhooks/${webhook.id}`;
  return confirmPage(viewer, {
    title: 'Delete this webhook?',
    section: 'webhooks',
    crumbs: html`<a href="/console/webhooks">Webhooks</a> › <a href="${base}">${webhook.url}</a>`,
    subject: html`${webhook.url}${webhook.description === '' ? '' : html` <span class="subtle">${webhook.description}</span>`}`,
    consequences: [
      html`No event is sent to it any more; a delivery in flight is cancelled.`,
      html`Its delivery log and its signing secrets are deleted. It cannot be undone: a new webhook
      gets a new secret, which the receiver must be given.`,
      html`To pause deliveries instead, disable it: it keeps its place in the feed.`,
    ],
    refusal: null,
    message,
    action: `${base}/delete`,
    button: 'Delete webhook',
    back: { href: base, label: 'Back to the webhook' },
  });
}
