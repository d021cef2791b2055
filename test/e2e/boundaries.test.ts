// The controller's HTTP and socket boundaries against malformed input and
// cross-site requests: every answer is a 4xx with the usual error shape, the
// process stays up, and a request the session cookie authenticates changes
// nothing unless it comes from the dashboard's own origin with a JSON body.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { io } from 'socket.io-client';
import { Stack } from '../helpers/stack';

let stack: Stack;
/** The operator's dashboard session (POST /api/session), as its browser sends it. */
let adminCookie = '';
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
  adminCookie = await stack.signIn(stack.adminToken);
});
after(async () => stack.stop());

/** A raw request: the path goes on the wire exactly as given (fetch would normalise it). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(stack.controllerUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens a socket and tells how its handshake ended: 'connected', the server's refusal, or 'no answer'. */
function handshake(ns: string, extraHeaders: Record<string, string>): Promise<string> {
  const socket = io(stack.controllerUrl + ns, { transports: ['websocket'], reconnection: false, forceNew: true, timeout: 4000, extraHeaders });
  return new Promise<string>((resolve) => {
    const timer = setTimeout(() => resolve('no answer'), 5000);
    const done = (what: string) => {
      clearTimeout(timer);
      socket.close();
      resolve(what);
    };
    socket.on('connect', () => done('connected'));
    socket.on('connect_error', (e) => done(e.message));
  });
}

const alive = async () => (await stack.api('GET', '/api/whoami')).status === 200;

function errorCode(body: string): string | null {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    return null;
  }
}

test('a malformed session cookie on a socket handshake does not take the controller down', { timeout: 30_000 }, async () => {
  for (const ns of ['/', '/tty']) assert.match(await handshake(ns, { cookie: 'rc_session=%ff' }), /unauthorized/, ns);
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(await alive(), 'the controller still answers');
});

