import type { ImportErrorRecord, ImportJobRecord } from '../../store/store.js';
import type { ImportJob } from '../imports/imports.schemas.js';
import {
  type FieldErrors,
  type Viewer,
  applicationCrumb,
  applicationSection,
  applicationsCrumb,
  can,
  csrfField,
  field,
  formErrors,
  formatTime,
  page,
  tableBox,
} from './console-layout.view.js';
import { type Html, html } from './html.js';

export const IMPORT_FIELDS = ['format', 'keycloak_client', 'on_conflict', 'provider_map', 'file'];

export type ImportFormValues = Record<
  'format' | 'keycloak_client' | 'on_conflict' | 'provider_map',
  string
>;

const FORMATS: [string, string][] = [
  ['tessera', 'Tessera (an export of this or another Tessera)'],
  ['auth0', 'Auth0 (its user export, NDJSON)'],
  ['keycloak', 'Keycloak (a realm export, or one user a line)'],
];

const CONFLICTS: [string, string][] = [
  ['update', 'update it'],
  ['skip', 'skip it'],
  ['fail', 'report its line as an error'],
];

function usersBase(clientId: string): string {
  return `/console/applications/${clientId}/users`;
}

function crumbs(viewer: Viewer, clientId: string): Html {
  return html`<p class="crumbs">
    ${applicationsCrumb(viewer)} › ${applicationCrumb(viewer, clientId)} ›
    <a href="${usersBase(clientId)}">Users</a>
  </p>`;
}

function select(attributes: Html, options: [string, string][], chosen: string): Html {
  return html`<select ${attributes}>
    ${options.map(
      ([value, label]) =>
        html`<option value="${value}" ${chosen === value ? ' selected' : ''}>${label}</option>`,
    )}
  </select>`;
}

/** The upload form: a file, its format and what to do with existing users; a dry run first. */
export function importFormPage(
  viewer: Viewer,
  clientId: string,
  values: ImportFormValues,
  errors: FieldErrors,
  message: string | null,
): Html {
  const base = usersBase(clientId);
  return page({
    title: `Import users into ${clientId}`,
    viewer,
    section: applicationSection(viewer),
    body: html`${crumbs(viewer, clientId)}
      <h1>Import users</h1>
      <p>
        Every import starts as a dry run: each line of the file is read and checked, and nothing is
        written. You see what it would do and which lines are wrong, then confirm to import the same
        file (it is not sent again).
      </p>
      <form
        method="post"
        action="${base}/import"
        enctype="multipart/form-data"
        class="card"
        novalidate
      >
        ${formErrors(errors, IMPORT_FIELDS, message)} ${csrfField(viewer)}
        ${field({
          name: 'format',
          label: 'Format',
          errors,
          control: (attributes) => select(attributes, FORMATS, values.format),
        })}
        ${field({
          name: 'keycloak_client',
          label: 'Keycloak client',
          errors,
          hint: `Keycloak only: the client whose clientRoles become roles; empty: ${clientId}`,
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${values.keycloak_client}"
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        ${field({
          name: 'on_conflict',
          label: 'When a user exists and differs',
          errors,
          control: (attributes) => select(attributes, CONFLICTS, values.on_conflict),
        })}
        ${field({
          name: 'provider_map',
          label: 'Provider map',
          errors,
          hint: 'Optional: source provider names to Tessera labels, over the defaults, e.g. acme-saml:acme_saml',
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${values.provider_map}"
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        ${field({
          name: 'file',
          label: 'File',
          errors,
          hint: 'NDJSON, one user a line; for Keycloak also a realm export (.json)',
          control: (attributes) =>
            html`<input
              ${attributes}
              type="file"
              accept=".ndjson,.jsonl,.json,.txt,application/x-ndjson,application/json,text/plain"
            />`,
        })}
        <button type="submit">Check the file (dry run)</button>
      </form>`,
  });
}

export interface ImportJobView {
  job: ImportJobRecord;
  resource: ImportJob;
  errors: ImportErrorRecord[];
  /** Where the next page of error lines starts, when there is one. */
  nextErrors: string | null;
  /** A dry run whose file this session may import without sending it again. */
  uploadKept: boolean;
  /** The message of a confirmation or cancellation that could not be done. */
  message: string | null;
}

function jobTitle(job: ImportJobRecord): string {
  return job.dryRun ? 'Dry run of an import' : 'Import';
}

/** A job's page: its state and counts (followed while it runs), its actions, its error lines. */
export function importJobPage(viewer: Viewer, view: ImportJobView, notice: string | null): Html {
  const { job } = view;
  return page({
    title: `${jobTitle(job)} into ${job.clientId}`,
    viewer,
    section: applicationSection(viewer),
    notice,
    body: html`${crumbs(viewer, job.clientId)}
      <h1>${jobTitle(job)} <span class="subtle">${job.format} file</span></h1>
      ${importJobSection(viewer, view)}`,
  });
}

const STATES: Record<ImportJobRecord['status'], string> = {
  running: 'running',
  succeeded: 'finished',
  failed: 'failed',
  cancelled: 'cancelled',
};

/**
 * The part of a job's page that changes while it runs. While it runs, htmx fetches it again
 * every two seconds (a passive request: a page left open does not keep its session alive);
 * the answer for a finished job stops asking.
 */
