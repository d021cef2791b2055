// The browser's session: an HttpOnly cookie that carries a session's id and
// secret (server/sessions.ts), never the token it signed in with. A browser sends
// that cookie with requests other pages start too (another port of the same
// host is the same site, so SameSite=Strict does not stop it), so anything
// the cookie authenticates that changes state must prove it comes from the
// dashboard's own pages: its Origin (and Sec-Fetch-Site, where sent).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { SESSION_MAX_S } from '../sessions';

export const SESSION_COOKIE = 'rc_session';

/** What a request with a session cookie that no longer stands (or never did) is told. */
export const SESSION_ENDED = 'the dashboard session has ended (signed out, expired, or its token revoked): sign in again';

/** The session cookie's value from a Cookie header; null when absent or not decodable (a malformed cookie is no cookie). */
export function sessionCookie(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== SESSION_COOKIE) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The origins the dashboard is served from: the Host the browser used, over
 * http or https, and RC_PUBLIC_URL's when set (a TLS proxy in front).
 */
export function ownOrigins(headers: IncomingHttpHeaders, publicUrl: string | null): string[] {
  const out: string[] = [];
  if (publicUrl) out.push(new URL(publicUrl).origin);
  const host = headers.host;
  if (host) out.push(`http://${host}`, `https://${host}`);
  return out;
}

/**
 * Why a cookie-authenticated request must be refused as cross-site, or null
 * when it comes from the dashboard's own origin. Browsers send Sec-Fetch-Site
 * on every request, and Origin on every POST, PUT, DELETE and WebSocket
 * handshake; a request with neither is not the dashboard's.
 */
export function crossSiteRefusal(headers: IncomingHttpHeaders, own: readonly string[]): string | null {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return `the request came from another site (Sec-Fetch-Site: ${String(site)})`;
  const origin = headers.origin;
  if (origin !== undefined && !own.includes(origin)) return `the request came from ${origin}, not from the dashboard`;
  if (origin === undefined && site === undefined) return 'the request has neither an Origin nor a Sec-Fetch-Site header';
  return null;
}

/** Reached over HTTPS: directly, through RC_PUBLIC_URL, or a TLS proxy that says so (X-Forwarded-Proto). */
export function reachedOverHttps(req: IncomingMessage, publicUrl: string | null): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  if (publicUrl?.startsWith('https:')) return true;
  const proto = req.headers['x-forwarded-proto'];
  return typeof proto === 'string' && proto.split(',')[0]!.trim().toLowerCase() === 'https';
}

/** Set-Cookie for a sign-in (the session's value) or a sign-out (null). Secure over HTTPS, so the session never travels in clear. */
export function sessionSetCookie(session: string | null, secure: boolean): string {
  const value = session === null ? '' : encodeURIComponent(session);
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${session === null ? 0 : SESSION_MAX_S}${secure ? '; Secure' : ''}`;
}
