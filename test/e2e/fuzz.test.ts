// Random bytes at every door of a real controller: each API route (its path
// parameters, query string, headers, cookie and body), raw HTTP that is not
// quite HTTP, and socket.io handshakes on every namespace. Whatever comes in,
// the answer is never a 5xx, the process stays up, and its memory comes back
// near where it started. Seeded: RC_FUZZ_SEED=<n> replays a run, and a
// failure names its seed and the request.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { io } from 'socket.io-client';
import { Router } from '../../server/http/router';
import { registerApi } from '../../server/http/api';
import type { ApiDeps } from '../../server/http/api';
import { Stack } from '../helpers/stack';

const SEED = Number(process.env.RC_FUZZ_SEED ?? Date.now() % 1_000_000);
const REQUESTS = Number(process.env.RC_FUZZ_REQUESTS ?? 1500);

let stack: Stack;
/** The operator's dashboard session cookie (`rc_session=…`). */
let adminCookie = '';
// No worker: nothing the fuzz submits can run anywhere.
before(async () => {
  // Its random tokens and cookies all come from one address: past RC_AUTH_FAILURES every route would answer 429 (test/e2e/token-guesses.test.ts covers that).
  stack = await Stack.start({ workers: [], controllerEnv: { RC_AUTH_FAILURES: '0' } });
  adminCookie = await stack.signIn(stack.adminToken);
});
after(async () => stack.stop());

/** mulberry32: small, fast, and the same sequence for the same seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** encodeURIComponent, with a lone surrogate sent as the (invalid UTF-8) bytes it would have. */
function enc(s: string): string {
  return s
    .split(/([\ud800-\udfff])/)
    .map((part) => (/^[\ud800-\udfff]$/.test(part) ? '%ed%a0%80' : encodeURIComponent(part)))
    .join('');
}

class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(max: number): Buffer {
    return Buffer.from(Array.from({ length: this.int(max + 1) }, () => this.int(256)));
  }
  /** Text that is mostly printable, with the characters that break things mixed in. */
  text(max: number): string {
    const nasty = [
      '\u0000',
      '\u001b',
      '\u009b',
      '\u202e',
      '\ud800',
      '\uffff',
      '%',
      '%ff',
      '%00',
      '%zz',
      '..',
      '/',
      '\\',
      '"',
      "'",
      ';',
      '=',
      '&',
      '?',
      '#',
      ' ',
      '\n',
      '\r\n',
      'é',
      '😀',
      ':gpu',
      '{}',
      '[]',
    ];
    let s = '';
    const n = this.int(max + 1);
    for (let i = 0; i < n; i++) s += this.chance(0.2) ? this.pick(nasty) : String.fromCharCode(32 + this.int(95));
    return s;
  }
  /** A path segment as it goes on the wire: raw printable, %-escaped bytes, or broken escapes. */
  segment(): string {
    switch (this.int(5)) {
      case 0:
        return [...this.bytes(12)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
      case 1:
        return this.pick(['%', '%f', '%ff', '%00', '%c0%af', '%e2%80%ae', 'j0000000000', 'alpha:gpu0', '1', '0', '-1', '99999999999999999999']);
      case 2:
        return 'x'.repeat(this.int(3000));
      default:
        return enc(this.text(20)).replace(/%25/g, this.pick(['%', '%25']));
    }
  }
  json(depth = 0): unknown {
    switch (this.int(depth > 3 ? 5 : 8)) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, 30 * 86400 + 1]);
      case 3:
      case 4:
        return this.text(30);
      case 5:
        return Array.from({ length: this.int(5) }, () => this.json(depth + 1));
      default: {
        const keys = [
          'argv',
          'submitter',
          'selector',
          'device',
          'cwd',
          'gpus',
          'priority',
          'wait',
          'kind',
          'ttlS',
          'name',
          'body',
          'reason',
          'token',
          'waitTimeoutS',
          'maxRuntimeS',
          'idleTimeoutS',
          '__proto__',
          'constructor',
        ];
        return Object.fromEntries(Array.from({ length: this.int(6) }, () => [this.chance(0.8) ? this.pick(keys) : this.text(8), this.json(depth + 1)]));
      }
    }
  }
}

