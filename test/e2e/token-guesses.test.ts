// Token guesses are limited per client address (server/auth-limit.ts), on a
// real controller: bearer tokens on the API, socket handshakes and the
// sign-in page share one count; past it, that address gets 429 rate_limited
// with Retry-After, a valid token included, and nothing is looked up in the
// database; other addresses are not affected; the window passes. Clients
// come from different loopback addresses (127.0.0.2, …: all of 127/8 is this
// machine).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { io } from 'socket.io-client';
import { Stack } from '../helpers/stack';

const FAILURES = 5;
const WINDOW_S = 10;
let stack: Stack;
before(async () => {
  stack = await Stack.start({
    workers: [],
    controllerEnv: { RC_AUTH_FAILURES: String(FAILURES), RC_AUTH_FAILURE_WINDOW_S: String(WINDOW_S) },
  });
});
after(async () => stack?.stop());

interface Answer {
  status: number;
  retryAfter: string | undefined;
  code: string | null;
  message: string;
}

/** A request from the loopback address `from`, answered within 5 s or failed. */
function call(from: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const url = new URL(stack.controllerUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, localAddress: from, headers, agent: false, timeout: 5000 }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => {
        let error: { code?: string; message?: string } = {};
        try {
          error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
        } catch {
          /* not an error body */
        }
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], code: error.code ?? null, message: error.message ?? '' });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} from ${from}: no answer in 5 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

const whoami = (from: string, token: string) => call(from, 'GET', '/api/whoami', { authorization: `Bearer ${token}` });

/** A socket handshake from `from`: 'connected', or the refusal's message. */
function handshake(from: string, ns: string, token: string): Promise<string> {
  const socket = io(stack.controllerUrl + ns, { transports: ['websocket'], reconnection: false, forceNew: true, auth: { token }, localAddress: from } as never);
  return new Promise((resolve) => {
    const timer = setTimeout(() => done('no answer'), 5000);
    function done(what: string) {
      clearTimeout(timer);
      socket.close();
      resolve(what);
    }
    socket.on('connect', () => done('connected'));
    socket.on('connect_error', (e) => done(e.message));
  });
}

test('past the limit an address gets 429 with Retry-After, its valid token too; other addresses do not', { timeout: 60_000 }, async () => {
  const guesser = '127.0.0.2';
  for (let i = 0; i < FAILURES; i++) {
    const r = await whoami(guesser, `rc_c_guess${i}`);
    assert.equal(r.status, 401, `guess ${i}: ${r.message}`);
    assert.equal(r.code, 'unauthorized');
  }
  const refused = await whoami(guesser, 'rc_c_one-more');
  assert.equal(refused.status, 429, refused.message);
  assert.equal(refused.code, 'rate_limited');
  assert.match(refused.message, /too many refused tokens from 127\.0\.0\.2: no token from it is checked for \d+ s/);
  const wait = Number(refused.retryAfter);
  assert.ok(wait >= 1 && wait <= WINDOW_S, `Retry-After: ${refused.retryAfter}`);
  // A correct token from there is refused too: else the answer would tell a right guess from a wrong one.
  const valid = await whoami(guesser, stack.clientToken);
  assert.equal(valid.status, 429, valid.message);
  assert.equal((await handshake(guesser, '/', stack.clientToken)).split(':')[0], 'rate_limited', 'its sockets too');
  // Everyone else is unaffected, a wrong token from another address included (it is that address's first).
  assert.equal((await whoami('127.0.0.1', stack.clientToken)).status, 200);
  assert.equal((await whoami('127.0.0.5', stack.adminToken)).status, 200);
  assert.equal((await whoami('127.0.0.5', 'rc_c_wrong')).status, 401);
  assert.equal(await handshake('127.0.0.1', '/', stack.clientToken), 'connected');
  // Requests without a token are no guesses.
  for (let i = 0; i < FAILURES + 2; i++) assert.equal((await call('127.0.0.6', 'GET', '/api/whoami')).status, 401);
  assert.equal((await whoami('127.0.0.6', stack.clientToken)).status, 200);
});

