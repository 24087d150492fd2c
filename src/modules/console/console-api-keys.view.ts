import { ROLES } from '../../roles.js';
import type { ApiKeyRecord } from '../../store/store.js';
import { confirmPage } from './console-confirm.view.js';
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
import { type Html, html } from './html.js';

export interface ApiKeyFormValues {
  name: string;
  roles: string[];
  applications: string;
  /** A lifetime from EXPIRY_CHOICES, '' for never, or 'at' for the date and time given. */
  expires: string;
  /** A date and time (UTC) from the browser's picker, when `expires` is 'at'. */
  expires_at: string;
}

export const API_KEY_FIELDS = ['name', 'roles', 'applications', 'expires', 'expires_at'];

/** The lifetimes offered for a new key, in days. */
export const EXPIRY_CHOICES: readonly [string, string, number][] = [
  ['1d', 'in 1 day', 1],
  ['7d', 'in 7 days', 7],
  ['30d', 'in 30 days', 30],
  ['90d', 'in 90 days', 90],
  ['365d', 'in 1 year', 365],
];

/** What the list knows beyond the keys themselves. */
export interface ApiKeyListView {
  keys: ApiKeyRecord[];
  includeRevoked: boolean;
  next: string | null;
  paged: boolean;
  now: number;
  /** The working administrator keys (unrestricted, every role). */
  administratorKeyIds: readonly string[];
  form: { values: ApiKeyFormValues; errors: FieldErrors; message: string | null };
}

function keyState(key: ApiKeyRecord, now: number): 'active' | 'expired' | 'revoked' {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'active';
}

function stateCell(key: ApiKeyRecord, now: number): Html {
  const state = keyState(key, now);
  if (state === 'revoked') {
    return html`<span class="badge">revoked</span><br /><span class="subtle"
        >${formatTime(key.revokedAt)}</span
      >`;
  }
  return html`${state}`;
}

/** Why a key cannot be revoked now, or null. */
export function revocationRefusal(key: ApiKeyRecord, administratorKeyIds: readonly string[]) {
  return administratorKeyIds.length === 1 && administratorKeyIds[0] === key.id
    ? 'This is the last working key with every role and no application restriction: revoking it would leave nobody able to administer Tessera. Create another such key first.'
    : null;
}

export function apiKeysPage(viewer: Viewer, view: ApiKeyListView, notice: string | null): Html {
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
        ${tableBox(
          'API keys',
          html`<table>
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
                const refusal = revocationRefusal(key, view.administratorKeyIds);
                return html`<tr id="key-${key.id}">
                  <td>
                    ${key.name}${key.id === viewer.keyId ? html` <span class="tag">this key</span>` : ''}<br /><span
                      class="subtle mono"
                      >${key.id}</span
                    >
                  </td>
                  <td>
                    <ul class="chip-list">
                      ${key.roles.map((role) => html`<li class="chip">${role}</li>`)}
                    </ul>
                  </td>
                  <td>${key.applications === null ? 'all' : key.applications.join(', ')}</td>
                  <td>${formatTime(key.createdAt)}</td>
                  <td>${key.expiresAt === null ? 'never' : formatTime(key.expiresAt)}</td>
                  <td>${formatTime(key.lastUsedAt)}</td>
                  <td>${stateCell(key, view.now)}</td>
                  ${
                    writable
                      ? html`<td class="row-actions">
                          ${
                            state === 'active'
                              ? html`<form
                                    method="post"
                                    action="/console/api-keys/${key.id}/rotate"
                                  >
                                    ${csrfField(viewer)}<button
                                      type="submit"
                                      class="secondary"
                                      aria-label="Rotate key ${key.name}"
                                    >
                                      Rotate
                                    </button>
                                  </form>
                                  ${
                                    refusal === null
                                      ? html`<a
                                          class="button destructive"
                                          href="/console/api-keys/${key.id}/revoke"
                                          aria-label="Revoke key ${key.name}…"
                                          >Revoke…</a
                                        >`
                                      : html`<span class="subtle">last administrator key</span>`
                                  }`
                              : ''
                          }
                        </td>`
                      : ''
                  }
                </tr>`;
              })}
            </tbody>
          </table>`,
        )}
        <nav class="pager" aria-label="Pages">
          ${view.paged ? html`<a href="${link(null)}">First page</a>` : ''}
          ${view.next !== null ? html`<a href="${link(view.next)}" rel="next">Next page</a>` : ''}
        </nav>
      </section>
      ${writable ? createKeyForm(viewer, values, errors, roleErrors, view.form.message) : ''}`,
  });
}

function createKeyForm(
  viewer: Viewer,
  values: ApiKeyFormValues,
  errors: FieldErrors,
  roleErrors: string[],
  message: string | null,
): Html {
  return html`<form method="post" action="/console/api-keys" class="card" novalidate>
    <h2>Create a key</h2>
    ${formErrors(errors, API_KEY_FIELDS, message)} ${csrfField(viewer)}
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
    <div class="field-row">
      ${field({
        name: 'expires',
        label: 'Expires',
        errors,
        control: (attributes) =>
          html`<select ${attributes}>
            <option value="" ${values.expires === '' ? ' selected' : ''}>never</option>
            ${EXPIRY_CHOICES.map(
              ([value, label]) =>
                html`<option value="${value}" ${values.expires === value ? ' selected' : ''}>
                  ${label}
                </option>`,
            )}
            <option value="at" ${values.expires === 'at' ? ' selected' : ''}>
              at the date and time below
            </option>
          </select>`,
      })}
      ${field({
        name: 'expires_at',
        label: 'Date and time (UTC)',
        hint: 'Used when "Expires" says so.',
        errors,
        control: (attributes) =>
          html`<input ${attributes} type="datetime-local" value="${values.expires_at}" />`,
      })}
    </div>
    <button type="submit">Create key</button>
  </form>`;
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
          ${key.applications === null ? 'all' : key.applications.join(', ')} · expires:
          ${key.expiresAt === null ? 'never' : formatTime(key.expiresAt)}
        </p>
      </div>
      <p><a href="/console/api-keys">Back to the API keys</a></p>`,
  });
}

/** Asks before revoking a key: what stops working, and whether this session ends with it. */
export function revokeKeyPage(
  viewer: Viewer,
  key: ApiKeyRecord,
  administratorKeyIds: readonly string[],
  message: string | null,
): Html {
  const consequences = [
    html`Every request with this key is refused from now on, on every instance within a second.`,
    html`It cannot be undone. The record stays, with the time of revocation, for the audit trail.`,
  ];
  if (key.id === viewer.keyId) {
    consequences.unshift(
      html`<strong>You are signed in with this key:</strong> revoking it ends this session, and
        every other session of it.`,
    );
  }
  return confirmPage(viewer, {
    title: `Revoke key “${key.name}”?`,
    section: 'api-keys',
    crumbs: html`<a href="/console/api-keys">API keys</a>`,
    subject: html`${key.name}${key.id === viewer.keyId ? html` <span class="tag">this key</span>` : ''}
      <span class="subtle"
        >${key.roles.length} roles ·
        ${key.applications === null ? 'all applications' : key.applications.join(', ')}</span
      >`,
    consequences,
    refusal:
      key.revokedAt !== null
        ? `This key was revoked at ${formatTime(key.revokedAt)}.`
        : revocationRefusal(key, administratorKeyIds),
    message,
    action: `/console/api-keys/${key.id}/revoke`,
    button: `Revoke key ${key.name}`,
    back: { href: '/console/api-keys', label: 'Back to the API keys' },
  });
}
