// The browser's session (sign in, sign out) and Prometheus's scrape.
import { RcError } from '../../../core/errors';
import { SignIn } from '../../../protocol/api';
import { identifyFrom } from '../../auth';
import { readBody, Reply, type Router } from '../router';
import { crossSiteRefusal, ownOrigins, reachedOverHttps, sessionCookie, sessionSetCookie } from '../session';
import { endSession, startSession } from '../../sessions';
import type { ApiDeps } from '../route-deps';

export function registerSessionRoutes(router: Router, c: ApiDeps): void {
  const { db } = c;
  // The browser signs in by pasting a token; it gets a session of its own (server/sessions.ts), kept in an HttpOnly cookie (Secure over HTTPS).
  router.on('POST /api/session', async ({ req, res }) => {
    // A form post from another site must not sign this browser in (login CSRF); scripts send neither header.
    const refusal = req.headers.origin || req.headers['sec-fetch-site'] ? crossSiteRefusal(req.headers, ownOrigins(req.headers, router.publicUrl)) : null;
    if (refusal) throw new RcError('forbidden', `${refusal}; sign in from the dashboard itself`);
    const { token } = await readBody(req, SignIn, { form: true });
    const identity = await identifyFrom(db, c.authLimit, req.socket.remoteAddress, token);
    if (!identity || identity.kind === 'host') throw new RcError('unauthorized', 'that token is not a valid client or admin token');
    const cookie = sessionSetCookie(await startSession(db, identity.tokenId), reachedOverHttps(req, router.publicUrl));
    if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      res.writeHead(303, { location: '/', 'set-cookie': cookie });
      res.end();
      return;
    }
    return new Reply({ kind: identity.kind, name: identity.name }, 200, { 'set-cookie': cookie });
  });

  // Prometheus's scrape (docs/operators.md, "Metrics"): a client or admin token, as `bearer_token` sends it.
  router.on('GET /metrics', async ({ res }) => {
    const text = Buffer.from(await c.metrics.text());
    res.writeHead(200, { 'content-type': c.metrics.contentType, 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });

  // Signing out ends the session itself, so the cookie is refused even if it was copied; its open sockets are cut.
  router.on('DELETE /api/session', async ({ req }) => {
    const ended = await endSession(db, sessionCookie(req.headers.cookie));
    if (ended !== null) c.cutSession(ended);
    return new Reply({ ok: true }, 200, { 'set-cookie': sessionSetCookie(null, reachedOverHttps(req, router.publicUrl)) });
  });
}
