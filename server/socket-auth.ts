// Who opens a browser-facing socket (the live view, terminals): a token in
// the handshake's auth, or the session cookie. A cookie comes with sockets
// other pages open too, so one it authenticates must come from the
// dashboard's own origin (a WebSocket is not bound by the same-origin policy).
import type { Socket } from 'socket.io';
import { crossSiteRefusal, ownOrigins, sessionCookie } from './http/session';

export type SocketCredential =
  | { ok: true; secret: string | null /** true: the session cookie (a browser page) */; web: boolean }
  | { ok: false; message: string };

export function socketCredential(handshake: Socket['handshake'], publicUrl: string | null): SocketCredential {
  const token = typeof handshake.auth?.token === 'string' ? handshake.auth.token : null;
  if (token !== null) return { ok: true, secret: token, web: false };
  const cookie = sessionCookie(handshake.headers.cookie);
  if (cookie === null) return { ok: true, secret: null, web: true };
  const refusal = crossSiteRefusal(handshake.headers, ownOrigins(handshake.headers, publicUrl));
  if (refusal) return { ok: false, message: `forbidden: ${refusal}; sockets with the session cookie open only from the dashboard's own pages` };
  return { ok: true, secret: cookie, web: true };
}
