// A minimal HTTP/1.1 client for plain-http controllers. Loading node:http and
// its client machinery costs an agent's CLI call about 10 ms, a sixth of the
// time budget of `rc run -- true`; this needs only a node:net connection.
// It speaks exactly what the controller answers: a status line, headers, and a
// body sized by content-length or chunked, on a connection it then closes.

export interface BodyHandlers {
  data(chunk: Buffer): void;
  /** The body is complete. */
  end(): void;
  /** The connection broke before the body was complete. */
  error(err: Error): void;
}

/**
 * A response body, delivered to one consumer. What arrives before `consume`
 * is kept and handed over first, so nothing is lost between the headers and
 * the caller's handlers.
 */
export class Body {
  private handlers: BodyHandlers | null = null;
  private early: Buffer[] = [];
  private outcome: { err: Error | null } | null = null;
  constructor(private readonly onDone: () => void = () => {}) {}

  consume(handlers: BodyHandlers): void {
    this.handlers = handlers;
    for (const chunk of this.early.splice(0)) handlers.data(chunk);
    if (this.outcome) this.deliver(this.outcome.err);
  }

  push(chunk: Buffer): void {
    if (this.outcome) return;
    if (this.handlers) this.handlers.data(chunk);
    else this.early.push(chunk);
  }

  end(err: Error | null = null): void {
    if (this.outcome) return;
    this.outcome = { err };
    this.onDone();
    if (this.handlers) this.deliver(err);
  }

  get ended(): boolean {
    return this.outcome !== null;
  }

  private deliver(err: Error | null): void {
    if (err) this.handlers!.error(err);
    else this.handlers!.end();
  }
}

/**
 * How long a controller may take. `connectMs`: to accept the connection (past it, the request never reached it).
 * `answerMs`: to begin its answer, and, unless `stream`, to send each next piece of it: a controller that accepts
 * and says nothing (frozen) is not waited for forever. A stream's body may be silent for as long as its job is.
 */
export interface Deadlines {
  connectMs: number;
  answerMs: number;
  stream: boolean;
}

/** The errors a deadline gives, by code: the first means the request never reached the controller. */
export const CONNECT_TIMEOUT = 'CONNECT_TIMEOUT';
export const NO_ANSWER = 'NO_ANSWER';

export function deadlineError(code: typeof CONNECT_TIMEOUT | typeof NO_ANSWER): Error {
  return Object.assign(new Error(code), { code });
}

export function http1Request(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: string | Buffer | undefined,
  deadlines: Deadlines,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let head: Buffer | null = Buffer.alloc(0);
    let res: Response | null = null;
    let feed: ((data: Buffer) => void) | null = null;
    // node:net is loaded here, when a command first talks to the controller: rc --version and --help do without it.
    const { connect } = process.getBuiltinModule('node:net');
    const socket = connect({ port: Number(url.port || 80), host, noDelay: true });
    /** Once the outcome is known (the body ended, or the request failed), the socket is heard no more. */
    let open = true;
    const close = () => {
      open = false;
      clearTimeout(connecting);
      socket.destroy();
    };
    const fail = (err: Error) => {
      if (!open) return;
      if (res) res.body.end(err);
      else {
        close();
        reject(err);
      }
    };
    const connecting = setTimeout(() => fail(deadlineError(CONNECT_TIMEOUT)), deadlines.connectMs);
    socket.on('connect', () => {
      clearTimeout(connecting);
      // Idle time, reset by every byte either way (a long upload is not cut while it moves).
      socket.setTimeout(deadlines.answerMs);
    });
    socket.on('timeout', () => fail(deadlineError(NO_ANSWER)));
    socket.on('data', (data: Buffer) => {
      if (!open) return;
      if (head === null) return feed!(data);
      head = Buffer.concat([head, data]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [status, ...fields] = head.subarray(0, end).toString('latin1').split('\r\n');
      res = { statusCode: Number(/^HTTP\/1\.[01] (\d{3})/.exec(status!)?.[1] ?? 0), headers: {}, body: new Body(close) };
      for (const f of fields) {
        const i = f.indexOf(':');
        if (i > 0) res.headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim();
      }
      const body = res.body;
      feed = res.headers['transfer-encoding']?.includes('chunked') ? chunkedFeed(body) : sizedFeed(body, res.headers['content-length']);
      const rest = head.subarray(end + 4);
      head = null;
      // The answer has begun: a stream may be silent now for as long as its job prints nothing.
      if (deadlines.stream) socket.setTimeout(0);
      resolve(res);
      if (rest.length) feed(rest);
    });
    // A body without a length ends with the connection; one cut short of its length or last chunk is an error.
    socket.on('end', () => {
      if (!open) return;
      if (!res) {
        close();
        return reject(Object.assign(new Error('ECONNRESET'), { code: 'ECONNRESET' }));
      }
      res.body.end(closeDelimited(res.headers) ? null : Object.assign(new Error('ECONNRESET'), { code: 'ECONNRESET' }));
    });
    socket.on('error', fail);
    const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: close'];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    const top = `${lines.join('\r\n')}\r\n\r\n`;
    if (Buffer.isBuffer(payload)) {
      socket.write(top);
      socket.write(payload);
    } else socket.write(top + (payload ?? ''));
  });
}

function closeDelimited(headers: Record<string, string>): boolean {
  return headers['content-length'] === undefined && !headers['transfer-encoding']?.includes('chunked');
}

/** A body sized by content-length ends when that many bytes came; without one, when the connection closes. */
function sizedFeed(out: Body, length: string | undefined): (data: Buffer) => void {
  let left = length === undefined ? Infinity : Number(length);
  if (left === 0) out.end();
  return (data) => {
    if (out.ended) return;
    const take = data.length <= left ? data : data.subarray(0, left);
    left -= take.length;
    out.push(take);
    if (left === 0) out.end();
  };
}

/** Decodes a chunked body as it arrives, passing the data on and ending `out` at the last chunk. */
export function chunkedFeed(out: Pick<Body, 'push' | 'end'>): (data: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let remaining = -1; // bytes left in the current chunk, -1 while reading a size line
  let done = false;
  return (data) => {
    if (done) return;
    pending = pending.length ? Buffer.concat([pending, data]) : data;
    for (;;) {
      if (remaining < 0) {
        const eol = pending.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(pending.subarray(0, eol).toString('latin1'), 16);
        pending = pending.subarray(eol + 2);
        if (!Number.isFinite(size) || size === 0) {
          done = true;
          out.end();
          return;
        }
        remaining = size;
      }
      if (pending.length < remaining + 2) {
        // Pass on what we have of the chunk now: output must not wait for the chunk's end.
        const take = Math.min(pending.length, remaining);
        if (take > 0) {
          out.push(pending.subarray(0, take));
          pending = pending.subarray(take);
          remaining -= take;
        }
        if (remaining > 0 || pending.length < 2) return;
      } else {
        out.push(pending.subarray(0, remaining));
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

/** What every transport (this one, https in client.ts, fetch in cli/fetch-request.ts) gives back: a status, the headers (names in lower case), and the body. */
export interface Response {
  statusCode: number;
  headers: Record<string, string>;
  body: Body;
}
