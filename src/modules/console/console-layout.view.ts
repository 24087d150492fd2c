// The frame of every console page: landmarks, navigation by the key's roles, sign-out, and
// the CSRF token htmx sends on every request. No inline script or style: the page loads
// /console/assets/* only, under a CSP of 'self'.

import type { Role } from '../../roles.js';
import type { InvalidParam } from '../../problems.js';
import { type Html, type Renderable, html } from './html.js';

/** What a view knows of the signed-in operator. */
export interface Viewer {
  keyName: string;
  roles: readonly Role[];
  /** The client_ids the key is restricted to, or null. */
  applications: readonly string[] | null;
  csrfToken: string;
}

export function can(viewer: Viewer, role: Role): boolean {
  return viewer.roles.includes(role);
}

/** htmx: no inline styles (CSP), no eval, no page copies in localStorage (secrets are shown once). */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  refreshOnHistoryMiss: true,
  selfRequestsOnly: true,
  // Settling copies 'style' attributes by script, which the CSP refuses (and no element has one).
  attributesToSettle: ['class', 'width', 'height'],
  responseHandling: [
    { code: '204', swap: false },
    { code: '[234]..', swap: true },
    { code: '...', swap: true, error: true },
  ],
});

export type Section =
  'applications' | 'api-keys' | 'signing-keys' | 'events' | 'webhooks' | 'sign-in';

export function page(options: {
  title: string;
  viewer: Viewer | null;
  section: Section;
  body: Renderable;
  notice?: string | null;
}): Html {
  const { viewer } = options;
  const nav: { section: Section; href: string; label: string; role: Role }[] = [
    {
      section: 'applications',
      href: '/console/applications',
      label: 'Applications',
      role: 'applications:read',
    },
    { section: 'api-keys', href: '/console/api-keys', label: 'API keys', role: 'keys:read' },
    { section: 'events', href: '/console/events', label: 'Events', role: 'events:read' },
    { section: 'webhooks', href: '/console/webhooks', label: 'Webhooks', role: 'webhooks:read' },
    {
      section: 'signing-keys',
      href: '/console/signing-keys',
      label: 'Signing keys',
      role: 'keys:read',
    },
  ];
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<meta name="referrer" content="same-origin">
<title>${options.title} · Tessera console</title>
<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml">
      <link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/htmx.min.js" defer></script>
<script src="/console/assets/console.js" defer></script>
</head>
<body${viewer === null ? '' : html` hx-boost="true" hx-headers="${JSON.stringify({ 'x-csrf-token': viewer.csrfToken })}"`}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console">Tessera <span>console</span></a>
  ${
    viewer === null
      ? ''
      : html`${
            nav.some((item) => can(viewer, item.role))
              ? html`<nav aria-label="Sections">
                  <ul>
                    ${nav
                      .filter((item) => can(viewer, item.role))
                      .map(
                        (item) =>
                          html`<li>
                            <a
                              href="${item.href}"
                              ${item.section === options.section ? html` aria-current="page"` : ''}
                              >${item.label}</a
                            >
                          </li>`,
                      )}
                  </ul>
                </nav>`
              : ''
          }
          <form class="who" method="post" action="/console/sign-out">
            <span>Signed in with key <strong>${viewer.keyName}</strong></span>
            ${csrfField(viewer)}
            <button type="submit" class="secondary">Sign out</button>
          </form>`
  }
</header>
<main id="main" tabindex="-1">
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
${options.body}
</main>
</body>
</html>`;
}

/** The breadcrumb to the applications list: a link only for keys that may open it. */
export function applicationsCrumb(viewer: Viewer): Html {
  return can(viewer, 'applications:read')
    ? html`<a href="/console/applications">Applications</a>`
    : html`Applications`;
}

/** The breadcrumb to one application's page. */
export function applicationCrumb(viewer: Viewer, clientId: string): Html {
  return can(viewer, 'applications:read')
    ? html`<a href="/console/applications/${clientId}">${clientId}</a>`
    : html`${clientId}`;
}

export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}" />`;
}

/** Field errors from a problem document, by field name (the pointer's first token). */
export type FieldErrors = Map<string, string[]>;

export function fieldErrorsOf(errors: readonly InvalidParam[] | undefined): FieldErrors {
  const byField: FieldErrors = new Map();
  for (const error of errors ?? []) {
    const location = error.pointer ?? error.parameter ?? '';
    const field =
      (location.startsWith('/') ? location.slice(1).split('/')[0] : location) || '_form';
    byField.set(field, [...(byField.get(field) ?? []), error.detail]);
  }
  return byField;
}

/** A labelled control with its hint and its errors, tied together by aria-describedby. */
export function field(options: {
  name: string;
  label: string;
  errors: FieldErrors;
  hint?: string;
  control: (attributes: Html) => Html;
}): Html {
  const errors = options.errors.get(options.name) ?? [];
  const id = `field-${options.name}`;
  const described = [
    options.hint ? `${id}-hint` : null,
    errors.length > 0 ? `${id}-error` : null,
  ].filter((part) => part !== null);
  const attributes = html`id="${id}"
  name="${options.name}"${
    described.length > 0 ? html` aria-describedby="${described.join(' ')}"` : ''
  }${errors.length > 0 ? html` aria-invalid="true"` : ''}`;
  return html`<div class="field${errors.length > 0 ? ' has-error' : ''}">
    <label for="${id}">${options.label}</label>
    ${options.hint ? html`<p class="hint" id="${id}-hint">${options.hint}</p>` : ''}
    ${options.control(attributes)}
    ${errors.length > 0 ? html`<p class="error" id="${id}-error">${options.label} ${errors.join('; ')}.</p>` : ''}
  </div>`;
}

/** Errors that belong to no field of the form (a conflict, a stale version). */
export function formErrors(
  errors: FieldErrors,
  known: readonly string[],
  message?: string | null,
): Html {
  const other = [...errors.entries()]
    .filter(([name]) => !known.includes(name))
    .flatMap(([name, details]) =>
      details.map((detail) => (name === '_form' ? detail : `${name} ${detail}`)),
    );
  if (message) other.unshift(message);
  if (other.length === 0) return html``;
  return html`<div class="alert" role="alert">
    <p>${other.length === 1 ? other[0] : 'The form has problems:'}</p>
    ${
      other.length > 1
        ? html`<ul>
            ${other.map((line) => html`<li>${line}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}

export function formatTime(epochMillis: number | null): string {
  return epochMillis === null
    ? '—'
    : new Date(epochMillis).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

/** A secret shown once: read-only, with a copy button and the place its "copied" notice goes. */
export function secretField(label: string, secret: string): Html {
  return html`<label for="secret">${label}</label>
    <div class="copy-row">
      <input
        id="secret"
        class="mono"
        value="${secret}"
        readonly
        spellcheck="false"
        autocomplete="off"
      />
      <button type="button" class="secondary" data-copy="secret">Copy</button>
    </div>
    <p class="hint" data-copied-for="secret" role="status" aria-live="polite"></p>`;
}
