// The page that asks before a destructive action (revoking a key, deleting a webhook): what
// will happen, in plain words, and one button that does it. The action's POST does nothing
// without this page's `confirm` field, so a stray click or a replayed form cannot act alone.

import { type Section, type Viewer, csrfField, page } from './console-layout.view.js';
import { type Html, type Renderable, html } from './html.js';

/** The value of the `confirm` field the confirmation form sends. */
export const CONFIRMED = 'yes';

export function confirmPage(
  viewer: Viewer,
  options: {
    title: string;
    section: Section;
    crumbs: Renderable;
    /** What is about to be acted on. */
    subject: Renderable;
    /** What the action does: each a sentence. */
    consequences: readonly Renderable[];
    /** Why the action cannot be taken (no button then), or null. */
    refusal: string | null;
    /** A problem with the last attempt, shown as an alert. */
    message?: string | null;
    action: string;
    button: string;
    back: { href: string; label: string };
  },
): Html {
  return page({
    title: options.title,
    viewer,
    section: options.section,
    body: html`<p class="crumbs">${options.crumbs}</p>
      <h1>${options.title}</h1>
      ${options.message ? html`<div class="alert" role="alert"><p>${options.message}</p></div>` : ''}
      <section class="card danger" aria-labelledby="confirm-subject">
        <h2 id="confirm-subject">${options.subject}</h2>
        <ul class="consequences">
          ${options.consequences.map((line) => html`<li>${line}</li>`)}
        </ul>
        ${
          options.refusal !== null
            ? html`<div class="alert" role="alert"><p>${options.refusal}</p></div>`
            : html`<form method="post" action="${options.action}" class="row-actions">
                ${csrfField(viewer)}
                <input type="hidden" name="confirm" value="${CONFIRMED}" />
                <button type="submit" class="destructive">${options.button}</button>
                <a href="${options.back.href}">Cancel</a>
              </form>`
        }
      </section>
      ${options.refusal !== null ? html`<p><a href="${options.back.href}">${options.back.label}</a></p>` : ''}`,
  });
}

/** Whether a destructive POST came from its confirmation page. */
export function confirmed(value: string): boolean {
  return value === CONFIRMED;
}
