import type { SigningKeyStatus } from '../tokens/signing-keys.service.js';
import { type Viewer, can, csrfField, formatTime, page } from './console-layout.view.js';
import { type Html, html } from './html.js';

export function signingKeysPage(
  viewer: Viewer,
  keys: readonly SigningKeyStatus[],
  notice: string | null,
): Html {
  // Signing keys serve every application: a restricted key may look, not change them.
  const writable = can(viewer, 'keys:write') && viewer.applications === null;
  return page({
    title: 'Signing keys',
    viewer,
    section: 'signing-keys',
    notice,
    body: html`<div class="heading">
        <h1>Signing keys</h1>
        ${
          writable
            ? html`<form method="post" action="/console/signing-keys/rotate">
                ${csrfField(viewer)}<button type="submit">Rotate: add a new key</button>
              </form>`
            : ''
        }
      </div>
      <p>
        The keys that sign access tokens, oldest first. A new key is published at once and starts
        signing a little later, so verifiers have it before they see a token it signed.
      </p>
      <table>
        <caption class="visually-hidden">
          Signing keys, oldest first
        </caption>
        <thead>
          <tr>
            <th scope="col">kid</th>
            <th scope="col">Algorithm</th>
            <th scope="col">State</th>
            <th scope="col">Created</th>
            <th scope="col">Signs from</th>
            <th scope="col">Published until</th>
            <th scope="col">Revoked</th>
            ${writable ? html`<th scope="col">Actions</th>` : ''}
          </tr>
        </thead>
        <tbody>
          ${keys.map(
            (key) =>
              html`<tr>
                <td class="mono">${key.kid}</td>
                <td>${key.algorithm}</td>
                <td>${key.state}</td>
                <td>${formatTime(key.createdAt)}</td>
                <td>${formatTime(key.activatesAt)}</td>
                <td>${formatTime(key.publishedUntil)}</td>
                <td>${formatTime(key.revokedAt)}</td>
                ${
                  writable
                    ? html`<td>
                        ${
                          key.state === 'revoked'
                            ? ''
                            : html`<form
                                method="post"
                                action="/console/signing-keys/${key.kid}/revoke"
                              >
                                ${csrfField(viewer)}<button
                                  type="submit"
                                  class="destructive"
                                  aria-label="Revoke signing key ${key.kid}"
                                >
                                  Revoke
                                </button>
                              </form>`
                        }
                      </td>`
                    : ''
                }
              </tr>`,
          )}
        </tbody>
      </table>`,
  });
}
