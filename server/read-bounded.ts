// A request body read whole, but never more than a bound: refused by its
// Content-Length, or as soon as it passes the bound. The answer to a refused
// body (413) says Connection: close (the router asks bodyRefused), and the
// connection ends after it without a reset (lingerOnClose).
import type { IncomingMessage } from 'node:http';
import type { RcError } from '../core/errors';

/** Of a refused body, at most this much more is read (and dropped) while its answer goes out and the client stops sending. */
const LINGER_BYTES = 32 * 1024 * 1024;
/** The connection of a refused body ends at the latest this long after its answer, or after the client has sent nothing for IDLE_MS. */
const LINGER_MS = 10_000;
const IDLE_MS = 2_000;

const refused = new WeakSet<IncomingMessage>();

/** Whether this request's body was refused: its answer must end the connection, so the rest is never read. */
export function bodyRefused(req: IncomingMessage | undefined): boolean {
  return req !== undefined && refused.has(req);
}

/** A raw request body of at most `max` bytes: refused (`tooBig`) by its Content-Length, or as soon as it passes the bound. */
export function readBounded(req: IncomingMessage, max: number, tooBig: () => RcError): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > max) {
    refuse(req);
    return Promise.reject(tooBig());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size <= max) {
        chunks.push(c);
        return;
      }
      req.off('data', onData);
      req.off('end', onEnd);
      chunks.length = 0;
      refuse(req);
      reject(tooBig());
    };
    const onEnd = () => resolve(Buffer.concat(chunks));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}

/** Marks the body refused: what still comes is dropped, at most LINGER_BYTES of it, and the connection lingers after the answer. */
function refuse(req: IncomingMessage): void {
  refused.add(req);
  let dropped = 0;
  req.on('data', (c: Buffer) => {
    dropped += c.length;
    if (dropped > LINGER_BYTES) req.socket.destroy();
  });
  req.on('error', () => {});
  req.resume();
  lingerOnClose(req);
}

/**
 * Node ends the connection of an answer that says Connection: close with
 * socket.destroySoon(): it closes as soon as the answer is written. With
 * bytes of the body still arriving, the kernel then sends a reset, which can
 * discard the answer before the client has read it (a client that sends its
 * whole body before it reads, as fetch does, never sees it). So here the
 * answer is followed by an end of stream, what the client still sends is
 * read and dropped, and the connection closes once the body is over, the
 * client is quiet for IDLE_MS, or LINGER_MS have passed (nginx's
 * "lingering close").
 */
function lingerOnClose(req: IncomingMessage): void {
  const socket = req.socket;
  socket.destroySoon = function lingering(this: typeof socket) {
    if (req.complete) return Object.getPrototypeOf(this).destroySoon.call(this);
    this.end();
    const close = () => this.destroy();
    const total = setTimeout(close, LINGER_MS);
    const idle = setTimeout(close, IDLE_MS);
    req.on('data', () => idle.refresh());
    req.on('end', close);
    this.once('close', () => {
      clearTimeout(total);
      clearTimeout(idle);
    });
  };
}
