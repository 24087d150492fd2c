import { type Html, html } from './html.js';
import { type Viewer, page } from './console-layout.view.js';

export function signInPage(options: {
  notice?: string | null;
  keyError?: string;
  /** The OpenID provider operators may sign in through, by name; null: none configured. */
  provider?: string | null;
}): Html {
  const error = options.keyError;
  const provider = options.provider ?? null;
  return page({
    title: 'Sign in',
    viewer: null,
    section: null,
    notice: options.notice ?? null,
    body: html`<section class="narrow">
      <h1>Sign in</h1>
      ${
        provider === null
          ? ''
          : html`<p>
                <a class="button" href="/console/oidc/start">Sign in with ${provider}</a>
              </p>
              <p>Or sign in with an API key:</p>`
      }
      <p>
        Paste an API key. It is exchanged for a session of this browser and not kept: the console
        acts with the key's roles and restriction, and shows only what they allow.
      </p>
      <form method="post" action="/console/sign-in" class="card">
        <div class="field${error ? ' has-error' : ''}">
          <label for="field-key">API key</label>
          <input
            id="field-key"
            name="key"
            type="password"
            autocomplete="off"
            spellcheck="false"
            required${error ? html` aria-invalid="true" aria-describedby="field-key-error"` : ''}
            autofocus
          />
          ${error ? html`<p class="error" id="field-key-error">${error}</p>` : ''}
        </div>
        <button type="submit">Sign in</button>
      </form>
    </section>`,
  });
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Not valid',
  401: 'Signed out',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  412: 'Changed meanwhile',
  429: 'Too many attempts',
};

export function errorPage(viewer: Viewer | null, status: number, detail: string): Html {
  const title = STATUS_TITLES[status] ?? (status >= 500 ? 'Error' : 'Problem');
  return page({
    title,
    viewer,
    section: null,
    body: html`<h1>${title}</h1>
      <div class="alert" role="alert"><p>${detail}</p></div>
      <p>
        ${viewer === null ? html`<a href="/console/sign-in">Sign in</a>` : html`<a href="/console">Back to the console</a>`}
      </p>`,
  });
}
