import type { UserRecord } from '../../store/store.js';
import {
  type FieldErrors,
  type Viewer,
  can,
  csrfField,
  field,
  formErrors,
  formatTime,
  applicationCrumb,
  applicationSection,
  applicationsCrumb,
  page,
  tableBox,
} from './console-layout.view.js';
import { type Html, html } from './html.js';

export const USER_FILTERS = ['provider', 'email', 'role', 'scope', 'active'] as const;
export type UserFilterValues = Record<(typeof USER_FILTERS)[number], string>;

export interface UserListView {
  clientId: string;
  displayName: string;
  filters: UserFilterValues;
  filterErrors: FieldErrors;
  items: UserRecord[];
  /** The cursor of the next page, when there is one. */
  next: string | null;
  paged: boolean;
}

function chips(values: readonly string[]): Html {
  return values.length === 0
    ? html`<span class="subtle">none</span>`
    : html`<ul class="chip-list">
        ${values.map((value) => html`<li class="chip">${value}</li>`)}
      </ul>`;
}

export function usersPage(viewer: Viewer, view: UserListView, notice: string | null): Html {
  const base = `/console/applications/${view.clientId}/users`;
  const link = (cursor: string | null) => {
    const params = new URLSearchParams();
    for (const name of USER_FILTERS)
      if (view.filters[name] !== '') params.set(name, view.filters[name]);
    if (cursor !== null) params.set('after', cursor);
    const text = params.toString();
    return `${base}${text === '' ? '' : `?${text}`}`;
  };
  const filterField = (name: (typeof USER_FILTERS)[number], label: string, hint?: string) =>
    field({
      name,
      label,
      errors: view.filterErrors,
      ...(hint === undefined ? {} : { hint }),
      control: (attributes) =>
        html`<input
          ${attributes}
          value="${view.filters[name]}"
          autocomplete="off"
          spellcheck="false"
        />`,
    });
  const exportQuery = new URLSearchParams(
    Object.entries(view.filters).filter(([, value]) => value !== ''),
  ).toString();
  const exportLink = `${base}/export${exportQuery === '' ? '' : `?${exportQuery}`}`;
  return page({
    title: `Users of ${view.clientId}`,
    viewer,
    section: applicationSection(viewer),
    notice,
    body: html`<p class="crumbs">
        ${applicationsCrumb(viewer)} › ${applicationCrumb(viewer, view.clientId)}
      </p>
      <div class="heading">
        <h1>Users <span class="subtle">of ${view.displayName}</span></h1>
        ${
          can(viewer, 'users:write')
            ? html`<div class="heading-actions">
                <a class="button secondary" href="${base}/import">Import users</a>
                <a class="button" href="${base}/new">New user</a>
              </div>`
            : ''
        }
      </div>
      <form method="get" action="${base}" class="filters" role="search" aria-label="Filter users">
        ${filterField('provider', 'Provider', 'e.g. google_oauth2')}
        ${filterField('email', 'E-mail', 'exact, any case')} ${filterField('role', 'Role')}
        ${filterField('scope', 'Scope', 'dimension:value')}
        ${field({
          name: 'active',
          label: 'State',
          errors: view.filterErrors,
          control: (attributes) =>
            html`<select ${attributes}>
              ${[
                ['', 'any'],
                ['true', 'active'],
                ['false', 'inactive'],
              ].map(
                ([value, label]) =>
                  html`<option value="${value}" ${view.filters.active === value ? ' selected' : ''}>
                    ${label}
                  </option>`,
              )}
            </select>`,
        })}
        <div class="actions">
          <button type="submit" class="secondary">Filter</button> <a href="${base}">Clear</a>
        </div>
      </form>
      <section id="user-list" aria-label="Users found">
        ${
          view.items.length === 0
            ? html`<p class="empty">No user matches.</p>`
            : tableBox(
                'Users',
                html`<table>
                  <caption class="visually-hidden">
                    Users, by provider and identifier
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Provider</th>
                      <th scope="col">Identifier</th>
                      <th scope="col">Name</th>
                      <th scope="col">E-mail</th>
                      <th scope="col">Roles</th>
                      <th scope="col">Scopes</th>
                      <th scope="col">State</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${view.items.map(
                      (user) =>
                        html`<tr>
                          <td>${user.provider}</td>
                          <td><a href="${base}/${user.id}">${user.identifier}</a></td>
                          <td>${user.name}</td>
                          <td>${user.email}</td>
                          <td>${chips(user.roles)}</td>
                          <td>${chips(user.scopes)}</td>
                          <td>
                            ${user.active ? 'active' : html`<span class="badge">inactive</span>`}
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>`,
              )
        }
        <nav class="pager" aria-label="Pages">
          ${view.paged ? html`<a href="${link(null)}">First page</a>` : ''}
          ${view.next !== null ? html`<a href="${link(view.next)}" rel="next">Next page</a>` : ''}
        </nav>
        <p>
          <a href="${exportLink}" download>Export these users (NDJSON)</a>
          <span class="subtle">— every user the filters match, one a line, from one snapshot</span>
        </p>
      </section>`,
  });
}

export type UserFormValues = Record<
  'provider' | 'identifier' | 'name' | 'email' | 'locale' | 'avatar',
  string
> & { roles: string[]; scopes: string[]; roles_new: string; scopes_new: string };

export const USER_FIELDS = [
  'provider',
  'identifier',
  'name',
  'email',
  'locale',
  'avatar',
  'roles',
  'scopes',
];

export function userValuesOf(user: UserRecord): UserFormValues {
  return {
    provider: user.provider,
    identifier: user.identifier,
    name: user.name,
    email: user.email,
    locale: user.locale,
    avatar: user.avatar ?? '',
    roles: user.roles,
    scopes: user.scopes,
    roles_new: '',
    scopes_new: '',
  };
}

/** Roles or scopes as chips: each a checkbox to keep it, and a box to add more. */
function chipField(
  name: 'roles' | 'scopes',
  label: string,
  values: UserFormValues,
  errors: FieldErrors,
): Html {
  const fieldErrors = errors.get(name) ?? [];
  const hint =
    name === 'roles'
      ? 'Untick a role to remove it; type new ones separated by spaces.'
      : 'Each dimension:value; untick to remove, type new ones separated by spaces.';
  return html`<fieldset
    class="chips${fieldErrors.length > 0 ? ' has-error' : ''}"
    data-chips="${name}"
  >
    <legend>${label}</legend>
    <ul class="chip-list">
      ${values[name].map(
        (value, index) =>
          html`<li>
            <input
              type="checkbox"
              class="chip-box"
              id="${name}-${index}"
              name="${name}"
              value="${value}"
              checked
            /><label class="chip" for="${name}-${index}">${value}</label>
          </li>`,
      )}
    </ul>
    <label for="field-${name}_new">Add ${name}</label>
    <p class="hint" id="field-${name}-hint">${hint}</p>
    <input
      id="field-${name}_new"
      name="${name}_new"
      value="${values[`${name}_new`]}"
      autocomplete="off"
      spellcheck="false"
      aria-describedby="field-${name}-hint${fieldErrors.length > 0 ? ` field-${name}-error` : ''}"
      ${fieldErrors.length > 0 ? html` aria-invalid="true"` : ''}
    />
    ${fieldErrors.length > 0 ? html`<p class="error" id="field-${name}-error">${label}: ${fieldErrors.join('; ')}.</p>` : ''}
  </fieldset>`;
}

function userFields(values: UserFormValues, errors: FieldErrors, creating: boolean): Html {
  const text = (
    name: 'provider' | 'identifier' | 'name' | 'email' | 'locale' | 'avatar',
    label: string,
    hint?: string,
  ) =>
    field({
      name,
      label,
      errors,
      ...(hint === undefined ? {} : { hint }),
      control: (attributes) =>
        html`<input ${attributes} value="${values[name]}" spellcheck="false" />`,
    });
  return html`${creating ? html`${text('provider', 'Provider', '<idp>_<kind>, e.g. google_oauth2')}${text('identifier', 'Identifier', "The user's id at the provider")}` : ''}
  ${text('name', 'Name')} ${text('email', 'E-mail')}
  ${text('locale', 'Locale', 'A BCP 47 tag: en, pt-BR')}
  ${text('avatar', 'Avatar URL', 'Optional; an http: or https: URL')}
  ${chipField('roles', 'Roles', values, errors)} ${chipField('scopes', 'Scopes', values, errors)}`;
}

export function newUserPage(
  viewer: Viewer,
  clientId: string,
  values: UserFormValues,
  errors: FieldErrors,
  message: string | null,
): Html {
  const base = `/console/applications/${clientId}/users`;
  return page({
    title: 'New user',
    viewer,
    section: applicationSection(viewer),
    body: html`<p class="crumbs">
        ${applicationsCrumb(viewer)} › ${applicationCrumb(viewer, clientId)} ›
        <a href="${base}">Users</a>
      </p>
      <h1>New user</h1>
      <form method="post" action="${base}" class="card" novalidate>
        ${formErrors(errors, USER_FIELDS, message)} ${csrfField(viewer)}
        ${userFields(values, errors, true)}
        <button type="submit">Create user</button>
      </form>`,
  });
}

export function userPage(
  viewer: Viewer,
  clientId: string,
  user: UserRecord,
  form: { values: UserFormValues; errors: FieldErrors; message: string | null },
  notice: string | null,
  /** The user's history, for a key that may read events. */
  history: Html = html``,
): Html {
  const base = `/console/applications/${clientId}/users/${user.id}`;
  const writable = can(viewer, 'users:write');
  return page({
    title: user.name,
    viewer,
    section: applicationSection(viewer),
    notice,
    body: html`<p class="crumbs">
        ${applicationsCrumb(viewer)} › ${applicationCrumb(viewer, clientId)} ›
        <a href="/console/applications/${clientId}/users">Users</a>
      </p>
      <h1>${user.name} <span class="subtle">${user.provider} · ${user.identifier}</span></h1>
      <p class="meta">
        ${user.active ? 'Active' : 'Inactive (gets no access tokens)'} · created
        ${formatTime(user.createdAt)} · updated ${formatTime(user.updatedAt)}
      </p>
      ${
        writable
          ? html`<form method="post" action="${base}" class="card" novalidate>
                <h2>Profile, roles and scopes</h2>
                ${formErrors(form.errors, USER_FIELDS, form.message)} ${csrfField(viewer)}
                <input type="hidden" name="etag" value="${user.etag}" />
                ${userFields(form.values, form.errors, false)}
                <button type="submit">Save changes</button>
              </form>
              <form method="post" action="${base}/active" class="card">
                <h2>${user.active ? 'Deactivate' : 'Activate'}</h2>
                <p>
                  ${user.active ? 'An inactive user is kept but gets no access tokens.' : 'An active user gets access tokens again.'}
                </p>
                ${csrfField(viewer)}
                <input type="hidden" name="active" value="${user.active ? 'false' : 'true'}" />
                <button type="submit" class="secondary">
                  ${user.active ? 'Deactivate user' : 'Activate user'}
                </button>
              </form>
              <form method="post" action="${base}/delete" class="card danger">
                <h2>Delete this user</h2>
                ${csrfField(viewer)}
                <div class="field">
                  <label
                    ><input type="checkbox" name="confirm" value="yes" required /> I understand this
                    cannot be undone</label
                  >
                </div>
                <button type="submit" class="destructive">Delete user</button>
              </form>`
          : html`<section class="card">
              <dl class="facts">
                <dt>E-mail</dt>
                <dd>${user.email}</dd>
                <dt>Locale</dt>
                <dd>${user.locale}</dd>
                <dt>Roles</dt>
                <dd>${chips(user.roles)}</dd>
                <dt>Scopes</dt>
                <dd>${chips(user.scopes)}</dd>
              </dl>
            </section>`
      }
      ${history}`,
  });
}