test('bad %-escapes, NUL bytes and odd request targets get a 4xx with the error shape, never a 500', { timeout: 30_000 }, async () => {
  const auth = { authorization: `Bearer ${stack.clientToken}` };
  const cases: [string, string, Record<string, string>?][] = [
    ['GET', '/api/whoami', { cookie: 'rc_session=%ff' }],
    ['GET', '/api/jobs/%ff', auth],
    ['GET', '/api/jobs/%', auth],
    ['GET', '/api/jobs/%zz/stream', auth],
    ['GET', '/api/devices/a%2', auth],
    ['GET', '/api/hosts/%ff%fe/sheet', auth],
    ['POST', '/api/jobs/%c0%af/kill', { ...auth, 'content-type': 'application/json' }],
    ['GET', '/api/jobs?submitter=%00', auth],
    ['GET', '/api/jobs?device=a%00b', auth],
    ['GET', '/api/jobs?state=running%00', auth],
    ['GET', '/api/devices?select=gpu%00=1', auth],
    ['GET', '/api/devices/alpha:gpu0/files?path=/workspace/a%00b&submitter=t', auth],
    ['GET', '/api/devices/alpha:gpu0/files?path=/workspace/a&submitter=t%00', auth],
    ['GET', '/api/jobs/j0000000000/stream?after=%00', auth],
    ['GET', '/api/devices/%00', auth],
  ];
  for (const [method, path, headers] of cases) {
    const r = await raw(method, path, headers);
    assert.ok(r.status >= 400 && r.status < 500, `${method} ${path}: ${r.status} ${r.body}`);
    assert.ok(errorCode(r.body), `${method} ${path}: the error shape, got ${r.body}`);
    assert.doesNotMatch(r.body, /at \w+ \(|node:internal|\.ts:\d+/, 'no stack trace');
  }
  assert.ok(await alive());
});

/**
 * Sends a body too big for the route: chunked (no length given), or under a
 * Content-Length it then keeps sending. Writes up to `bytes` whatever the
 * answer, as a client that does not read while it sends would; a write that
 * fails once the controller has closed the connection is expected.
 */
function oversize(
  method: string,
  path: string,
  bytes: number,
  opts: { contentLength?: number; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(stack.controllerUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        // Keep-alive, as rc's CLI asks: the Connection: close must be the controller's.
        agent: new Agent({ keepAlive: true }),
        headers: {
          authorization: `Bearer ${stack.clientToken}`,
          ...(opts.contentLength === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(opts.contentLength) }),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    let answered = false;
    req.on('response', () => {
      answered = true;
    });
    req.on('error', (err) => {
      if (!answered) reject(new Error(`${method} ${path} (${bytes} bytes sent): no answer, the connection broke: ${err.message}`));
    });
    const piece = Buffer.alloc(256 * 1024, 'x');
    let sent = 0;
    const write = () => {
      while (sent < bytes && !req.destroyed) {
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', write);
      }
      if (opts.contentLength === undefined) req.end();
    };
    write();
  });
}

test('a body over its limit gets 413 with the error shape and Connection: close, chunked or by its Content-Length, never a reset', {
  timeout: 60_000,
}, async () => {
  const MiB = 1024 * 1024;
  const files = '/api/devices/alpha:gpu0/files?path=/workspace/big.bin&submitter=tester';
  const cases: [string, string, string, number, { contentLength?: number; headers?: Record<string, string> }, RegExp][] = [
    ['rc cp upload, chunked', 'PUT', files, 20 * MiB, {}, /at most 16 MiB/],
    // Past what the controller reads and drops of a refused body, it answers while the client still sends.
    ['rc cp upload, chunked, 64 MiB', 'PUT', files, 64 * MiB, {}, /at most 16 MiB/],
    ['rc cp upload, Content-Length of 1 GiB (1 MiB sent)', 'PUT', files, MiB, { contentLength: 1024 * MiB }, /at most 16 MiB/],
    ['a JSON body, chunked', 'POST', '/api/jobs', 4 * MiB, { headers: { 'content-type': 'application/json' } }, /over 2 MiB/],
    [
      'a JSON body, Content-Length of 1 GiB (1 MiB sent)',
      'POST',
      '/api/jobs',
      MiB,
      { contentLength: 1024 * MiB, headers: { 'content-type': 'application/json' } },
      /over 2 MiB/,
    ],
  ];
  for (const [what, method, path, bytes, opts, message] of cases) {
    const r = await oversize(method, path, bytes, opts);
    assert.equal(r.status, 413, `${what}: ${r.body}`);
    assert.equal(errorCode(r.body), 'payload_too_large', what);
    assert.match((JSON.parse(r.body) as { error: { message: string } }).error.message, message, what);
    assert.equal(r.headers.connection, 'close', `${what}: the answer says the connection ends`);
  }
  assert.equal(existsSync(join(stack.workspaceOf('alpha'), 'big.bin')), false, 'nothing was written');
  assert.ok(await alive(), 'the controller still answers');
});

test('the controller itself ends the connection of a refused body, after its answer', { timeout: 60_000 }, async () => {
  const url = new URL(stack.controllerUrl);
  const MiB = 1024 * 1024;
  for (const framing of ['content-length', 'chunked'] as const) {
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
    });
    const ended = once(socket, 'end');
    // Once the controller has ended it, the client's side ends too (allowHalfOpen is off): later writes fail.
    socket.on('error', () => {});
    const drainedOrClosed = () => new Promise((r) => socket.once('drain', r).once('close', r));
    socket.write(
      `PUT /api/devices/alpha:gpu0/files?path=/workspace/big.bin&submitter=tester HTTP/1.1\r\nhost: ${url.host}\r\nconnection: keep-alive\r\n` +
        `authorization: Bearer ${stack.clientToken}\r\n${framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${1024 * MiB}`}\r\n\r\n`,
    );
    // Up to 17 MiB: over the limit; then the client sends nothing more, and leaves its side open.
    const piece = Buffer.alloc(MiB, 'x');
    for (let i = 0; i < 17 && socket.writable; i++) {
      if (framing === 'chunked') socket.write(`${piece.length.toString(16)}\r\n`);
      if (!socket.write(framing === 'chunked' ? Buffer.concat([piece, Buffer.from('\r\n')]) : piece)) await drainedOrClosed();
    }
    let timer: NodeJS.Timeout | undefined;
    const open = new Promise<string>((r) => {
      timer = setTimeout(() => r('still open'), 15_000);
    });
    assert.equal(await Promise.race([ended.then(() => 'ended'), open]), 'ended', `${framing}: the controller ended the connection`);
    clearTimeout(timer);
    assert.match(text, /^HTTP\/1\.1 413 /, framing);
    assert.match(text, /\r\nconnection: close\r\n/i, framing);
    assert.equal(errorCode(text.slice(text.indexOf('\r\n\r\n') + 4)), 'payload_too_large', framing);
    socket.destroy();
  }
  assert.ok(await alive(), 'the controller still answers');
});

test('NUL bytes in JSON bodies are refused with bad_request, never a 500', { timeout: 30_000 }, async () => {
  const bodies: [string, string, unknown][] = [
    ['POST', '/api/jobs', { argv: ['echo', 'a\u0000b'], submitter: 'tester' }],
    ['POST', '/api/jobs', { argv: ['true'], submitter: 'tester', cwd: '/tmp/\u0000' }],
    ['POST', '/api/explain', { selector: 'gpu\u0000=1' }],
    ['POST', '/api/explain', { device: 'alpha:gpu0\u0000' }],
  ];
  for (const [method, path, body] of bodies) {
    const r = await stack.api(method, path, body);
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.equal((r.body as { error: { code: string } }).error.code, 'bad_request');
  }
  const admin = await stack.api('PUT', '/api/hosts/alpha/sheet', { body: 'a\u0000b' }, stack.adminToken);
  assert.equal(admin.status, 400, JSON.stringify(admin.body));
});

// ---- cross-site requests -------------------------------------------------

const cookie = () => ({ cookie: adminCookie });
const own = () => new URL(stack.controllerUrl).origin;
const evil = () => `http://127.0.0.1:${Number(new URL(stack.controllerUrl).port) + 1}`;

async function tokenNames(): Promise<string[]> {
  const r = await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken);
  return (r.body as { tokens: { name: string }[] }).tokens.map((t) => t.name);
}

test("a request the session cookie authenticates changes nothing unless it comes from the dashboard's own origin", { timeout: 30_000 }, async () => {
  const body = JSON.stringify({ name: 'forged', kind: 'admin' });
  const attempts: [string, Record<string, string>, number][] = [
    // Another port of the same host is same-site: SameSite=Strict lets the cookie through.
    ['text/plain from another origin', { ...cookie(), origin: evil(), 'content-type': 'text/plain' }, 403],
    ['JSON from another origin', { ...cookie(), origin: evil(), 'content-type': 'application/json' }, 403],
    ['a form from another origin', { ...cookie(), origin: evil(), 'content-type': 'application/x-www-form-urlencoded' }, 403],
    ['same-site but cross-origin by Sec-Fetch-Site', { ...cookie(), 'sec-fetch-site': 'same-site', 'content-type': 'application/json' }, 403],
    ['no Origin and no Sec-Fetch-Site', { ...cookie(), 'content-type': 'application/json' }, 403],
    ['text/plain from its own origin', { ...cookie(), origin: own(), 'content-type': 'text/plain' }, 415],
    ['a form from its own origin', { ...cookie(), origin: own(), 'content-type': 'application/x-www-form-urlencoded' }, 415],
    ['no content type from its own origin', { ...cookie(), origin: own() }, 415],
  ];
  for (const [what, headers, status] of attempts) {
    const r = await raw('POST', '/api/admin/tokens', headers, body);
    assert.equal(r.status, status, `${what}: ${r.body}`);
    assert.equal(errorCode(r.body), status === 403 ? 'forbidden' : 'unsupported_media_type', what);
    assert.doesNotMatch(r.body, /rc_a_/, `${what}: no token came back`);
  }
  assert.ok(!(await tokenNames()).includes('forged'), 'no token was created');
  // The dashboard itself: same origin, JSON.
  const ok = await raw(
    'POST',
    '/api/admin/tokens',
    { ...cookie(), origin: own(), 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    JSON.stringify({ name: 'from-dashboard', kind: 'client' }),
  );
  assert.equal(ok.status, 201, ok.body);
  // Reads are not changes: a GET with the cookie needs no Origin.
  assert.equal((await raw('GET', '/api/whoami', cookie())).status, 200);
});

test("the Teams page's actions (a team's share, a limit, a token's team) are refused with the cookie from another origin, and change nothing", {
  timeout: 30_000,
}, async () => {
  assert.equal((await stack.api('POST', '/api/admin/teams', { name: 'csrf-team' }, stack.adminToken)).status, 201);
  const headers = { ...cookie(), origin: evil(), 'content-type': 'application/json' };
  const own = (await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken)).body as { tokens: { id: number; name: string; team: string }[] };
  const victim = own.tokens.find((t) => t.name !== 'forged' && t.team === 'default')!;
  const forged: [string, string, unknown][] = [
    ['PUT', '/api/admin/teams/csrf-team', { share: 9 }],
    ['PUT', '/api/admin/limits/team:csrf-team', { gpus: 1 }],
    ['PUT', `/api/admin/tokens/${victim.id}`, { team: 'csrf-team' }],
  ];
  for (const [method, path, body] of forged) {
    const r = await raw(method, path, headers, JSON.stringify(body));
    assert.equal(r.status, 403, `${method} ${path}: ${r.body}`);
    assert.equal(errorCode(r.body), 'forbidden', path);
  }
  const teams = (await stack.api('GET', '/api/admin/teams', undefined, stack.adminToken)).body as { teams: { name: string; share: number }[] };
  assert.equal(teams.teams.find((t) => t.name === 'csrf-team')!.share, 1, 'the share is as it was');
  const limits = (await stack.api('GET', '/api/admin/limits?scope=team:csrf-team', undefined, stack.adminToken)).body as { limits: { gpus: number | null }[] };
  assert.ok(
    limits.limits.every((l) => l.gpus === null),
    'no limit was set',
  );
  const after = (await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken)).body as typeof own;
  assert.equal(after.tokens.find((t) => t.id === victim.id)!.team, 'default', "the token's team is as it was");
});

