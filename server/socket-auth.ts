// Who opens a socket, for all three namespaces alike: a token in the
// handshake's auth, or (the live view and terminals only) the session
// cookie. A cookie comes with sockets other pages open too, so one it
// authenticates must come from the dashboard's own origin (a WebSocket is
// not bound by the same-origin policy). Workers (/worker) sign in with their
// host credential; people and agents (/, /tty) with a client or admin token.
import type { Socket } from 'socket.io';
import { type Identity, identifyFrom } from './auth';
import { type AuthLimit, RateLimited } from './auth-limit';
import type { DbOrTx } from './db';
import { crossSiteRefusal, ownOrigins, SESSION_ENDED, sessionCookie } from './http/session';
import { sessionFrom } from './sessions';

/** What every authenticated socket carries: who, with which token (cut when revoked), and whether by the browser's cookie (and its session, cut at sign-out). */
export interface SocketIdentity {
  identity: Identity;
  tokenId: number;
  web: boolean;
  sessionId: number | null;
}

/** Who may open a namespace's sockets: a worker (its host credential, never a cookie), or a person or agent. */
export type SocketAudience = 'worker' | 'people';

/**
 * socket.io middleware for a namespace: signs the socket in and sets
 * socket.data (SocketIdentity); refused with a message saying what is needed.
 */
export function socketAuth(
  db: DbOrTx,
  /** Token guesses, limited per client address (server/auth-limit.ts). */
  limit: AuthLimit | null,
  audience: SocketAudience,
  publicUrl: string | null,
  /** A refused credential's own story (a removed host's: its worker stops for good), or null for the plain refusal. */
  whyRefused: (secret: string) => Promise<string | null> = async () => null,
) {
  return (socket: Socket, next: (err?: Error) => void): void => {
    const cred = audience === 'worker' ? bearerOnly(socket.handshake) : socketCredential(socket.handshake, publicUrl);
    if (!cred.ok) return next(new Error(cred.message));
    const address = socket.handshake.address;
    // The cookie resolves as the API's does (server/sessions.ts): its session, while it and its token stand.
    if (cred.web && cred.secret !== null)
      return void sessionFrom(db, limit, address, cred.secret).then(
        (session) => {
          if (!session) return next(new Error(`unauthorized: ${SESSION_ENDED}`));
          const id = session.identity;
          socket.data = { ...socket.data, identity: id, tokenId: id.tokenId, web: true, sessionId: session.sessionId } satisfies SocketIdentity;
          next();
        },
        (err: unknown) => next(err instanceof RateLimited ? rateLimited(err) : new Error('unavailable')),
      );
    identifyFrom(db, limit, address, cred.secret).then(
      (id) => {
        const fits = audience === 'worker' ? id?.kind === 'host' && id.hostName !== null : id !== null && id.kind !== 'host';
        if (!id && cred.secret)
          return void whyRefused(cred.secret).then(
            (why) => next(new Error(why ?? refusal(audience))),
            () => next(new Error(refusal(audience))),
          );
        if (!id || !fits) return next(new Error(refusal(audience)));
        socket.data = { ...socket.data, identity: id, tokenId: id.tokenId, web: cred.web, sessionId: null } satisfies SocketIdentity;
        next();
      },
      (err: unknown) => next(err instanceof RateLimited ? rateLimited(err) : new Error('unavailable')),
    );
  };
}

/** The handshake's refusal: `rate_limited: <sentence>`, its data saying when to try again. */
function rateLimited(err: RateLimited): Error {
  return Object.assign(new Error(`rate_limited: ${err.message}`), { data: { code: err.code, retryAfterS: err.retryAfterS } });
}

function refusal(audience: SocketAudience): string {
  return audience === 'worker' ? 'unauthorized: a host credential is required' : 'unauthorized: a client or admin token is required';
}

function bearerOnly(handshake: Socket['handshake']): SocketCredential {
  const token = typeof handshake.auth?.token === 'string' ? handshake.auth.token : null;
  return { ok: true, secret: token, web: false };
}

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
