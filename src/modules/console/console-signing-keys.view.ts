import type { SigningKeyStatus } from '../tokens/signing-keys.service.js';
import { confirmPage } from './console-confirm.view.js';
import { type Viewer, can, csrfField, formatTime, page, tableBox } from './console-layout.view.js';
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
      ${tableBox(
        'Signing keys',
        html`<table>
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
                              : html`<a
                                  class="button destructive"
                                  href="/console/signing-keys/${key.kid}/revoke"
                                  aria-label="Revoke signing key ${key.kid}…"
                                  >Revoke…</a
                                >`
                          }
                        </td>`
                      : ''
                  }
                </tr>`,
            )}
          </tbody>
        </table>`,
      )}`,
  });
}

const STATE_WORDS: Record<SigningKeyStatus['state'], string> = {
  pending: 'It does not sign yet: it was published so verifiers have it before its first token.',
  active: 'It signs access tokens now: a new key is created first and signs in its place at once.',
  retired:
    'A newer key signs now; tokens this one signed before are still valid until they expire.',
  unpublished: 'It no longer signs and has left the published key set already.',
  revoked: 'It is revoked already.',
};

/** Asks before revoking a signing key: every token it signed stops verifying. */
export function revokeSigningKeyPage(
  viewer: Viewer,
  key: SigningKeyStatus,
  message: string | null,
): Html {
  return confirmPage(viewer, {
    title: `Revoke signing key ${key.kid}?`,
    section: 'signing-keys',
    crumbs: html`<a href="/console/signing-keys">Signing keys</a>`,
    subject: html`<span class="mono">${key.kid}</span>
      <span class="subtle"
        >${key.algorithm} · ${key.state} · created ${formatTime(key.createdAt)}</span
      >`,
    consequences: [
      html`<strong>Every access token it signed stops verifying:</strong> its public key leaves the
        published key set (/.well-known/jwks.json) at once, and resource servers refuse its tokens
        as soon as they fetch the set again. Users sign in again to get new tokens.`,
      html`${STATE_WORDS[key.state]}`,
      html`Meant for a key that leaked. To change keys on a schedule, rotate instead: tokens already
      issued keep working until they expire.`,
    ],
    refusal:
      key.state === 'revoked' ? `This key was revoked at ${formatTime(key.revokedAt)}.` : null,
    message,
    action: `/console/signing-keys/${key.kid}/revoke`,
    button: `Revoke signing key ${key.kid}`,
    back: { href: '/console/signing-keys', label: 'Back to the signing keys' },
  });
}
