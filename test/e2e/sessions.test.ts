// The dashboard's session cookie is a session of its own (server/sessions.ts),
// on a real controller and Postgres: it never carries the token; it works for
// the API and the live view's socket while the session and its token stand;
// signing out, revoking the token, or its expiry ends it at once (a replayed
// cookie is refused); a forged or garbled cookie is a 401 in the usual error
// shape, never a 500.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { io, type Socket } from 'socket.io-client';
import { Stack } from '../helpers/stack';

let stack: Stack;
let db: postgres.Sql;
before(async () => {
  // Its forged cookies all come from one address: past RC_AUTH_FAILURES they would be answered 429 (token-guesses.test.ts covers that).
  stack = await Stack.start({ workers: [], controllerEnv: { RC_AUTH_FAILURES: '0' } });
  db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
});
after(async () => {
  await db?.end({ timeout: 2 });
  await stack?.stop();
});

/** A client token of the test's own (it may be revoked). */
async function newToken(name: string): Promise<{ id: number; token: string }> {
  const r = await stack.api('POST', '/api/admin/tokens', { name, kind: 'client' }, stack.adminToken);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body as { id: number; token: string };
}

/** GET /api/whoami with a Cookie header: the status and the body. */
async function whoami(cookie: string): Promise<{ status: number; body: { name?: string; error?: { code: string; message: string } } }> {
  const res = await fetch(`${stack.controllerUrl}/api/whoami`, { headers: { cookie } });
  return { status: res.status, body: (await res.json()) as { name?: string; error?: { code: string; message: string } } };
}

/** Refused as the API refuses an ended session: 401, the error shape, a sentence that says to sign in again. */
async function refused(cookie: string, what: string): Promise<void> {
  const r = await whoami(cookie);
  assert.equal(r.status, 401, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error?.code, 'unauthorized', what);
  assert.match(r.body.error?.message ?? '', /sign in again|a valid token is required/, what);
}

/** Opens the live view's socket with the cookie, from the dashboard's own origin: 'connected' or the refusal. */
function openLive(cookie: string): Promise<{ outcome: string; socket: Socket }> {
  const socket = io(`${stack.controllerUrl}/`, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    extraHeaders: { cookie, origin: stack.controllerUrl },
  });
  return new Promise((resolve) => {
    socket.on('connect', () => resolve({ outcome: 'connected', socket }));
    socket.on('connect_error', (e) => {
      socket.close();
      resolve({ outcome: e.message, socket });
    });
  });
}

const signOut = (cookie: string) =>
  fetch(`${stack.controllerUrl}/api/session`, { method: 'DELETE', headers: { cookie, origin: stack.controllerUrl, 'content-type': 'application/json' } });

const sessionId = (cookie: string) => Number(/^rc_session=(\d+)\./.exec(cookie)?.[1]);