export function importJobSection(viewer: Viewer, view: ImportJobView): Html {
  const { job, resource } = view;
  const running = job.status === 'running';
  const jobUrl = `${usersBase(job.clientId)}/imports/${job.id}`;
  const would = job.dryRun ? 'would be ' : '';
  const counts: [string, number][] = [
    [`Lines read`, job.counts.read],
    [`Users ${would}created`, job.counts.created],
    [`Users ${would}updated`, job.counts.updated],
    ['Unchanged', job.counts.unchanged],
    [`Existing users ${would}skipped`, job.counts.skipped],
    ['Invalid lines', job.counts.invalid],
  ];
  return html`<section
    id="import-job"
    class="import-job"
    aria-label="The ${job.dryRun ? 'dry run' : 'import'}"
    ${running ? html`hx-get="${jobUrl}/progress" hx-trigger="every 2s" hx-swap="outerHTML"` : ''}
  >
    ${view.message === null ? '' : html`<div class="alert" role="alert"><p>${view.message}</p></div>`}
    <div class="card">
      <p class="import-state" role="status">
        <span class="badge state-${job.status}">${STATES[job.status]}</span>
        ${running ? `${resource.lines_per_second.toLocaleString('en')} lines/s so far` : `${resource.lines_per_second.toLocaleString('en')} lines/s`}
        · ${resource.elapsed_seconds.toFixed(1)} s
        ${running ? html` · <a href="${jobUrl}">Refresh</a>` : ''}
      </p>
      ${job.failure === null ? '' : html`<p class="error">${job.failure}</p>`}
      <dl class="facts counts">
        ${counts.map(
          ([label, count]) =>
            html`<dt>${label}</dt>
              <dd>${count.toLocaleString('en')}</dd>`,
        )}
        <dt>When a user exists and differs</dt>
        <dd>${CONFLICTS.find(([value]) => value === job.onConflict)?.[1] ?? job.onConflict}</dd>
        <dt>Started</dt>
        <dd>${formatTime(job.createdAt)}</dd>
        <dt>Finished</dt>
        <dd>${formatTime(job.finishedAt)}</dd>
      </dl>
    </div>
    ${jobActions(viewer, view)} ${errorLines(view, jobUrl)}
  </section>`;
}

function jobActions(viewer: Viewer, view: ImportJobView): Html {
  const { job } = view;
  const jobUrl = `${usersBase(job.clientId)}/imports/${job.id}`;
  const writable = can(viewer, 'users:write');
  if (job.status === 'running') {
    return writable
      ? html`<form method="post" action="${jobUrl}/cancel" class="card import-cancel">
          ${csrfField(viewer)}
          <p>
            Cancelling stops the ${job.dryRun ? 'dry run' : 'import'} at its next line;
            ${job.dryRun ? 'nothing was written.' : 'what it wrote stays written.'}
          </p>
          <button type="submit" class="secondary">
            Cancel the ${job.dryRun ? 'dry run' : 'import'}
          </button>
        </form>`
      : html``;
  }
  if (!job.dryRun) {
    return html`<p><a href="${usersBase(job.clientId)}">See the users of ${job.clientId}</a></p>`;
  }
  if (job.status === 'succeeded' && view.uploadKept && writable) {
    return html`<form method="post" action="${jobUrl}/run" class="card">
      <h2>Import this file</h2>
      ${csrfField(viewer)}
      <p>
        ${goodLines(job)} The import reads the same file again, as the dry run did; users changed
        meanwhile are taken as they are then.
      </p>
      <button type="submit">Import the users</button>
    </form>`;
  }
  return html`<p>
    ${
      job.status === 'succeeded'
        ? 'This file is no longer kept here (it is kept for an hour, by the server that received it, for the session that sent it).'
        : `The dry run ${STATES[job.status]}.`
    }
    <a href="${usersBase(job.clientId)}/import">Upload a file</a>
  </p>`;
}

/** "9 of 13 lines are good; the 4 invalid lines are left out." */
function goodLines(job: ImportJobRecord): string {
  const { read, invalid } = job.counts;
  const good = `${(read - invalid).toLocaleString('en')} of ${read.toLocaleString('en')} lines are good`;
  return invalid === 0
    ? `${good}.`
    : `${good}; the ${invalid.toLocaleString('en')} invalid ${invalid === 1 ? 'line is' : 'lines are'} left out.`;
}

function errorLines(view: ImportJobView, jobUrl: string): Html {
  const { job } = view;
  if (job.counts.invalid === 0 && view.errors.length === 0) {
    return job.status === 'running' ? html`` : html`<p class="empty">No line is invalid.</p>`;
  }
  return html`<h2>Invalid lines</h2>
    ${
      view.errors.length === 0
        ? html`<p class="empty">None on this page.</p>`
        : tableBox(
            'Invalid lines',
            html`<table class="import-errors">
              <caption class="visually-hidden">
                Each error of an invalid line, by line number
              </caption>
              <thead>
                <tr>
                  <th scope="col">Line</th>
                  <th scope="col">Where</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                ${view.errors.map(
                  (error) =>
                    html`<tr>
                      <td>${error.line}</td>
                      <td class="mono">${error.pointer === '' ? '(the line)' : error.pointer}</td>
                      <td>${error.detail}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`,
          )
    }
    <nav class="pager" aria-label="Pages of invalid lines">
      ${
        view.nextErrors === null
          ? ''
          : html`<a href="${jobUrl}?errors_after=${view.nextErrors}" rel="next"
              >Next invalid lines</a
            >`
      }
    </nav>`;
}
