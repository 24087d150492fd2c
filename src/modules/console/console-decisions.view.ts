// An application's authorization in the console: the model (who may take which action) as
// checked JSON, and the dry run "would this user be allowed?", which asks the same decision
// the AuthZEN endpoints answer and says why.

import type { ApplicationRecord, UserRecord } from '../../store/store.js';
import type { AuthorizationModel } from '../applications/applications.schemas.js';
import type { Decision } from '../authzen/authzen.service.js';
import {
  type FieldErrors,
  type Viewer,
  csrfField,
  field,
  formErrors,
} from './console-layout.view.js';
import { type Html, html } from './html.js';

/** The authorization form: the JSON as typed (or stored), its errors. */
export interface AuthorizationFormView {
  text: string;
  errors: FieldErrors;
  message: string | null;
}

export const AUTHORIZATION_FIELDS = ['authorization'];

export function authorizationTextOf(application: ApplicationRecord): string {
  return application.authorization === null
    ? ''
    : JSON.stringify(application.authorization, null, 2);
}

/** The dry run's fields, as typed. */
export type DecisionFormValues = Record<
  'subject' | 'action' | 'resource_type' | 'resource_id' | 'resource_properties',
  string
>;

export const DECISION_FIELDS = [
  'subject',
  'action',
  'resource_type',
  'resource_id',
  'resource_properties',
];

/** A dry run's answer: the decision, its reason in words, and the user it concerns. */
export interface DecisionOutcome {
  decision: Decision;
  explanation: string;
  user: UserRecord | null;
}

export interface DecisionDryRunView {
  values: DecisionFormValues;
  errors: FieldErrors;
  outcome: DecisionOutcome | null;
}

/** What the dry run's fields suggest: some of the application's users, the model's actions. */
export interface DecisionChoices {
  users: UserRecord[];
  actions: string[];
}

export function emptyDecisionForm(): DecisionFormValues {
  return { subject: '', action: '', resource_type: '', resource_id: '', resource_properties: '' };
}

const quoted = (text: string) => JSON.stringify(text);
const list = (names: readonly string[]) => names.map(quoted).join(', ');

/** Why the decision came out as it did, in the words an operator reads. */
export function explainDecision(
  model: AuthorizationModel | null,
  user: UserRecord | null,
  action: string,
  properties: Record<string, unknown> | undefined,
  decision: Decision,
): string {
  const grant =
    model !== null && Object.hasOwn(model.actions, action) ? model.actions[action] : undefined;
  const held = (roles: readonly string[] | undefined) =>
    (roles ?? []).filter((role) => user?.roles.includes(role));
  switch (decision.reason) {
    case 'role':
      return `the user holds ${list(held(grant?.roles))}, a role that may take ${quoted(action)} on any resource.`;
    case 'owner':
      return (
        `the user holds ${list(held(grant?.owner_roles))}, a role that may take ${quoted(action)} ` +
        `on what they own, and the resource's ${quoted(grant!.owner!.resource_property)} is the ` +
        `user's ${grant!.owner!.user_attribute}.`
      );
    case 'role_named_action':
      return `the application has no authorization model, and the user holds the role ${quoted(action)}.`;
    case 'unknown_application':
      return 'there is no such application.';
    case 'unknown_user':
      return 'no user of this application has this id (unknown users are always denied).';
    case 'inactive_user':
      return 'the user is inactive (inactive users are always denied).';
    case 'action_not_listed':
      return `${quoted(action)} is not an action of the application's authorization model.`;
    case 'no_role':
      return model === null
        ? `the application has no authorization model, and the user holds no role named ${quoted(action)}.`
        : `the user holds none of the roles that may take ${quoted(action)} (${
            list([...(grant?.roles ?? []), ...(grant?.owner_roles ?? [])]) || 'none'
          }).`;
    case 'not_owner': {
      const property = grant!.owner!.resource_property;
      const value = properties?.[property];
      return (
        `the user may take ${quoted(action)} only on what they own, and the resource's ` +
        `${quoted(property)} (${value === undefined ? 'not given' : JSON.stringify(value)}) is ` +
        `not the user's ${grant!.owner!.user_attribute}.`
      );
    }
  }
}