test("raw-byte writes (a job's stdin, rc cp's upload) are refused with the cookie from another origin", { timeout: 30_000 }, async () => {
  const job = (await stack.api('POST', '/api/jobs', { argv: ['cat'], submitter: 'tester', stdin: true })).body as { job: { id: string } };
  const headers = { ...cookie(), origin: evil(), 'content-type': 'application/octet-stream' };
  const stdin = await raw('POST', `/api/jobs/${job.job.id}/stdin?submitter=tester&offset=0`, headers, 'forged input');
  assert.equal(stdin.status, 403, stdin.body);
  assert.equal(errorCode(stdin.body), 'forbidden');
  await stack.api('POST', `/api/jobs/${job.job.id}/kill`, { submitter: 'tester' });
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the cat job to end and free its device');
  const up = await raw('PUT', '/api/devices/alpha:gpu0/files?path=/workspace/forged.txt&submitter=tester', headers, 'forged');
  assert.equal(up.status, 403, up.body);
  assert.equal(errorCode(up.body), 'forbidden');
  // Nothing was written: the file is not there.
  const read = await stack.api('GET', '/api/devices/alpha:gpu0/files?path=/workspace/forged.txt&submitter=tester');
  assert.equal(read.status, 404, JSON.stringify(read.body));
});

