// The pages of a sign-in through the OpenID provider: the step after a successful callback,
// and why a callback signed nobody in.

import { page } from './console-layout.view.js';
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
