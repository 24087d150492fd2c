// The pages of a sign-in through the OpenID provider: the step after a successful callback,
// and why a callback signed nobody in.

import type { ConsoleOperator } from '../../store/store.js';
import { type Viewer, page, pagesOf } from './console-layout.view.js';
import { type Html, html } from './html.js';

export function signedInPage(name: string, next: string): Html {
  return page({
    title: 'Signed in',
    viewer: null,
    section: null,
    refreshTo: next,
    body: html`<section class="narrow">
      <h1>Signed in</h1>
      <p>Welcome, ${name}.</p>
      <p><a href="${next}">Continue to the console</a></p>
    </section>`,
  });
}

export function signInFailedPage(providerName: string, detail: string): Html {
  return page({
    title: 'Sign-in failed',
    viewer: null,
    section: null,
    body: html`<section class="narrow">
      <h1>Sign-in failed</h1>
      <div class="alert" role="alert"><p>${detail}</p></div>
      <p>Nobody was signed in.</p>
      <p>
        <a href="/console/oidc/start">Sign in with ${providerName} again</a> or
        <a href="/console/sign-in">sign in with an API key</a>.
      </p>
    </section>`,
  });
}

/** The signed-in operator's own page: who the provider says they are, and what they may do. */
export function operatorAccountPage(viewer: Viewer, operator: ConsoleOperator): Html {
  const pages = pagesOf(viewer);
  return page({
    title: 'You',
    viewer,
    section: 'account',
    body: html`<h1>You <span class="subtle">${operator.name}</span></h1>
      <section class="card" aria-labelledby="operator-facts">
        <h2 id="operator-facts">What you may do</h2>
        <dl class="facts">
          <dt>Signed in through</dt>
          <dd class="mono">${operator.issuer}</dd>
          <dt>Subject there</dt>
          <dd class="mono">${operator.subject}</dd>
          <dt>Roles</dt>
          <dd>
            <ul class="chip-list">
              ${operator.roles.map((role) => html`<li class="chip">${role}</li>`)}
            </ul>
          </dd>
          <dt>Applications</dt>
          <dd>${operator.applications === null ? 'all' : operator.applications.join(', ')}</dd>
        </dl>
        <p>
          Your roles and applications come from your account at the identity provider, as they were
          when you signed in; a change there applies from your next sign-in.
        </p>
      </section>
      <section class="card" aria-labelledby="operator-pages">
        <h2 id="operator-pages">Console pages you may open</h2>
        ${
          pages.length === 0
            ? html`<p>None: your roles (${operator.roles.join(', ')}) are for the API only.</p>`
            : html`<ul>
                ${pages.map((item) => html`<li><a href="${item.href}">${item.label}</a></li>`)}
              </ul>`
        }
      </section>`,
  });
}
