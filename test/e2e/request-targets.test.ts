// Request targets that are not paths (an absolute URL, `*`, an authority, a
// path starting with // or holding a \, a malformed %-escape), sent over a
// raw socket to a controller that serves the dashboard too: each gets a 4xx
// with the error body, from the API's paths and the pages' alike, and the
// controller logs no stack trace. Next, left to itself, answered some with a
// 500 and a logged TypeError, others with a redirect.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [], dashboard: true });
});
after(async () => stack?.stop());

interface Answer {
  status: number;
  headers: string;
  body: string;
}

/** Sends a request line and headers as given, and reads the answer until the controller ends the connection. */
function send(requestLine: string, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(stack.controllerUrl);
  const head = Object.entries({ host: url.host, connection: 'close', ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${requestLine}: no end of the answer in 10 s; got ${JSON.stringify(text)}`));
    }, 10_000);
    socket.on('data', (c: Buffer) => {
      text += c.toString();
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${requestLine}: ${err.message}; got ${JSON.stringify(text)}`));
    });
    socket.on('end', () => {
      clearTimeout(timer);
      const split = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
      resolve({ status, headers: text.slice(0, split), body: text.slice(split + 4) });
    });
    socket.write(`${requestLine}\r\n${head}\r\n`);
  });
}

function errorOf(a: Answer): { code: string; message: string } | null {
  try {
    return (JSON.parse(a.body) as { error?: { code: string; message: string } }).error ?? null;
  } catch {
    return null;
  }
}

const STACK_TRACE = /\n\s+at .+[(:]\d+|TypeError|URIError|Error: Invalid URL/;

test('request targets that are not paths get a 4xx with the error body, and log no stack trace', { timeout: 60_000 }, async () => {
  const signedIn = { cookie: `rc_session=${encodeURIComponent(stack.clientToken)}` };
  const cases: [string, Record<string, string>, number, RegExp][] = [
    ['GET http://x/ HTTP/1.1', {}, 400, /is not a path/],
    ['GET http://x/api/whoami HTTP/1.1', { authorization: `Bearer ${stack.clientToken}` }, 400, /is not a path/],
    ['GET http://evil.example/login HTTP/1.1', {}, 400, /is not a path/],
    ['GET http://[::1 HTTP/1.1', {}, 400, /is not a path/],
    ['GET http://x:99999/api/whoami HTTP/1.1', {}, 400, /is not a path/],
    ['GET * HTTP/1.1', {}, 400, /is not a path/],
    ['OPTIONS * HTTP/1.1', {}, 400, /is not a path/],
    ['GET example.com:443 HTTP/1.1', {}, 400, /not valid HTTP\/1\.1/],
    ['GET api/whoami HTTP/1.1', {}, 400, /not valid HTTP\/1\.1/],
    ['CONNECT example.com:443 HTTP/1.1', {}, 405, /not a proxy/],
    ['GET //double HTTP/1.1', {}, 400, /starts with \/\//],
    ['GET //api/whoami HTTP/1.1', { authorization: `Bearer ${stack.clientToken}` }, 400, /starts with \/\//],
    ['GET /\\evil.example HTTP/1.1', signedIn, 400, /holds a \\/],
    ['GET /api/jobs/%zz HTTP/1.1', { authorization: `Bearer ${stack.clientToken}` }, 400, /malformed %-escape/],
    ['GET /api/hosts/%ff%fe/sheet HTTP/1.1', { authorization: `Bearer ${stack.clientToken}` }, 400, /malformed %-escape/],
    // Pages that decode their path: Next answered these with a 500.
    ['GET /jobs/%zz HTTP/1.1', signedIn, 400, /malformed %-escape/],
    ['GET /jobs/%ff HTTP/1.1', signedIn, 400, /malformed %-escape/],
    ['GET /hosts/%zz HTTP/1.1', signedIn, 400, /malformed %-escape/],
    ['GET /devices/%ff%fe HTTP/1.1', signedIn, 400, /malformed %-escape/],
    ['GET /%zz HTTP/1.1', {}, 400, /malformed %-escape/],
  ];
  const logBefore = stack.controllerLog.length;
  for (const [line, headers, status, message] of cases) {
    const a = await send(line, headers);
    assert.equal(a.status, status, `${line}: ${a.headers}\n${a.body}`);
    const error = errorOf(a);
    assert.ok(error, `${line}: the error body, got ${a.body}`);
    assert.equal(error.code, status === 405 ? 'method_not_allowed' : 'bad_request', line);
    assert.match(error.message, message, line);
    assert.doesNotMatch(a.body, STACK_TRACE, `${line}: no stack trace in the answer`);
  }
  // Paths keep working: the sign-in page, a page, and the API.
  assert.equal((await send('GET /login HTTP/1.1')).status, 200);
  assert.equal((await send('GET /jobs?x=%zz HTTP/1.1', signedIn)).status, 200, 'a malformed escape in the query is the page’s to read');
  assert.equal((await send('GET /api/whoami HTTP/1.1', { authorization: `Bearer ${stack.clientToken}` })).status, 200);
  // Whatever the controller logs is written as it happens: an answered request has been logged.
  const log = stack.controllerLog.slice(logBefore);
  assert.doesNotMatch(log, STACK_TRACE, `no stack trace in the controller's log:\n${log}`);
});
