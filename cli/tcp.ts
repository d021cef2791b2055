// The CLI's TCP connection. Agents run `rc run` in loops and its budget is
// about 60 ms, most of it Node's own start-up: loading node:net (and the
// stream machinery under it) and connecting through it costs about 8 ms more
// than the TCP handle node:net is itself built on. So a controller at an IP
// address (the local default, 127.0.0.1) is reached through that handle,
// process.binding('tcp_wrap'); a host name (DNS) or a Node whose handle is not
// as expected goes through node:net. Both are exercised by the tests.
import { getSystemErrorName } from 'node:util';

export interface ConnHandlers {
  data(chunk: Buffer): void;
  /** The peer closed the connection. */
  end(): void;
  error(err: NodeJS.ErrnoException): void;
}

export interface Conn {
  /** Which way it connected (the tests check the fast one is taken). */
  readonly via: 'handle' | 'net';
  write(data: string | Buffer): void;
  /** Closes the connection; no handler is called after it. */
  destroy(): void;
}

export function connectTcp(host: string, port: number, on: ConnHandlers): Conn {
  const family = /^\d{1,3}(\.\d{1,3}){3}$/.test(host) ? 4 : host.includes(':') ? 6 : 0;
  return (family && handleConn(host, port, family, on)) || netConn(host, port, on);
}

function netConn(host: string, port: number, on: ConnHandlers): Conn {
  const { connect } = process.getBuiltinModule('node:net');
  const socket = connect(port, host);
  socket.setNoDelay(true);
  let open = true;
  socket.on('data', (d: Buffer) => {
    if (open) on.data(d);
  });
  socket.on('end', () => {
    if (open) {
      open = false;
      on.end();
    }
  });
  socket.on('error', (err) => {
    if (open) {
      open = false;
      on.error(err);
    }
  });
  return {
    via: 'net',
    write: (d) => {
      socket.write(d);
    },
    destroy: () => {
      open = false;
      socket.destroy();
    },
  };
}

/** libuv's end-of-stream status. */
const UV_EOF = -4095;

interface Bindings {
  TCP: new (type: number) => TcpHandle;
  TCPConnectWrap: new () => { oncomplete: (status: number) => void };
  constants: { SOCKET: number };
  WriteWrap: new () => WriteReq;
  streamBaseState: Int32Array;
  kReadBytesOrError: number;
  kArrayBufferOffset: number;
  kLastWriteWasAsync: number;
}
interface TcpHandle {
  connect(req: object, host: string, port: number): number;
  connect6(req: object, host: string, port: number): number;
  setNoDelay(on: boolean): number;
  readStart(): number;
  writeUtf8String(req: WriteReq, s: string): number;
  writeBuffer(req: WriteReq, b: Buffer): number;
  close(): void;
  onread: (buf: ArrayBuffer) => void;
}
interface WriteReq {
  handle: TcpHandle;
  oncomplete: (status: number) => void;
  async: boolean;
  data?: string | Buffer;
}

function bindings(): Bindings | null {
  // With pending deprecations shown, process.binding would print a warning: node:net then.
  const pending =
    [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('--pending-deprecation')) || process.env.NODE_PENDING_DEPRECATION === '1';
  if (pending) return null;
  try {
    const binding = (process as unknown as { binding(name: string): Record<string, unknown> }).binding;
    const b = { ...binding('tcp_wrap'), ...binding('stream_wrap') } as unknown as Bindings;
    const ok =
      typeof b.TCP === 'function' &&
      typeof b.TCPConnectWrap === 'function' &&
      typeof b.WriteWrap === 'function' &&
      b.streamBaseState instanceof Int32Array &&
      [b.kReadBytesOrError, b.kArrayBufferOffset, b.kLastWriteWasAsync].every(Number.isInteger) &&
      typeof b.constants?.SOCKET === 'number';
    return ok ? b : null;
  } catch {
    return null;
  }
}

function handleConn(host: string, port: number, family: 4 | 6, on: ConnHandlers): Conn | null {
  const b = bindings();
  if (!b) return null;
  const handle = new b.TCP(b.constants.SOCKET);
  const state = b.streamBaseState;
  /** Writes asked for before the connection is up. */
  const pending: (string | Buffer)[] = [];
  /** Writes the kernel has not taken yet: kept referenced until they complete. */
  const inflight = new Set<WriteReq>();
  let connected = false;
  let open = true;
  const close = () => {
    if (open) {
      open = false;
      handle.close();
    }
  };
  const fail = (status: number) => {
    if (!open) return;
    close();
    const code = getSystemErrorName(status);
    on.error(Object.assign(new Error(code), { code, errno: status }));
  };
  const send = (data: string | Buffer) => {
    const req: WriteReq = Object.assign(new b.WriteWrap(), {
      handle,
      async: false,
      data,
      oncomplete: (status: number) => {
        inflight.delete(req);
        if (status < 0) fail(status);
      },
    });
    const err = typeof data === 'string' ? handle.writeUtf8String(req, data) : handle.writeBuffer(req, data);
    if (err < 0) return fail(err);
    if (state[b.kLastWriteWasAsync]) inflight.add(req);
  };
  handle.onread = (buf) => {
    const n = state[b.kReadBytesOrError]!;
    if (!open) return;
    if (n > 0) on.data(Buffer.from(buf, state[b.kArrayBufferOffset], n));
    else if (n === UV_EOF) {
      close();
      on.end();
    } else if (n < 0) fail(n);
  };
  const req = new b.TCPConnectWrap();
  req.oncomplete = (status) => {
    if (!open) return;
    if (status < 0) return fail(status);
    connected = true;
    handle.setNoDelay(true);
    const err = handle.readStart();
    if (err < 0) return fail(err);
    for (const d of pending.splice(0)) send(d);
  };
  const err = family === 6 ? handle.connect6(req, host.replace(/^\[|\]$/g, ''), port) : handle.connect(req, host, port);
  if (err < 0) setImmediate(() => fail(err));
  return {
    via: 'handle',
    write: (data) => {
      if (!open) return;
      if (connected) send(data);
      else pending.push(data);
    },
    destroy: close,
  };
}
