import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import { Body, chunkedFeed, type Deadlines, http1Request } from '../../cli/http1';

/** Generous: these tests are not about the deadlines, except where they say so. */
const D: Deadlines = { connectMs: 30_000, answerMs: 30_000, stream: false };

const chunked = (parts: Buffer[]) =>
  Buffer.concat([
    ...parts.filter((p) => p.length).map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')])),
    Buffer.from('0\r\n\r\n'),
  ]);

function collect(body: Body): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    body.consume({ data: (c) => got.push(c), end: () => resolve(Buffer.concat(got)), error: reject });
  });
}

test('a chunked body decodes the same however the bytes are split', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.uint8Array({ minLength: 1, maxLength: 300 }).map((a) => Buffer.from(a)),
        { maxLength: 8 },
      ),
      fc.array(fc.nat(3000), { maxLength: 12 }),
      (parts, cuts) => {
        const wire = chunked(parts);
        const got: Buffer[] = [];
        let ended = 0;
        const feed = chunkedFeed({
          push: (d) => got.push(d),
          end: () => {
            ended += 1;
          },
        });
        let at = 0;
        for (const c of [...cuts, wire.length].sort((a, b) => a - b)) {
          const to = Math.min(c, wire.length);
          if (to > at) {
            feed(wire.subarray(at, to));
            at = to;
          }
        }
        assert.deepEqual(Buffer.concat(got), Buffer.concat(parts));
        assert.equal(ended, 1, 'the last chunk ends the body, once');
      },
    ),
    { numRuns: 300 },
  );
});

test('a body keeps what arrives before its consumer, then streams', () => {
  const body = new Body();
  body.push(Buffer.from('a'));
  body.push(Buffer.from('b'));
  const got: string[] = [];
  let ended = false;
  body.consume({
    data: (c) => got.push(c.toString()),
    end: () => {
      ended = true;
    },
    error: assert.fail,
  });
  body.push(Buffer.from('c'));
  body.end();
  body.push(Buffer.from('late'));
  assert.deepEqual(got, ['a', 'b', 'c']);
  assert.equal(ended, true);
});

async function withServer(fn: (port: number) => Promise<void>): Promise<void> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'application/x-test' });
      res.write('first ');
      setTimeout(() => {
        res.write('second');
        res.end();
      }, 20);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(418, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ bytes: body.length, head: body.subarray(0, 5).toString(), auth: req.headers.authorization }));
    });
  });
  // Both address families, and a host name.
  await new Promise<void>((r) => server.listen(0, '::', r));
  try {
    await fn((server.address() as { port: number }).port);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

for (const host of ['127.0.0.1', '[::1]', 'localhost']) {
  test(`against a real node:http server at ${host}: status, headers, streamed chunks, sized bodies, a 16 MiB upload`, async () => {
    await withServer(async (port) => {
      const s = await http1Request(new URL(`http://${host}:${port}/stream`), 'GET', {}, undefined, D);
      assert.equal(s.statusCode, 200);
      assert.equal(s.headers['content-type'], 'application/x-test');
      assert.equal((await collect(s.body)).toString(), 'first second');
      const j = await http1Request(new URL(`http://${host}:${port}/x?y=1`), 'POST', { authorization: 'Bearer t', 'content-length': '5' }, 'hello', D);
      assert.equal(j.statusCode, 418);
      assert.deepEqual(JSON.parse((await collect(j.body)).toString()), { bytes: 5, head: 'hello', auth: 'Bearer t' });
      const big = Buffer.alloc(16 * 1024 * 1024, 7);
      const up = await http1Request(new URL(`http://${host}:${port}/up`), 'PUT', { 'content-length': String(big.length) }, big, D);
      assert.deepEqual(JSON.parse((await collect(up.body)).toString()).bytes, big.length);
      await assert.rejects(http1Request(new URL(`http://${host}:1/`), 'GET', {}, undefined, D), /ECONNREFUSED/);
    });
  });
}

test('a connection cut in the middle of a body is an error, not a short success', async () => {
  const server = createTcpServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part');
      setTimeout(() => socket.end(), 10);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await http1Request(new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/`), 'GET', {}, undefined, D);
    // The server closed (FIN) 91 bytes short of its content-length.
    await assert.rejects(collect(res.body), /ECONNRESET/);
  } finally {
    server.close();
  }
});

/** A server that accepts connections and never answers (a frozen controller): its sockets, to close at the end. */
async function silentServer(fn: (port: number) => Promise<void>, first?: (socket: import('node:net').Socket) => void): Promise<void> {
  const sockets: import('node:net').Socket[] = [];
  const server = createTcpServer((socket) => {
    sockets.push(socket);
    first?.(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn((server.address() as { port: number }).port);
  } finally {
    for (const s of sockets) s.destroy();
    server.close();
  }
}

test('a server that accepts and never answers fails the request with NO_ANSWER once answerMs passes, not never', async () => {
  await silentServer(async (port) => {
    const t0 = Date.now();
    await assert.rejects(http1Request(new URL(`http://127.0.0.1:${port}/`), 'GET', {}, undefined, { ...D, answerMs: 300 }), /NO_ANSWER/);
    const took = Date.now() - t0;
    assert.ok(took >= 290 && took < 5000, `took ${took} ms`);
  });
});

test('an answer that stops midway: a whole answer fails with NO_ANSWER; a stream may stay silent', async () => {
  const head = (socket: import('node:net').Socket) =>
    socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n'));
  await silentServer(async (port) => {
    const whole = await http1Request(new URL(`http://127.0.0.1:${port}/`), 'GET', {}, undefined, { ...D, answerMs: 300 });
    await assert.rejects(collect(whole.body), /NO_ANSWER/);
    const stream = await http1Request(new URL(`http://127.0.0.1:${port}/`), 'GET', {}, undefined, { ...D, answerMs: 300, stream: true });
    const got: Buffer[] = [];
    let outcome = 'open';
    stream.body.consume({ data: (c) => got.push(c), end: () => (outcome = 'end'), error: (e) => (outcome = e.message) });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(outcome, 'open', 'a silent stream is not cut');
    assert.equal(Buffer.concat(got).toString(), 'first');
    stream.body.end();
  }, head);
});
