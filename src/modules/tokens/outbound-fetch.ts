// The only way Tessera reaches out to the network: fetching an outside provider's JWKS. An
// application's external_token_validation names the URL, so whoever may write applications
// could otherwise make Tessera call internal services (SSRF). The fence:
// - https: only;
// - every address the host resolves to must be public unicast — loopback, private,
//   link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, reserved and the
//   IPv6 equivalents are refused, including IPv4 hidden in IPv6 (::ffff:127.0.0.1);
// - the connection goes to the address that was checked (the check runs inside the
//   socket's own DNS lookup), so DNS rebinding between check and connect is impossible;
// - no redirect is followed; 5 s timeout; at most 256 KiB is read.
// `allowInsecure` (IAM_ALLOW_INSECURE_JWKS=true) lifts the scheme and address rules, for
// tests and local development only; the time, size and redirect limits always hold.

import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export const OUTBOUND_TIMEOUT_MS = 5_000;
export const OUTBOUND_MAX_BYTES = 256 * 1024;

/** The fence refused the URL or the answer: a configuration problem, retrying will not help. */
export class OutboundRefusedError extends Error {
  override readonly name = 'OutboundRefusedError';
}

/** The remote end did not answer usably (down, timed out, not 200): worth retrying later. */
export class OutboundUnavailableError extends Error {
  override readonly name = 'OutboundUnavailableError';
}

export interface OutboundPolicy {
  /** Allow http: and non-public addresses (tests and local development only). */
  allowInsecure: boolean;
}

/** IPv6 global unicast (RFC 4291 §2.4): the only IPv6 addresses an outside provider has. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * True for a public unicast address; false for anything an attacker could aim inwards. IPv6
 * must be global unicast (2000::/3) and none of the forms that carry an IPv4 address or a
 * tunnel (6to4, Teredo) nor a reserved block: IPv4-compatible ::7f00:1 is 127.0.0.1 to some
 * stacks, and ipaddr.js calls it plain unicast.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() unwraps IPv4-mapped IPv6 (::ffff:a.b.c.d), so it is judged as IPv4.
  const parsed = ipaddr.process(address);
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || parsed.match(GLOBAL_UNICAST);
}

/** Why the URL may not be fetched at all, or null when its form is acceptable. */
export function refuseUrl(url: URL, policy: OutboundPolicy): string | null {
  if (url.protocol !== 'https:' && !(policy.allowInsecure && url.protocol === 'http:')) {
    return `jwks_uri must be an https: URL, not ${url.protocol}`;
  }
  if (url.username !== '' || url.password !== '') return 'jwks_uri must not carry credentials';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // The WHATWG parser has already turned 127.1, 0x7f.1 and 2130706433 into 127.0.0.1.
  if (isIP(host) !== 0 && !policy.allowInsecure && !isPublicAddress(host)) {
    return `jwks_uri points to a non-public address (${host})`;
  }
  return null;
}

function fencedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, '', 0);
        return;
      }
      const refused = policy.allowInsecure
        ? undefined
        : addresses.find((entry) => !isPublicAddress(entry.address));
      if (refused !== undefined || addresses.length === 0) {
        // The resolved address is not named: it would tell a caller about the inside network.
        const reason = refused
          ? `jwks_uri host ${hostname} resolves to a non-public address`
          : `jwks_uri host ${hostname} has no address`;
        callback(new OutboundRefusedError(reason), '', 0);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
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
        lookup: fencedLookup(policy),
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