test("no GET changes anything with the session cookie: rc cp's download (a lease, a job, an audit row) takes a bearer token only", {
  timeout: 30_000,
}, async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free');
  const put = await raw(
    'PUT',
    '/api/devices/alpha:gpu0/files?path=/workspace/img.txt&submitter=tester',
    { authorization: `Bearer ${stack.clientToken}`, 'content-type': 'application/octet-stream' },
    'secret-ish',
  );
  assert.equal(put.status, 200, put.body);
  const copies = async () => ((await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: { kind: string }[] }).jobs.filter((j) => j.kind === 'cp').length;
  const downloads = async () =>
    ((await stack.api('GET', '/api/audit?limit=500', undefined, stack.adminToken)).body as { entries: { action: string }[] }).entries.filter(
      (e) => e.action === 'cp.down',
    ).length;
  const [jobsBefore, auditBefore] = [await copies(), await downloads()];
  const path = '/api/devices/alpha:gpu0/files?path=/workspace/img.txt&submitter=tester';
  // An <img> on a same-site page, on the dashboard's own origin, and a bare request: each with an operator's cookie.
  const tries: Record<string, string>[] = [{ 'sec-fetch-site': 'same-site' }, { 'sec-fetch-site': 'same-origin', origin: own() }, {}];
  for (const headers of tries) {
    const r = await raw('GET', path, { ...cookie(), ...headers });
    assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.body}`);
    assert.equal(errorCode(r.body), 'forbidden');
    assert.match(r.body, /takes a bearer token/);
  }
  assert.equal(await copies(), jobsBefore, 'no cp job was made');
  assert.equal(await downloads(), auditBefore, 'no download was audited');
  // With a bearer token (rc cp), the same download works.
  const ok = await raw('GET', path, { authorization: `Bearer ${stack.clientToken}` });
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.body, 'secret-ish');
});

test('bearer-token clients are unaffected by the origin and content-type rules', { timeout: 30_000 }, async () => {
  const r = await raw(
    'PUT',
    '/api/hosts/alpha/sheet',
    { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    JSON.stringify({ body: '# alpha' }),
  );
  assert.equal(r.status, 200, r.body);
  // rc cp's upload is raw bytes, not JSON.
  const up = await raw(
    'PUT',
    '/api/devices/alpha:gpu0/files?path=/workspace/bearer.txt&submitter=tester',
    { authorization: `Bearer ${stack.clientToken}`, 'content-type': 'application/octet-stream' },
    'hello',
  );
  assert.equal(up.status, 200, up.body);
});

test('the cookie is Secure when the controller is reached over HTTPS (through a TLS proxy)', { timeout: 30_000 }, async () => {
  const plain = await raw('POST', '/api/session', { 'content-type': 'application/json', origin: own() }, JSON.stringify({ token: stack.clientToken }));
  assert.equal(plain.status, 200, plain.body);
  assert.doesNotMatch(String(plain.headers['set-cookie']), /Secure/);
  const host = new URL(stack.controllerUrl).host;
  const proxied = await raw(
    'POST',
    '/api/session',
    { 'content-type': 'application/json', origin: `https://${host}`, 'x-forwarded-proto': 'https' },
    JSON.stringify({ token: stack.clientToken }),
  );
  assert.equal(proxied.status, 200, proxied.body);
  assert.match(String(proxied.headers['set-cookie']), /; Secure/);
  assert.match(String(proxied.headers['set-cookie']), /HttpOnly/);
  // Signing in from another origin is refused (login CSRF).
  const other = await raw(
    'POST',
    '/api/session',
    { 'content-type': 'application/x-www-form-urlencoded', origin: evil() },
    `token=${encodeURIComponent(stack.clientToken)}`,
  );
  assert.equal(other.status, 403, other.body);
});