interface Answer {
  status: number;
  head: string;
}

/** One raw HTTP/1.1 request over TCP: the request line and headers go out byte for byte. */
function send(head: Buffer, body: Buffer): Promise<Answer> {
  const url = new URL(stack.controllerUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let got = Buffer.alloc(0);
    const done = () => {
      const text = got.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, head: text.slice(0, 300) });
      socket.destroy();
    };
    socket.setTimeout(10_000, done);
    socket.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      if (/\r\n\r\n/.test(got.toString('latin1'))) done();
    });
    socket.on('end', done);
    socket.on('error', done);
    socket.write(Buffer.concat([head, body]));
  });
}

function routes(): { method: string; path: string }[] {
  // The real route table, read from the router itself: no route is left out.
  const router = new Router(null as never, () => {});
  registerApi(router, {} as ApiDeps);
  return router.list();
}

/** Requests in flight at once: the controller is hit by several clients, as it is in use. */
const IN_FLIGHT = 8;

/** Runs `each` over `items`, at most `n` at a time. */
async function inPool<T>(items: readonly T[], n: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

function rssKiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

test(`every route, header, cookie and body of random bytes: 0 × 5xx, the controller up, its memory back (seed ${SEED})`, { timeout: 600_000 }, async () => {
  const g = new Gen(rng(SEED));
  const table = routes();
  assert.ok(table.length >= 20, `the route table has ${table.length} routes`);
  const host = new URL(stack.controllerUrl).host;
  const pid = stack.controllerPid!;
  const rssBefore = rssKiB(pid);
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  const requests: { head: Buffer; body: Buffer; shown: string }[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const route = g.pick(table);
    const method = g.chance(0.85) ? route.method : g.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'BREW']);
    let path = route.path.replace(/:(\w+)/g, () => g.segment());
    if (g.chance(0.1)) path = g.pick(['/api', '/api/', '/api//jobs', '/api/jobs/../admin/tokens', '/api/%2e%2e/x', `/api/${g.segment()}`]);
    if (g.chance(0.7)) {
      const keys = ['select', 'state', 'device', 'submitter', 'limit', 'after', 'follow', 'path', 'json', g.text(5)];
      path += `?${Array.from({ length: 1 + g.int(4) }, () => `${enc(g.pick(keys))}=${g.chance(0.5) ? g.segment() : enc(g.text(40))}`).join('&')}`;
    }
    const headers: string[] = [`Host: ${g.chance(0.95) ? host : g.text(20).replace(/[\r\n]/g, '')}`, 'Connection: close'];
    switch (g.int(7)) {
      case 0:
        break;
      case 1:
        headers.push(`Authorization: Bearer ${stack.clientToken}`);
        break;
      case 2:
        headers.push(`Authorization: Bearer ${stack.adminToken}`);
        break;
      case 3:
        headers.push(`Authorization: ${g.text(60).replace(/[\r\n]/g, '')}`);
        break;
      case 4:
        headers.push(`Cookie: ${adminCookie}`, `Origin: ${g.chance(0.5) ? stack.controllerUrl : 'http://evil.example'}`);
        break;
      case 5:
        headers.push(`Cookie: rc_session=${g.segment()}`);
        break;
      default:
        headers.push(`Cookie: ${g.text(80).replace(/[\r\n]/g, '')}`);
    }
    headers.push(
      `Content-Type: ${g.pick(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream', 'multipart/form-data; boundary=x', g.text(20).replace(/[\r\n]/g, '')])}`,
    );
    if (g.chance(0.3)) headers.push(`Accept: ${g.pick(['application/x-rc-stream', '*/*', g.text(20).replace(/[\r\n]/g, '')])}`);
    if (g.chance(0.1)) headers.push(`${g.pick(['Sec-Fetch-Site', 'X-Forwarded-Proto', 'Origin', 'Content-Length'])}: ${g.text(20).replace(/[\r\n]/g, '')}`);
    const body = g.chance(0.3) ? g.bytes(300) : Buffer.from(g.chance(0.8) ? (JSON.stringify(g.json()) ?? '') : g.text(200));
    const head = Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\nContent-Length: ${body.length}\r\n\r\n`, 'latin1');
    requests.push({ head, body, shown: `#${i} ${method} ${path.slice(0, 200)} [${headers.slice(2).join(' | ').slice(0, 200)}]` });
  }
  // Made first (the seed alone decides them), then sent a few at a time: the order they arrive in is not what is tested.
  await inPool(requests, IN_FLIGHT, async (r) => {
    const answer = await send(r.head, r.body);
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    if (answer.status >= 500 || answer.status === 0) failures.push(`${r.shown} → ${answer.head.split('\r\n')[0] || 'no answer'}`);
  });
  // Not HTTP at all: random bytes, and request lines cut short.
  const junk = Array.from({ length: 200 }, () =>
    g.chance(0.5) ? g.bytes(400) : Buffer.from(`${g.pick(['GET', 'POST'])} /api/${g.segment()} HTTP/1.1\r\n${g.text(100)}`, 'latin1'),
  );
  await inPool(junk, IN_FLIGHT, async (bytes) => {
    const answer = await send(bytes, Buffer.alloc(0));
    if (answer.status >= 500) failures.push(`junk ${JSON.stringify(bytes.toString('latin1').slice(0, 60))} → ${answer.head.split('\r\n')[0]}`);
  });
  // socket.io: random credentials, cookies and origins on every namespace, and engine.io's own query string.
  for (let i = 0; i < 150; i++) {
    const ns = g.pick(['/', '/tty', '/worker', `/${g.text(6).replace(/[^a-z]/g, '')}`]);
    const outcome = await new Promise<string>((resolve) => {
      const socket = io(stack.controllerUrl + ns, {
        transports: [g.pick(['websocket', 'polling'] as const)],
        reconnection: false,
        forceNew: true,
        timeout: 3000,
        auth: g.chance(0.5) ? { token: g.chance(0.3) ? stack.clientToken : g.text(300) } : g.chance(0.5) ? { token: g.json() } : {},
        extraHeaders: { cookie: `rc_session=${g.segment()}`, origin: g.chance(0.5) ? stack.controllerUrl : g.text(30).replace(/[^\x21-\x7e]/g, '') || 'null' },
      });
      const t = setTimeout(() => {
        socket.close();
        resolve('no answer');
      }, 4000);
      socket.on('connect', () => {
        clearTimeout(t);
        socket.close();
        resolve('connected');
      });
      socket.on('connect_error', (e) => {
        clearTimeout(t);
        socket.close();
        resolve(e.message);
      });
    });
    if (outcome === 'no answer') failures.push(`socket ${ns} #${i}: no answer to the handshake`);
  }
  const polls = Array.from({ length: 100 }, () => {
    const q = `EIO=${g.pick(['4', '3', '', g.segment()])}&transport=${g.pick(['polling', 'websocket', g.segment()])}${g.chance(0.5) ? `&sid=${g.segment()}` : ''}&t=${g.segment()}`;
    const head = Buffer.from(
      `${g.pick(['GET', 'POST'])} /socket.io/?${q} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\nContent-Length: 20\r\n\r\n`,
      'latin1',
    );
    return { q, head, body: Buffer.from(Array.from({ length: 20 }, () => g.int(256))) };
  });
  await inPool(polls, IN_FLIGHT, async ({ q, head, body }) => {
    const answer = await send(head, body);
    if (answer.status >= 500) failures.push(`engine.io ${q} → ${answer.head.split('\r\n')[0]}`);
  });
  const whoami = await stack.api('GET', '/api/whoami', undefined, stack.adminToken);
  assert.equal(whoami.status, 200, 'the controller still answers');
  const rssAfter = rssKiB(pid);
  console.log(
    `fuzz seed ${SEED}: ${REQUESTS} requests + 200 junk + 250 socket handshakes; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; RSS ${(rssBefore / 1024).toFixed(0)} → ${(rssAfter / 1024).toFixed(0)} MiB`,
  );
  assert.deepEqual(failures.slice(0, 20), [], `seed ${SEED}: ${failures.length} request(s) got a 5xx or no answer`);
  assert.ok(rssAfter - rssBefore < 96 * 1024, `controller RSS grew from ${rssBefore} to ${rssAfter} KiB`);
});
