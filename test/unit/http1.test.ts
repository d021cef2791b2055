import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import fc from 'fast-check';
import { chunkedFeed, http1Request } from '../../cli/http1';

const chunked = (parts: Buffer[]) => Buffer.concat([...parts.filter((p) => p.length).map((p) => Buffer.concat([Buffer.from(p.length.toString(16) + '\r\n'), p, Buffer.from('\r\n')])), Buffer.from('0\r\n\r\n')]);

test('a chunked body decodes the same however the bytes are split', () => {
  fc.assert(fc.property(fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }).map((a) => Buffer.from(a)), { maxLength: 8 }), fc.array(fc.nat(3000), { maxLength: 12 }), (parts, cuts) => {
    const wire = chunked(parts);
    const out = new PassThrough();
    const got: Buffer[] = [];
    out.on('data', (d: Buffer) => got.push(d));
    const feed = chunkedFeed(out);
    let at = 0;
    for (const c of [...cuts, wire.length].sort((a, b) => a - b)) {
      const to = Math.min(c, wire.length);
      if (to > at) { feed(wire.subarray(at, to)); at = to; }
    }
    assert.deepEqual(Buffer.concat(got), Buffer.concat(parts));
    assert.equal(out.writableEnded, true, 'the last chunk ends the body');
  }), { numRuns: 300 });
});

test('against a real node:http server: status, headers, streamed chunks, content-length bodies', async () => {
  const server = createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'application/x-test' });
      res.write('first ');
      setTimeout(() => { res.write('second'); res.end(); }, 20);
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => { body += c; });
    req.on('end', () => { res.writeHead(418, { 'content-type': 'application/json' }); res.end(JSON.stringify({ got: body, auth: req.headers.authorization })); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const s = await http1Request(new URL(`http://127.0.0.1:${port}/stream`), 'GET', {});
    assert.equal(s.statusCode, 200);
    assert.equal(s.headers['content-type'], 'application/x-test');
    let text = '';
    for await (const c of s) text += c;
    assert.equal(text, 'first second');
    const j = await http1Request(new URL(`http://127.0.0.1:${port}/x?y=1`), 'POST', { authorization: 'Bearer t', 'content-length': '5' }, 'hello');
    assert.equal(j.statusCode, 418);
    let body = '';
    for await (const c of j) body += c;
    assert.deepEqual(JSON.parse(body), { got: 'hello', auth: 'Bearer t' });
    await assert.rejects(http1Request(new URL('http://127.0.0.1:1/'), 'GET', {}), /ECONNREFUSED/);
  } finally {
    server.close();
  }
});