test('signing in makes a session: the cookie carries neither the token nor anything stored; it works for the API and the socket', async (t) => {
  const { token } = await newToken('browser-a');
  const res = await fetch(`${stack.controllerUrl}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  assert.equal(res.status, 200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  // The flags as before: HttpOnly, SameSite=Strict, the whole site, a month; Secure only over HTTPS (boundaries.test.ts).
  assert.match(setCookie, /^rc_session=[^;]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=2592000$/);
  const cookie = setCookie.split(';')[0]!;
  const value = decodeURIComponent(cookie.slice('rc_session='.length));
  assert.ok(!value.includes(token) && !value.includes(token.slice(5)), 'the cookie does not carry the token');
  assert.match(value, /^\d+\.[A-Za-z0-9_-]{43}$/, 'a session id and a 32-byte secret');
  // The database keeps the secret's hash only.
  const [row] = await db<{ secretHash: string }[]>`select secret_hash as "secretHash" from sessions where id = ${sessionId(cookie)}`;
  assert.ok(row);
  assert.ok(!row.secretHash.includes(value.split('.')[1]!), 'the secret is not stored');
  // Two sign-ins (two browsers) are two sessions.
  assert.notEqual(await stack.signIn(token), cookie);

  const me = await whoami(cookie);
  assert.equal(me.status, 200, JSON.stringify(me.body));
  assert.equal(me.body.name, 'browser-a');
  const live = await openLive(cookie);
  t.after(() => live.socket.close());
  assert.equal(live.outcome, 'connected');
});

test('signing out ends the session: the same cookie, replayed, is refused by the API and the socket; its open socket is cut', async (t) => {
  const { token } = await newToken('browser-b');
  const cookie = await stack.signIn(token);
  const other = await stack.signIn(token);
  const live = await openLive(cookie);
  t.after(() => live.socket.close());
  assert.equal(live.outcome, 'connected');
  let cutWhy = '';
  live.socket.on('disconnect', (why) => {
    cutWhy = why;
  });

  const out = await signOut(cookie);
  assert.equal(out.status, 200);
  assert.match(out.headers.get('set-cookie') ?? '', /^rc_session=; .*Max-Age=0/);
  await stack.waitFor(() => cutWhy !== '', 'the session socket to be cut at sign-out', 5000);
  assert.equal(cutWhy, 'io server disconnect');
  await refused(cookie, 'the signed-out cookie replayed');
  assert.match((await openLive(cookie)).outcome, /^unauthorized: the dashboard session has ended/);
  const [row] = await db<{ revokedAt: Date | null }[]>`select revoked_at as "revokedAt" from sessions where id = ${sessionId(cookie)}`;
  assert.ok(row?.revokedAt, 'revoked in the database, not only cleared in the browser');
  // The token's other session (another browser) stands; signing out twice is harmless.
  assert.equal((await whoami(other)).status, 200);
  assert.equal((await signOut(cookie)).status, 200);
});

test("revoking the token ends its sessions at once: its cookie is refused, its session's socket cut", async (t) => {
  const { id, token } = await newToken('browser-c');
  const cookie = await stack.signIn(token);
  assert.equal((await whoami(cookie)).status, 200);
  const live = await openLive(cookie);
  t.after(() => live.socket.close());
  assert.equal(live.outcome, 'connected');
  assert.equal((await stack.api('POST', `/api/admin/tokens/${id}/revoke`, undefined, stack.adminToken)).status, 200);
  await stack.waitFor(() => !live.socket.connected, "the session's socket to be cut", 5000);
  await refused(cookie, 'the cookie of a revoked token');
  assert.match((await openLive(cookie)).outcome, /^unauthorized/);
});

test('an expired session is refused; a used one slides its expiry on, up to a month after sign-in', async () => {
  const { token } = await newToken('browser-d');
  const cookie = await stack.signIn(token);
  const id = sessionId(cookie);
  // Last used two minutes ago, due to end within the hour: a use pushes the end a week on.
  await db`update sessions set last_seen_at = now() - interval '2 minutes', expires_at = now() + interval '1 hour' where id = ${id}`;
  assert.equal((await whoami(cookie)).status, 200);
  const [slid] = await db<{ left: number }[]>`select extract(epoch from expires_at - now())::float8 as left from sessions where id = ${id}`;
  assert.ok(slid!.left > 6.9 * 86400 && slid!.left <= 7 * 86400, `a week on: ${slid!.left}s`);
  // Signed in 29.5 days ago: however used, it ends a month after sign-in.
  await db`update sessions set created_at = now() - interval '29.5 days', last_seen_at = now() - interval '2 minutes' where id = ${id}`;
  assert.equal((await whoami(cookie)).status, 200);
  const [capped] = await db<{ left: number }[]>`select extract(epoch from expires_at - now())::float8 as left from sessions where id = ${id}`;
  assert.ok(capped!.left > 0.4 * 86400 && capped!.left <= 0.5 * 86400, `half a day left: ${capped!.left}s`);
  // Past its end: refused, by the API and the socket.
  await db`update sessions set expires_at = now() - interval '1 second' where id = ${id}`;
  await refused(cookie, 'an expired session');
  assert.match((await openLive(cookie)).outcome, /^unauthorized/);
});

test('a forged or garbled cookie is a 401 in the usual error shape, never a 500; the raw token as a cookie is no session', async () => {
  const cookie = await stack.signIn(stack.clientToken);
  const [, id, secret] = /^rc_session=(\d+)\.(.+)$/.exec(cookie)!;
  const flipped = secret!.startsWith('A') ? `B${secret!.slice(1)}` : `A${secret!.slice(1)}`;
  const forged = [
    `rc_session=${encodeURIComponent(stack.clientToken)}`,
    `rc_session=${encodeURIComponent(stack.adminToken)}`,
    `rc_session=${id}.${flipped}`,
    `rc_session=${Number(id) + 1000}.${secret}`,
    `rc_session=99999999999999999999.${secret}`,
    `rc_session=0.${secret}`,
    `rc_session=${id}.`,
    `rc_session=${id}`,
    `rc_session=.${secret}`,
    `rc_session=${id}.${secret}x`,
    `rc_session=${'9'.repeat(5000)}`,
    'rc_session=%ff',
    'rc_session=',
    `rc_session=${id}.${'%00'.repeat(43)}`,
  ];
  for (const c of forged) {
    await refused(c, c.slice(0, 80));
    assert.match((await openLive(c)).outcome, /^unauthorized/, c.slice(0, 80));
  }
  assert.equal((await whoami(cookie)).status, 200, 'the real session still works');
});

test('resolving a session stays cheap: figures for the cookie against a bearer token', async (t) => {
  const cookie = await stack.signIn(stack.clientToken);
  // No bound is asserted on a shared machine: the figures are for the eye (the cookie is one primary-key lookup; a bearer token is cached).
  const time = async (headers: Record<string, string>) => {
    const n = 200;
    const start = performance.now();
    for (let i = 0; i < n; i++) assert.equal((await fetch(`${stack.controllerUrl}/api/whoami`, { headers })).status, 200);
    return (performance.now() - start) / n;
  };
  await time({ cookie });
  const viaBearer = await time({ authorization: `Bearer ${stack.clientToken}` });
  const viaCookie = await time({ cookie });
  t.diagnostic(`GET /api/whoami: ${viaCookie.toFixed(2)} ms a request with the session cookie, ${viaBearer.toFixed(2)} ms with a bearer token (cached)`);
});