export function authorizationSection(
  viewer: Viewer,
  base: string,
  form: AuthorizationFormView,
  etag: string,
  writable: boolean,
): Html {
  const hint =
    'A JSON object: "actions" maps each action name to "roles" (may take it on any resource) ' +
    'and "owner_roles" with "owner" (may take it on what they own: a resource property equal ' +
    "to the user's email, id or identifier). Empty: no model, and an action named like a role " +
    'the user holds is allowed.';
  if (!writable) {
    return html`<section class="card" id="authorization">
      <h2>Authorization</h2>
      <p class="hint">${hint}</p>
      <pre>${form.text || 'none'}</pre>
    </section>`;
  }
  return html`<form
    method="post"
    action="${base}/authorization"
    class="card"
    id="authorization"
    novalidate
  >
    <h2>Authorization</h2>
    ${formErrors(form.errors, AUTHORIZATION_FIELDS, form.message)} ${csrfField(viewer)}
    <input type="hidden" name="etag" value="${etag}" />
    ${field({
      name: 'authorization',
      label: 'Authorization (JSON)',
      hint,
      errors: form.errors,
      control: (attributes) =>
        html`<textarea ${attributes} rows="12" class="code" spellcheck="false">
${form.text}</textarea>`,
    })}
    <button type="submit">Save authorization</button>
  </form>`;
}

export function decisionSection(
  viewer: Viewer,
  base: string,
  view: DecisionDryRunView,
  choices: DecisionChoices,
): Html {
  const { values, errors, outcome } = view;
  return html`<form
    method="post"
    action="${base}/decision"
    class="card"
    novalidate
    hx-post="${base}/decision"
    hx-target="#decision-dry-run"
    hx-select="#decision-dry-run"
    hx-swap="outerHTML"
  >
    <section id="decision-dry-run" aria-live="polite">
      <h2>Would this user be allowed?</h2>
      <p class="hint">
        The decision a resource server gets from POST /access/v1/evaluation, from the user's current
        roles and state and the saved authorization, with the reason. Nothing changes.
      </p>
      ${formErrors(errors, DECISION_FIELDS)} ${csrfField(viewer)}
      ${field({
        name: 'subject',
        label: 'User',
        hint: "<provider>:<identifier>, or the user's id.",
        errors,
        control: (attributes) =>
          html`<input
              ${attributes}
              value="${values.subject}"
              list="decision-users"
              autocomplete="off"
              spellcheck="false"
              required
            />
            <datalist id="decision-users">
              ${choices.users.map(
                (user) =>
                  html`<option value="${user.provider}:${user.identifier}">
                    ${user.name} (${user.email})
                  </option>`,
              )}
            </datalist>`,
      })}
      ${field({
        name: 'action',
        label: 'Action',
        errors,
        control: (attributes) =>
          html`<input
              ${attributes}
              value="${values.action}"
              list="decision-actions"
              autocomplete="off"
              spellcheck="false"
              required
            />
            <datalist id="decision-actions">
              ${choices.actions.map((action) => html`<option value="${action}"></option>`)}
            </datalist>`,
      })}
      <fieldset>
        <legend>Resource (optional)</legend>
        ${field({
          name: 'resource_type',
          label: 'Type',
          errors,
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${values.resource_type}"
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        ${field({
          name: 'resource_id',
          label: 'Id',
          errors,
          control: (attributes) =>
            html`<input
              ${attributes}
              value="${values.resource_id}"
              autocomplete="off"
              spellcheck="false"
            />`,
        })}
        ${field({
          name: 'resource_properties',
          label: 'Properties (JSON)',
          hint: 'A JSON object, e.g. {"ownerID": "morty@example.com"}; an owner check compares one of them.',
          errors,
          control: (attributes) =>
            html`<textarea ${attributes} rows="3" class="code" spellcheck="false">
${values.resource_properties}</textarea>`,
        })}
      </fieldset>
      <button type="submit" class="secondary">Ask</button>
      ${outcome === null ? '' : outcomeOf(outcome)}
    </section>
  </form>`;
}

function outcomeOf(outcome: DecisionOutcome): Html {
  const { decision, user } = outcome;
  return html`<div class="result ${decision.decision ? 'ok' : 'failed'}" role="status">
    <p><strong>${decision.decision ? 'Allowed' : 'Denied'}</strong>: ${outcome.explanation}</p>
    ${
      user === null
        ? ''
        : html`<p class="meta">
            ${user.name} (${user.provider}:${user.identifier}) ·
            ${user.active ? 'active' : 'inactive'} · roles:
            ${user.roles.length === 0 ? 'none' : user.roles.join(', ')}
          </p>`
    }
  </div>`;
}
