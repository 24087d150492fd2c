// Fetching an outside provider's JWKS: an application's external_token_validation names the
// URL, so it goes through the outbound fence (../outbound-fence.ts: https only, public
// addresses only, checked inside the socket's own DNS lookup). Besides: no redirect is
// followed; 5 s timeout; at most 256 KiB is read. `allowInsecure` (IAM_ALLOW_INSECURE_JWKS=true)
// lifts the scheme and address rules; the time, size and redirect limits always hold.

import { nodeHttp as http, nodeHttps as https } from '../../http/node-http.js';
import {
  OutboundRefusedError,
  OutboundUnavailableError,
  type OutboundPolicy,
  fencedLookup,
  refuseTarget,
} from '../outbound-fence.js';

export {
  OutboundRefusedError,
  OutboundUnavailableError,
  type OutboundPolicy,
  isPublicAddress,
} from '../outbound-fence.js';

export const OUTBOUND_TIMEOUT_MS = 5_000;
export const OUTBOUND_MAX_BYTES = 256 * 1024;

/** Why a jwks_uri may not be fetched at all, or null when its form is acceptable. */
export function refuseUrl(url: URL, policy: OutboundPolicy): string | null {
  return refuseTarget(url, policy, 'jwks_uri');
}

/**
 * GETs a URL through the fence and resolves with a Response (status and body as received,
 * body capped). Matches jose's customFetch signature.
 */
export function fencedFetch(
  policy: OutboundPolicy,
): (url: string, options: { headers: Headers; signal: AbortSignal }) => Promise<Response> {
  return (href, options) =>
    new Promise((resolve, reject) => {
      const url = new URL(href);
      const refusal = refuseUrl(url, policy);
      if (refusal !== null) {
        reject(new OutboundRefusedError(refusal));
        return;
      }
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(url, {
        method: 'GET',
        headers: Object.fromEntries(options.headers),
        lookup: fencedLookup(policy, 'jwks_uri'),
        signal: AbortSignal.any([options.signal, AbortSignal.timeout(OUTBOUND_TIMEOUT_MS)]),
        // One socket per fetch: nothing pooled outlives the check of its address.
        agent: false,
      });
      request.once('error', (error) => {
        reject(
          error instanceof OutboundRefusedError
            ? error
            : new OutboundUnavailableError(`fetching ${url.origin}${url.pathname} failed`, {
                cause: error,
              }),
        );
      });
      request.once('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          response.destroy();
          reject(
            new OutboundRefusedError(
              `jwks_uri answered with a redirect (${status}); redirects are never followed`,
            ),
          );
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > OUTBOUND_MAX_BYTES) {
            response.destroy();
            request.destroy();
            reject(new OutboundRefusedError('the JWKS document is larger than 256 KiB'));
            return;
          }
          chunks.push(chunk);
        });
        response.once('end', () => {
          // Only a 200 is used (jose checks); other statuses travel without their body.
          const body = status === 200 ? Buffer.concat(chunks) : null;
          resolve(new Response(body, { status: status >= 200 && status <= 599 ? status : 599 }));
        });
        response.once('error', (error) =>
          reject(new OutboundUnavailableError('the JWKS response broke off', { cause: error })),
        );
      });
      request.end();
    });
}
