// The signed-in key's own page (what it is, which pages its roles open) and, for a key that may
// read users but not list applications, the way to an application's users.

import type { ApiKeyRecord } from '../../store/store.js';
import {
  type FieldErrors,
  type Viewer,
  field,
  formatTime,
  page,
  pagesOf,
} from './console-layout.view.js';
import { type Html, html } from './html.js';

function chips(values: readonly string[]): Html {
  return html`<ul class="chip-list">
    ${values.map((value) => html`<li class="chip">${value}</li>`)}
  </ul>`;
}

export function accountPage(viewer: Viewer, key: ApiKeyRecord): Html {
  const pages = pagesOf(viewer);
  return page({
    title: 'Your key',
    viewer,
    section: 'account',
    body: html`<h1>Your key <span class="subtle">${key.name}</span></h1>
      <section class="card" aria-labelledby="key-facts">
        <h2 id="key-facts">What it may do</h2>
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">${key.id}</dd>
          <dt>Roles</dt>
          <dd>${chips(key.roles)}</dd>
          <dt>Applications</dt>
          <dd>${key.applications === null ? 'all' : key.applications.join(', ')}</dd>
          <dt>Expires</dt>
          <dd>${key.expiresAt === null ? 'never' : formatTime(key.expiresAt)}</dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="key-pages">
        <h2 id="key-pages">Console pages it opens</h2>
        ${
          pages.length === 0
            ? html`<p>
                None: its roles (${key.roles.join(', ')}) are for the API only. Sign in with a key
                that holds a reading role (applications:read, users:read, keys:read, events:read or
                webhooks:read) to use the console.
              </p>`
            : html`<ul>
                ${pages.map((item) => html`<li><a href="${item.href}">${item.label}</a></li>`)}
              </ul>`
        }
      </section>`,
  });
}

/** For a key that reads users without listing applications: its applications, or a client_id box. */
export function usersHomePage(viewer: Viewer, clientId: string, errors: FieldErrors): Html {
  const restricted = viewer.applications;
  return page({
    title: 'Users',
    viewer,
    section: 'users',
    body: html`<h1>Users</h1>
      ${
        restricted === null
          ? html`<p>Users belong to an application: name it to see its users.</p>`
          : html`<p>Users belong to an application. This key may see those of:</p>
              <ul>
                ${restricted.map(
                  (id) => html`<li><a href="/console/applications/${id}/users">${id}</a></li>`,
                )}
              </ul>`
      }
      <form method="get" action="/console/users" class="search card" role="search">
        ${field({
          name: 'client_id',
          label: 'Application (client_id)',
          errors,
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${clientId}"
              required
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        <button type="submit" class="secondary">Show its users</button>
      </form>`,
  });
}
