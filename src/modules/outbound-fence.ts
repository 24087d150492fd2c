// The SSRF fence of every outbound request Tessera makes (outside JWKS, webhook deliveries):
// whoever may configure the URL (an application's jwks_uri, a webhook's url) could otherwise
// make Tessera call internal services.
// - https: only;
// - every address the host resolves to must be public unicast — loopback, private,
//   link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, reserved and the
//   IPv6 equivalents are refused, including IPv4 hidden in IPv6 (::ffff:127.0.0.1);
// - the connection goes to the address that was checked (the check runs inside the
//   socket's own DNS lookup), so DNS rebinding between check and connect is impossible.
// `allowInsecure` (IAM_ALLOW_INSECURE_JWKS, IAM_ALLOW_INSECURE_WEBHOOKS) lifts the scheme and
// address rules, for tests and local development only.

import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

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

/** Why the URL may not be fetched at all, or null when its form is acceptable; `label` names it. */
export function refuseTarget(url: URL, policy: OutboundPolicy, label: string): string | null {
  if (url.protocol !== 'https:' && !(policy.allowInsecure && url.protocol === 'http:')) {
    return `${label} must be an https: URL, not ${url.protocol}`;
  }
  if (url.username !== '' || url.password !== '') return `${label} must not carry credentials`;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // The WHATWG parser has already turned 127.1, 0x7f.1 and 2130706433 into 127.0.0.1.
  if (isIP(host) !== 0 && !policy.allowInsecure && !isPublicAddress(host)) {
    return `${label} points to a non-public address (${host})`;
  }
  return null;
}

export function fencedLookup(policy: OutboundPolicy, label: string): LookupFunction {
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
          ? `${label} host ${hostname} resolves to a non-public address`
          : `${label} host ${hostname} has no address`;
        callback(new OutboundRefusedError(reason), '', 0);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
