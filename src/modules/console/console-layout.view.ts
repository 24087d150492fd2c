// The frame of every console page: landmarks, navigation by the key's roles, sign-out, and
// the CSRF token htmx sends on every request. No inline script or style: the page loads
// /console/assets/* only, under a CSP of 'self'.

import type { Role } from '../../roles.js';
import type { InvalidParam } from '../../problems.js';
import { type Html, type Renderable, html } from './html.js';

/** What a view knows of the signed-in operator. */
export interface Viewer {
  /** The id of the API key the session runs on ("this key" in the list of keys). */
  keyId: string;
  keyName: string;
  /**
   * The OpenID provider an operator signed in through ("Signed in as … "); null for a
   * session of an API key.
   */
  provider: string | null;
  roles: readonly Role[];
  /** The client_ids the key is restricted to, or null. */
  applications: readonly string[] | null;
  csrfToken: string;
}

export function can(viewer: Viewer, role: Role): boolean {
  return viewer.roles.includes(role);
}

/** The part of the console a page belongs to: its item in the navigation, if any. */
export type Section =
  'applications' | 'users' | 'api-keys' | 'signing-keys' | 'events' | 'webhooks' | 'account';

export interface ConsolePage {
  section: Section;
  href: string;
  label: string;
}

/**
 * The pages a key's roles open, in the navigation's order: the same list makes the navigation,
 * the page a key lands on after sign-in, and the account page, so none of them can disagree.
 */
export function pagesOf(viewer: Pick<Viewer, 'roles' | 'applications'>): ConsolePage[] {
  const has = (role: Role) => viewer.roles.includes(role);
  const pages: ConsolePage[] = [];
  if (has('applications:read')) {
    pages.push({ section: 'applications', href: '/console/applications', label: 'Applications' });
  } else if (has('users:read')) {
    // Without the list of applications, users are reached through the key's own.
    const only = viewer.applications?.length === 1 ? viewer.applications[0]! : null;
    pages.push({
      section: 'users',
      href: only === null ? '/console/users' : `/console/applications/${only}/users`,
      label: 'Users',
    });
  }
  if (has('keys:read')) {
    pages.push({ section: 'api-keys', href: '/console/api-keys', label: 'API keys' });
  }
  if (has('events:read')) {
    pages.push({ section: 'events', href: '/console/events', label: 'Events' });
  }
  if (has('webhooks:read')) {
    pages.push({ section: 'webhooks', href: '/console/webhooks', label: 'Webhooks' });
  }
  if (has('keys:read')) {
    pages.push({ section: 'signing-keys', href: '/console/signing-keys', label: 'Signing keys' });
  }
  return pages;
}

/**
 * The section an application's pages (its users, its settings) belong to: Applications for a
 * key that may list them, else Users.
 */
export function applicationSection(viewer: Viewer): Section {
  return can(viewer, 'applications:read') ? 'applications' : 'users';
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

export function page(options: {
  title: string;
  viewer: Viewer | null;
  /** The navigation item this page belongs to; null: none (sign-in, errors). */
  section: Section | null;
  body: Renderable;
  notice?: string | null;
  /** Go on to this console page at once (after a sign-in through the OpenID provider). */
  refreshTo?: string;
}): Html {
  const { viewer } = options;
  const nav = viewer === null ? [] : pagesOf(viewer);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<meta name="referrer" content="same-origin">
${
  options.refreshTo === undefined
    ? ''
    : html`<meta http-equiv="refresh" content="0; url=${options.refreshTo}" /> `
}<title>${options.title} · Tessera console</title>
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
            nav.length > 0
              ? html`<nav aria-label="Sections">
                  <ul>
                    ${nav.map(
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
            <span
              >${viewer.provider === null ? 'Signed in with key' : 'Signed in as'}
              <a
                href="/console/account"
                ${options.section === 'account' ? html` aria-current="page"` : ''}
                ><strong>${viewer.keyName}</strong></a
              ></span
            >
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

/**
 * A table in a box of its own that scrolls sideways on a narrow screen, so the page never does;
 * focusable, so the keyboard can scroll it too.
 */
export function tableBox(label: string, table: Html): Html {
  return html`<div class="table-box" role="region" aria-label="${label}" tabindex="0">
    ${table}
  </div>`;
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