test('socket handshakes (people and workers) and the sign-in page count with the API', { timeout: 60_000 }, async () => {
  const from = '127.0.0.3';
  assert.match(await handshake(from, '/', 'rc_c_guess'), /^unauthorized/);
  assert.match(await handshake(from, '/tty', 'rc_c_guess'), /^unauthorized/);
  assert.match(await handshake(from, '/worker', 'rc_h_guess'), /^unauthorized/);
  const signIn = (token: string) => call(from, 'POST', '/api/session', { 'content-type': 'application/json' }, JSON.stringify({ token }));
  assert.equal((await signIn('rc_c_guess')).status, 401);
  assert.equal((await whoami(from, 'rc_c_guess')).status, 401);
  const limited = await signIn(stack.clientToken);
  assert.equal(limited.status, 429, 'the sign-in page refuses the right token too');
  assert.equal(limited.code, 'rate_limited');
  assert.ok(limited.retryAfter, 'with Retry-After');
  assert.equal((await whoami(from, stack.clientToken)).status, 429);
  assert.match(await handshake(from, '/worker', 'rc_h_guess'), /^rate_limited: too many refused tokens from 127\.0\.0\.3/);
});

test('a session cookie that is no live session counts as a guess, on the API and the socket, as a token does', { timeout: 60_000 }, async () => {
  const from = '127.0.0.8';
  const cookie = (value: string) => ({ cookie: `rc_session=${value}` });
  for (let i = 0; i < FAILURES - 1; i++) assert.equal((await call(from, 'GET', '/api/whoami', cookie(`${i}.forged`))).status, 401);
  const socket = io(stack.controllerUrl, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    extraHeaders: { ...cookie('x.forged'), origin: stack.controllerUrl },
    localAddress: from,
  } as never);
  const refused = await new Promise<string>((resolve) => {
    socket.on('connect', () => resolve('connected'));
    socket.on('connect_error', (e) => resolve(e.message));
  });
  socket.close();
  assert.match(refused, /^unauthorized/);
  const limited = await call(from, 'GET', '/api/whoami', cookie('y.forged'));
  assert.equal(limited.status, 429, 'past the limit, a dead cookie is refused without a look-up');
  assert.equal((await whoami(from, stack.clientToken)).status, 429, 'and so is a valid token from the address');
});

test('a refused guess is not looked up: it is answered at once while the tokens table is locked', { timeout: 60_000 }, async () => {
  const from = '127.0.0.4';
  for (let i = 0; i < FAILURES; i++) assert.equal((await whoami(from, `rc_c_guess${i}`)).status, 401);
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.begin(async (tx) => {
      // Any look-up of a token waits for this lock; call() gives up after 5 s.
      await tx`lock table tokens in access exclusive mode`;
      for (let i = 0; i < 20; i++) {
        const r = await whoami(from, i % 2 ? `rc_c_more${i}` : stack.clientToken);
        assert.equal(r.status, 429, `${i}: ${r.message}`);
      }
      assert.equal((await handshake(from, '/', 'rc_c_more')).split(':')[0], 'rate_limited');
    });
  } finally {
    await sql.end({ timeout: 2 });
  }
});

test('once the window has passed, the address is served again', { timeout: 60_000 }, async () => {
  const from = '127.0.0.7';
  const started = Date.now();
  for (let i = 0; i < FAILURES; i++) assert.equal((await whoami(from, `rc_c_guess${i}`)).status, 401);
  const refused = await whoami(from, stack.clientToken);
  assert.equal(refused.status, 429);
  // Polling with the right token: refused, not counted, until the first guess is a window old.
  await stack.waitFor(async () => (await whoami(from, stack.clientToken)).status === 200, 'the window to pass', (WINDOW_S + 10) * 1000);
  assert.ok(Date.now() - started >= (WINDOW_S - 1) * 1000, `served again after ${Date.now() - started} ms, not before the window`);
});
