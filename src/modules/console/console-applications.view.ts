import type { ApplicationRecord } from '../../store/store.js';
import type { Evaluation } from '../tokens/token-exchange.service.js';
import {
  type FieldErrors,
  type Viewer,
  can,
  csrfField,
  field,
  formErrors,
  formatTime,
  applicationSection,
  applicationsCrumb,
  page,
  tableBox,
} from './console-layout.view.js';
import {
  type AuthorizationFormView,
  type DecisionChoices,
  type DecisionDryRunView,
  authorizationSection,
  decisionSection,
} from './console-decisions.view.js';
import { type Html, html } from './html.js';

export interface ApplicationListView {
  prefix: string;
  prefixErrors: FieldErrors;
  items: ApplicationRecord[];
  /** The client_id to continue after, when there is a next page. */
  next: string | null;
  /** Whether this is a later page. */
  paged: boolean;
}

export function applicationsPage(
  viewer: Viewer,
  view: ApplicationListView,
  notice: string | null,
): Html {
  const query = (after: string | null) => {
    const params = new URLSearchParams();
    if (view.prefix !== '') params.set('prefix', view.prefix);
    if (after !== null) params.set('after', after);
    const text = params.toString();
    return `/console/applications${text === '' ? '' : `?${text}`}`;
  };
  return page({
    title: 'Applications',
    viewer,
    section: 'applications',
    notice,
    body: html`<div class="heading">
        <h1>Applications</h1>
        ${can(viewer, 'applications:write') ? html`<a class="button" href="/console/applications/new">New application</a>` : ''}
      </div>
      <form
        method="get"
        action="/console/applications"
        class="search"
        role="search"
        hx-get="/console/applications"
        hx-trigger="input changed delay:300ms from:#field-prefix, submit"
        hx-target="#application-list"
        hx-select="#application-list"
        hx-swap="outerHTML"
        hx-push-url="true"
      >
        ${field({
          name: 'prefix',
          label: 'client_id starts with',
          errors: view.prefixErrors,
          control: (attributes) =>
            html`<input
              ${attributes}
              type="search"
              value="${view.prefix}"
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        <button type="submit" class="secondary">Search</button>
      </form>
      <section id="application-list" aria-label="Applications found">
        ${
          view.items.length === 0
            ? html`<p class="empty">
                ${view.prefix === '' ? 'No applications yet.' : 'No application matches.'}
              </p>`
            : tableBox(
                'Applications',
                html`<table>
                  <caption class="visually-hidden">
                    Applications, by client_id
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">client_id</th>
                      <th scope="col">Display name</th>
                      <th scope="col">Mode</th>
                      <th scope="col">Token lifetime</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${view.items.map(
                      (application) =>
                        html`<tr>
                          <td>
                            <a href="/console/applications/${application.clientId}"
                              >${application.clientId}</a
                            >
                          </td>
                          <td>${application.displayName}</td>
                          <td>${application.mode}</td>
                          <td>${application.jwtExpirationInMinutes} min</td>
                          <td>${formatTime(application.updatedAt)}</td>
                        </tr>`,
                    )}
                  </tbody>
                </table>`,
              )
        }
        <nav class="pager" aria-label="Pages">
          ${view.paged ? html`<a href="${query(null)}">First page</a>` : ''}
          ${view.next !== null ? html`<a href="${query(view.next)}" rel="next">Next page</a>` : ''}
        </nav>
      </section>`,
  });
}

/** The values a form shows: what was sent, or the stored application. */
export type ApplicationFormValues = Record<
  | 'client_id'
  | 'display_name'
  | 'description'
  | 'mode'
  | 'jwt_expiration_in_minutes'
  | 'scim_provider'
  | 'external_token_validation',
  string
>;

export function formValuesOf(application: ApplicationRecord): ApplicationFormValues {
  return {
    client_id: application.clientId,
    display_name: application.displayName,
    description: application.description,
    mode: application.mode,
    jwt_expiration_in_minutes: String(application.jwtExpirationInMinutes),
    scim_provider: application.scimProvider ?? '',
    external_token_validation:
      application.externalTokenValidation === null
        ? ''
        : JSON.stringify(application.externalTokenValidation, null, 2),
  };
}

export const APPLICATION_FIELDS = [
  'client_id',
  'display_name',
  'description',
  'mode',
  'jwt_expiration_in_minutes',
  'scim_provider',
  'external_token_validation',
];

function applicationFields(
  values: ApplicationFormValues,
  errors: FieldErrors,
  creating: boolean,
): Html {
  return html`${
    creating
      ? field({
          name: 'client_id',
          label: 'client_id',
          hint: '1–128 characters of A–Z a–z 0–9 . _ ~ -; it cannot change later.',
          errors,
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${values.client_id}"
              required
              autocomplete="off"
              spellcheck="false"
            />`,
        })
      : ''
  }
  ${field({
    name: 'display_name',
    label: 'Display name',
    errors,
    control: (attributes) => html`<input ${attributes} value="${values.display_name}" required />`,
  })}
  ${field({
    name: 'description',
    label: 'Description',
    errors,
    control: (attributes) =>
      html`<textarea ${attributes} rows="2">${values.description}</textarea>`,
  })}
  ${field({
    name: 'mode',
    label: 'Mode',
    hint: 'internal: users are enrolled beforehand; external: they register on first login.',
    errors,
    control: (attributes) =>
      html`<select ${attributes}>
        ${['internal', 'external'].map(
          (mode) =>
            html`<option value="${mode}" ${values.mode === mode ? ' selected' : ''}>
              ${mode}
            </option>`,
        )}
      </select>`,
  })}
  ${field({
    name: 'jwt_expiration_in_minutes',
    label: 'Access-token lifetime (minutes)',
    hint: '1 to 43200 (30 days).',
    errors,
    control: (attributes) =>
      html`<input ${attributes} value="${values.jwt_expiration_in_minutes}" inputmode="numeric" />`,
  })}
  ${field({
    name: 'scim_provider',
    label: 'SCIM provider label',
    hint: 'The provider of the users a SCIM client provisions; empty turns SCIM off.',
    errors,
    control: (attributes) =>
      html`<input
        ${attributes}
        value="${values.scim_provider}"
        autocomplete="off"
        spellcheck="false"
      />`,
  })}
  ${field({
    name: 'external_token_validation',
    label: 'External token validation (JSON)',
    hint: 'A JSON object keyed by provider label, or empty for none.',
    errors,
    control: (attributes) =>
      html`<textarea ${attributes} rows="8" class="code" spellcheck="false">
${values.external_token_validation}</textarea>`,
  })}`;
}

export function newApplicationPage(
  viewer: Viewer,
  values: ApplicationFormValues,
  errors: FieldErrors,
  message: string | null,
): Html {
  return page({
    title: 'New application',
    viewer,
    section: 'applications',
    body: html`<p class="crumbs">${applicationsCrumb(viewer)}</p>
      <h1>New application</h1>
      <form method="post" action="/console/applications" class="card" novalidate>
        ${formErrors(errors, APPLICATION_FIELDS, message)} ${csrfField(viewer)}
        ${applicationFields(values, errors, true)}
        <button type="submit">Create application</button>
      </form>`,
  });
}

export interface ApplicationView {
  application: ApplicationRecord;
  values: ApplicationFormValues;
  errors: FieldErrors;
  message: string | null;
  deleteError: string | null;
  dryRun: { token: string; evaluation: Evaluation | null; error: string | null } | null;
  authorization: AuthorizationFormView;
  /** The decision dry run, for a key holding decisions:read. */
  decision: { view: DecisionDryRunView; choices: DecisionChoices } | null;
}

export function applicationPage(
  viewer: Viewer,
  view: ApplicationView,
  notice: string | null,
): Html {
  const { application } = view;
  const base = `/console/applications/${application.clientId}`;
  const writable = can(viewer, 'applications:write');
  return page({
    title: application.clientId,
    viewer,
    section: applicationSection(viewer),
    notice,
    body: html`<p class="crumbs">${applicationsCrumb(viewer)}</p>
      <div class="heading">
        <h1>${application.displayName} <span class="subtle">${application.clientId}</span></h1>
        ${can(viewer, 'users:read') ? html`<a class="button" href="${base}/users">Users</a>` : ''}
      </div>
      <p class="meta">
        Created ${formatTime(application.createdAt)} · updated ${formatTime(application.updatedAt)}
      </p>
      ${
        writable
          ? html`<form method="post" action="${base}" class="card" novalidate>
              <h2>Settings</h2>
              ${formErrors(view.errors, APPLICATION_FIELDS, view.message)} ${csrfField(viewer)}
              <input type="hidden" name="etag" value="${application.etag}" />
              ${applicationFields(view.values, view.errors, false)}
              <button type="submit">Save changes</button>
            </form>`
          : html`<section class="card">
              <h2>Settings</h2>
              <dl class="facts">
                <dt>Mode</dt>
                <dd>${application.mode}</dd>
                <dt>Access-token lifetime</dt>
                <dd>${application.jwtExpirationInMinutes} minutes</dd>
                <dt>Description</dt>
                <dd>${application.description || '—'}</dd>
                <dt>External token validation</dt>
                <dd><pre>${view.values.external_token_validation || 'none'}</pre></dd>
              </dl>
            </section>`
      }
      ${authorizationSection(viewer, base, view.authorization, application.etag, writable)}
      ${
        view.decision === null
          ? ''
          : decisionSection(viewer, base, view.decision.view, view.decision.choices)
      }
      ${dryRunSection(viewer, base, view.dryRun)}
      ${
        writable
          ? html`<form method="post" action="${base}/delete" class="card danger" novalidate>
              <h2>Delete this application</h2>
              <p>This deletes the application and all its users at once. It cannot be undone.</p>
              ${csrfField(viewer)}
              <div class="field${view.deleteError ? ' has-error' : ''}">
                <label for="field-confirm"
                  >Type <strong>${application.clientId}</strong> to confirm</label
                >
                <input
                  id="field-confirm"
                  name="confirm"
                  autocomplete="off"
                  spellcheck="false"
                  ${
                    view.deleteError
                      ? html` aria-invalid="true" aria-describedby="field-confirm-error"`
                      : ''
                  }
                />
                ${view.deleteError ? html`<p class="error" id="field-confirm-error">${view.deleteError}</p>` : ''}
              </div>
              <button type="submit" class="destructive">Delete application</button>
            </form>`
          : ''
      }`,
  });
}

function dryRunSection(viewer: Viewer, base: string, dryRun: ApplicationView['dryRun']): Html {
  const evaluation = dryRun?.evaluation ?? null;
  return html`<form
    method="post"
    action="${base}/dry-run"
    class="card"
    novalidate
    hx-post="${base}/dry-run"
    hx-target="#dry-run"
    hx-select="#dry-run"
    hx-swap="outerHTML"
  >
    <section id="dry-run" aria-live="polite">
      <h2>Token dry run</h2>
      <p class="hint" id="field-token-hint">
        Paste an ID token from an outside provider: every check of an exchange runs; nothing is
        issued or created.
      </p>
      ${csrfField(viewer)}
      <div class="field${dryRun?.error ? ' has-error' : ''}">
        <label for="field-token">ID token</label>
        <textarea
          id="field-token"
          name="token"
          rows="3"
          class="code"
          spellcheck="false"
          aria-describedby="field-token-hint${dryRun?.error ? ' field-token-error' : ''}"
          ${dryRun?.error ? html` aria-invalid="true"` : ''}
        >
${dryRun?.token ?? ''}</textarea>
        ${dryRun?.error ? html`<p class="error" id="field-token-error">ID token ${dryRun.error}.</p>` : ''}
      </div>
      <button type="submit" class="secondary">Check token</button>
      ${
        evaluation === null
          ? ''
          : html`<div class="result ${evaluation.failure === null ? 'ok' : 'failed'}" role="status">
              <p>
                <strong
                  >${evaluation.failure === null ? 'Valid' : `Failed check: ${evaluation.failure.check}`}</strong
                >
                —
                ${
                  evaluation.failure?.detail ??
                  (evaluation.existing !== null
                    ? 'an exchange would issue an access token for this existing user.'
                    : 'an exchange would register this user and issue an access token.')
                }
              </p>
              ${
                evaluation.inspection.claims === null
                  ? ''
                  : html`<details>
                      <summary>Claims</summary>
                      <pre>${JSON.stringify(evaluation.inspection.claims, null, 2)}</pre>
                    </details>`
              }
            </div>`
      }
    </section>
  </form>`;
}
