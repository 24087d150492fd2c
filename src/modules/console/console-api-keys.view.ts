import { ROLES } from '../../roles.js';
import type { ApiKeyRecord } from '../../store/store.js';
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
} from './console-layout.view.js';
import { type Html, html } from './html.js';

export interface ApiKeyFormValues {
  name: string;
  roles: string[];
  applications: string;
  expires_at: string;
}

export const API_KEY_FIELDS = ['name', 'roles', 'applications', 'expires_at'];

function keyState(key: ApiKeyRecord, now: number): string {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'active';
}

export function apiKeysPage(
  viewer: Viewer,
  view: {
    keys: ApiKeyRecord[];
    includeRevoked: boolean;
    next: string | null;
    paged: boolean;
    now: number;
    form: { values: ApiKeyFormValues; errors: FieldErrors; message: string | null };
  },
  notice: string | null,
): Html {
  const writable = can(viewer, 'keys:write');
  const link = (after: string | null) => {
    const params = new URLSearchParams();
    if (view.includeRevoked) params.set('include_revoked', 'true');
    if (after !== null) params.set('after', after);
    const text = params.toString();
    return `/console/api-keys${text === '' ? '' : `?${text}`}`;
  };
  const { values, errors } = view.form;
  const roleErrors = errors.get('roles') ?? [];
  return page({
    title: 'API keys',
    viewer,
    section: 'api-keys',
    notice,
    body: html`<h1>API keys</h1>
      <p>
        <a
          href="${view.includeRevoked ? '/console/api-keys' : '/console/api-keys?include_revoked=true'}"
          >${view.includeRevoked ? 'Hide revoked keys' : 'Show revoked keys too'}</a
        >
      </p>
      <section aria-label="Keys">
        <table>
          <caption class="visually-hidden">
            API keys, oldest first
          </caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Roles</th>
              <th scope="col">Applications</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              ${writable ? html`<th scope="col">Actions</th>` : ''}
            </tr>
          </thead>
          <tbody>
            ${view.keys.map((key) => {
              const state = keyState(key, view.now);
              return html`<tr>
                <td>${key.name}<br /><span class="subtle mono">${key.id}</span></td>
                <td>
                  <ul class="chip-list">
                    ${key.roles.map((role) => html`<li class="chip">${role}</li>`)}
                  </ul>
                </td>
                <td>${key.applications === null ? 'all' : key.applications.join(', ')}</td>
                <td>${formatTime(key.createdAt)}</td>
                <td>${formatTime(key.expiresAt)}</td>
                <td>${formatTime(key.lastUsedAt)}</td>
                <td>${state}</td>
                ${
                  writable
                    ? html`<td class="row-actions">
                        ${
                          state === 'active'
                            ? html`<form method="post" action="/console/api-keys/${key.id}/rotate">
                                  ${csrfField(viewer)}<button
                                    type="submit"
                                    class="secondary"
                                    aria-label="Rotate key ${key.name}"
                                  >
                                    Rotate
                                  </button>
                                </form>
                                <form method="post" action="/console/api-keys/${key.id}/revoke">
                                  ${csrfField(viewer)}<button
                                    type="submit"
                                    class="destructive"
                                    aria-label="Revoke key ${key.name}"
                                  >
                                    Revoke
                                  </button>
                                </form>`
                            : ''
                        }
                      </td>`
                    : ''
                }
              </tr>`;
            })}
          </tbody>
        </table>
        <nav class="pager" aria-label="Pages">
          ${view.paged ? html`<a href="${link(null)}">First page</a>` : ''}
          ${view.next !== null ? html`<a href="${link(view.next)}" rel="next">Next page</a>` : ''}
        </nav>
      </section>
      ${
        writable
          ? html`<form method="post" action="/console/api-keys" class="card" novalidate>
              <h2>Create a key</h2>
              ${formErrors(errors, API_KEY_FIELDS, view.form.message)} ${csrfField(viewer)}
              ${field({
                name: 'name',
                label: 'Name',
                hint: 'What the key is for.',
                errors,
                control: (attributes) =>
                  html`<input ${attributes} value="${values.name}" autocomplete="off" />`,
              })}
              <fieldset
                class="roles${roleErrors.length > 0 ? ' has-error' : ''}"
                ${roleErrors.length > 0 ? html` aria-describedby="field-roles-error"` : ''}
              >
                <legend>Roles (at most your key's own)</legend>
                <ul class="checks">
                  ${ROLES.filter((role) => viewer.roles.includes(role)).map(
                    (role) =>
                      html`<li>
                        <input
                          type="checkbox"
                          id="role-${role.replace(':', '-')}"
                          name="roles"
                          value="${role}"
                          ${values.roles.includes(role) ? ' checked' : ''}
                        /><label for="role-${role.replace(':', '-')}">${role}</label>
                      </li>`,
                  )}
                </ul>
                ${roleErrors.length > 0 ? html`<p class="error" id="field-roles-error">Roles ${roleErrors.join('; ')}.</p>` : ''}
              </fieldset>
              ${field({
                name: 'applications',
                label: 'Restrict to applications',
                hint:
                  viewer.applications === null
                    ? 'client_ids separated by spaces or commas; empty: every application.'
                    : `client_ids separated by spaces or commas, among ${viewer.applications.join(', ')}.`,
                errors,
                control: (attributes) =>
                  html`<input
                    ${attributes}
                    value="${values.applications}"
                    autocomplete="off"
                    spellcheck="false"
                  />`,
              })}
              ${field({
                name: 'expires_at',
                label: 'Expires at',
                hint: 'RFC 3339, e.g. 2027-01-31T00:00:00Z; empty: never.',
                errors,
                control: (attributes) =>
                  html`<input
                    ${attributes}
                    value="${values.expires_at}"
                    autocomplete="off"
                    spellcheck="false"
                  />`,
              })}
              <button type="submit">Create key</button>
            </form>`
          : ''
      }`,
  });
}

/** The secret of a new or rotated key: shown in this response only. */
export function secretPage(
  viewer: Viewer,
  key: ApiKeyRecord,
  secret: string,
  rotated: boolean,
): Html {
  return page({
    title: rotated ? 'Key rotated' : 'Key created',
    viewer,
    section: 'api-keys',
    body: html`<h1>${rotated ? `New secret for “${key.name}”` : `Key “${key.name}” created`}</h1>
      <div class="card secret" hx-history="false">
        <p role="status">
          <strong>Copy the secret now: it is shown this once</strong> and Tessera keeps only its
          digest.${
            rotated && key.previousExpiresAt !== null
              ? ` The previous secret keeps working until ${formatTime(key.previousExpiresAt)}.`
              : ''
          }
        </p>
        ${secretField('Secret', secret)}
        <p>
          Roles: ${key.roles.join(', ')} · applications:
          ${key.applications === null ? 'all' : key.applications.join(', ')}
        </p>
      </div>
      <p><a href="/console/api-keys">Back to the API keys</a></p>`,
  });
}