test('responses forbid framing and carry a Content-Security-Policy', { timeout: 30_000 }, async () => {
  for (const path of ['/api/whoami', '/api/nope', '/login']) {
    const r = await raw('GET', path, { authorization: `Bearer ${stack.clientToken}` });
    assert.equal(r.headers['x-frame-options'], 'DENY', path);
    assert.match(String(r.headers['content-security-policy']), /frame-ancestors 'none'/, path);
    assert.match(String(r.headers['content-security-policy']), /default-src 'self'/, path);
    assert.equal(r.headers['x-content-type-options'], 'nosniff', path);
  }
});

test("a socket the session cookie authenticates opens only from the dashboard's own origin", { timeout: 30_000 }, async () => {
  for (const ns of ['/', '/tty']) {
    for (const [origin, want] of [
      [evil(), /forbidden/],
      [own(), /connected/],
    ] as const) {
      assert.match(await handshake(ns, { ...cookie(), origin }), want, `${ns} from ${origin}`);
    }
  }
});

test('an array (rc run --array) is neither submitted nor killed with the cookie from another origin', { timeout: 30_000 }, async () => {
  const headers = { ...cookie(), origin: evil(), 'content-type': 'application/json' };
  const jobs = async () => ((await stack.api('GET', '/api/jobs?limit=1000', undefined, stack.adminToken)).body as { jobs: unknown[] }).jobs.length;
  const before = await jobs();
  const submit = await raw('POST', '/api/arrays', headers, JSON.stringify({ array: '0-9', job: { argv: ['true'], submitter: 'forged' } }));
  assert.equal(submit.status, 403, submit.body);
  assert.equal(errorCode(submit.body), 'forbidden');
  assert.equal(await jobs(), before, 'no task was stored');
  // An array of the admin's own, sleeping; the forged kill leaves every task as it was.
  const made = await stack.api('POST', '/api/arrays', { array: '0-1', job: { argv: ['sleep', '30'], submitter: 'admin' } }, stack.adminToken);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = (made.body as { array: { id: string } }).array.id;
  const kill = await raw('POST', `/api/arrays/${id}/kill`, headers, JSON.stringify({ submitter: 'admin' }));
  assert.equal(kill.status, 403, kill.body);
  const view = (await stack.api('GET', `/api/arrays/${id}`, undefined, stack.adminToken)).body as { array: { counts: { killed: number; cancelled: number } } };
  assert.deepEqual([view.array.counts.killed, view.array.counts.cancelled], [0, 0], 'no task was stopped');
  assert.equal((await stack.api('POST', `/api/arrays/${id}/kill`, { submitter: 'admin' }, stack.adminToken)).status, 200);
});
