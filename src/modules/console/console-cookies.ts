// The console's cookies: the session's (SameSite=Strict, sent only by this console's own
// pages) and, while a sign-in through the OpenID provider is under way, the one binding it to
// the browser that began it (SameSite=Lax: the provider sends the browser back by a top-level
// navigation from its own site, on which a Strict cookie is not sent). Both HttpOnly, and
// Secure unless the console is served over plain HTTP on a loopback address.

import type { FastifyReply, FastifyRequest } from 'fastify';

export const CONSOLE_PREFIX = '/console';
export const SESSION_COOKIE = 'tessera_console';
export const SIGN_IN_COOKIE = 'tessera_console_oidc';
/** The sign-in cookie goes to the callback only. */
export const OIDC_PREFIX = `${CONSOLE_PREFIX}/oidc`;

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Secure, unless this request came over plain HTTP to a loopback address (a local console). */
function secure(request: FastifyRequest): boolean {
  return !(request.protocol === 'http' && isLoopbackHost(request.hostname));
}

export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  sessionId: string,
): void {
  reply.setCookie(SESSION_COOKIE, sessionId, {
    path: CONSOLE_PREFIX,
    httpOnly: true,
    sameSite: 'strict',
    secure: secure(request),
  });
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PREFIX, httpOnly: true, sameSite: 'strict' });
}

export function setSignInCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  value: string,
  maxAgeSeconds: number,
): void {
  reply.setCookie(SIGN_IN_COOKIE, value, {
    path: OIDC_PREFIX,
    httpOnly: true,
    sameSite: 'lax',
    secure: secure(request),
    maxAge: maxAgeSeconds,
  });
}

export function clearSignInCookie(reply: FastifyReply): void {
  reply.clearCookie(SIGN_IN_COOKIE, { path: OIDC_PREFIX, httpOnly: true, sameSite: 'lax' });
}
