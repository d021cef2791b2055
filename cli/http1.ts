// A minimal HTTP/1.1 client on node:net for plain-http controllers. Loading
// node:http and its client machinery costs an agent's CLI call about 10 ms, a
// sixth of the time budget of `rc run -- true`; this needs only what net loads.
// It speaks exactly what the controller answers: a status line, headers, and a
// body sized by content-length or chunked, on a connection it then closes.
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';

export interface Http1Response extends PassThrough {
  statusCode: number;
  headers: Record<string, string>;
}

export function http1Request(url: URL, method: string, headers: Record<string, string>, body?: string | Buffer): Promise<Http1Response> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const socket = connect(Number(url.port || 80), host);
    socket.setNoDelay(true);
    const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: close'];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    if (typeof body === 'string' || body === undefined) socket.write(lines.join('\r\n') + '\r\n\r\n' + (body ?? ''));
    else { socket.write(lines.join('\r\n') + '\r\n\r\n'); socket.write(body); }
    let head: Buffer | null = Buffer.alloc(0) as Buffer;
    let res: Http1Response | null = null;
    let feed: ((data: Buffer) => void) | null = null;
    socket.on('data', (data: Buffer) => {
      if (head !== null) {
        head = Buffer.concat([head, data]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [status, ...fields] = head.subarray(0, end).toString('latin1').split('\r\n');
        res = Object.assign(new PassThrough(), { statusCode: Number(/^HTTP\/1\.[01] (\d{3})/.exec(status!)?.[1] ?? 0), headers: {} as Record<string, string> });
        for (const f of fields) {
          const i = f.indexOf(':');
          if (i > 0) res.headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim();
        }
        feed = res.headers['transfer-encoding']?.includes('chunked') ? chunkedFeed(res) : (d) => res!.write(d);
        const rest = head.subarray(end + 4);
        head = null;
        resolve(res);
        if (rest.length) feed(rest);
        return;
      }
      feed!(data);
    });
    socket.on('end', () => { if (res) { if (!res.writableEnded) res.end(); } else reject(new Error('ECONNRESET')); });
    socket.on('error', (err) => { if (res) res.destroy(err); else reject(err); });
  });
}

/** Decodes a chunked body as it arrives, writing the data to `out` and ending it at the last chunk. */
export function chunkedFeed(out: PassThrough): (data: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let remaining = -1; // bytes left in the current chunk, -1 while reading a size line
  return (data) => {
    pending = pending.length ? Buffer.concat([pending, data]) : data;
    for (;;) {
      if (remaining < 0) {
        const eol = pending.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(pending.subarray(0, eol).toString('latin1'), 16);
        pending = pending.subarray(eol + 2);
        if (!Number.isFinite(size) || size === 0) { if (!out.writableEnded) out.end(); return; }
        remaining = size;
      }
      if (pending.length < remaining + 2) {
        // Pass on what we have of the chunk now: output must not wait for the chunk's end.
        const take = Math.min(pending.length, remaining);
        if (take > 0) { out.write(pending.subarray(0, take)); pending = pending.subarray(take); remaining -= take; }
        if (remaining > 0 || pending.length < 2) return;
      } else {
        out.write(pending.subarray(0, remaining));
        pending = pending.subarray(remaining);
        remaining = 0;
      }
      if (remaining === 0) {
        if (pending.length < 2) return;
        pending = pending.subarray(2); // the CRLF after the chunk
        remaining = -1;
      }
    }
  };
}
