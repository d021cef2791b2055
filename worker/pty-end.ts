// The end of a node-pty terminal (node-pty 1.1.0, pinned; this reaches into
// its internals: _socket, _fd, _writeStream). Two things go wrong there:
//
// Output: a program's last output can be lost.
// - libuv takes "hung up" after a short read as the end of the stream, and a
//   pty master says "hung up" as soon as the program closes its side, while
//   the program's last writes may still be on their way to the master (the
//   kernel moves them in a work item that a busy machine runs late);
// - node-pty destroys the stream 200 ms after the program's exit when it has
//   not ended by itself (a paused terminal, a busy event loop).
//
// Input: node-pty's write queue outlives the terminal. Input still queued
// when the program ends (a paste it never read) goes on being written to the
// descriptor number after it is closed, and the next terminal opened gets
// that number: the rest of one person's paste would be typed into another
// job's shell.
import { constants as fsConstants, readFileSync, readSync, write as fsWrite } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { IPty } from 'node-pty';

type Sock = { destroy(...args: unknown[]): unknown; resume(): unknown; emit(event: string, data: unknown): unknown; readableEncoding?: BufferEncoding | null };

/**
 * Whichever ends the terminal's stream (its end, its EIO, node-pty's timer or
 * destroy): input still queued is dropped, what the stream holds flows, the
 * master is read to its end (with the program's side closed, a read waits
 * for the kernel's pending work, then says EIO), and only then, with no write
 * under way, is the descriptor closed. `ended` is told at the start of that.
 */
export function guardPtyEnd(pty: IPty, ended: () => void = () => {}): void {
  const inner = pty as unknown as { _socket?: Sock; _fd?: number; _writeStream?: unknown };
  const { _socket: sock, _fd: fd } = inner;
  if (!sock || typeof sock.destroy !== 'function' || typeof sock.resume !== 'function' || typeof fd !== 'number' || !inner._writeStream) return;
  // Writes and reads here must never wait: node-pty makes the master non-blocking.
  if (!isNonBlocking(fd)) return;
  const writer = new PtyWriter(fd);
  inner._writeStream = writer;
  const destroy = sock.destroy.bind(sock);
  let ending = false;
  sock.destroy = (...args: unknown[]) => {
    if (ending) return sock;
    ending = true;
    ended();
    // What the stream already holds goes first: resume() hands it out on the next tick.
    sock.resume();
    writer.close(() =>
      setImmediate(() => {
        const decoder = sock.readableEncoding ? new StringDecoder(sock.readableEncoding) : null;
        for (const chunk of readRest(fd)) sock.emit('data', decoder ? decoder.write(chunk) : chunk);
        destroy(...args);
      }),
    );
    return sock;
  };
}

/** How long a write the terminal refused (its input buffer is full: the program is not reading) waits to be tried again. */
const RETRY_MS = 5;

/** node-pty's writer (write, dispose) that stops for good at the terminal's end and says when no write is under way. */
class PtyWriter {
  private queue: Buffer[] = [];
  private writing = false;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private whenIdle: (() => void) | null = null;

  constructor(private readonly fd: number) {}

  write(data: string | Buffer): void {
    if (this.closed) return;
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    if (!buf.length) return;
    this.queue.push(buf);
    if (!this.writing && !this.retry) this.next();
  }

  /** No more writes: the queue is dropped; `then` runs once no write is under way (the descriptor may be closed then). */
  close(then: () => void): void {
    this.closed = true;
    this.queue = [];
    if (this.retry) {
      clearTimeout(this.retry);
      this.retry = null;
    }
    if (this.writing) this.whenIdle = then;
    else then();
  }

  /** node-pty's destroy() calls this. */
  dispose(): void {
    if (!this.closed) this.close(() => {});
  }

  private next(): void {
    this.retry = null;
    const buf = this.queue[0];
    if (!buf || this.closed) return;
    this.writing = true;
    fsWrite(this.fd, buf, 0, buf.length, null, (err, written) => {
      this.writing = false;
      if (this.closed) {
        this.idle();
        return;
      }
      if (err) {
        if (err.code === 'EAGAIN') this.retry = setTimeout(() => this.next(), RETRY_MS);
        // Anything else: the terminal is going; what was queued goes with it.
        else this.queue = [];
        return;
      }
      if (written < buf.length) this.queue[0] = buf.subarray(written);
      else this.queue.shift();
      this.next();
    });
  }

  private idle(): void {
    const then = this.whenIdle;
    this.whenIdle = null;
    then?.();
  }
}

/** At most this much is read from a finished program's terminal (a child it left behind may still be writing). */
const REST_LIMIT = 1024 * 1024;

/**
 * What is left in a pty master: until EIO (the terminal is empty and nobody
 * holds its other side) or EAGAIN (a process the program left behind still
 * holds it, and it has nothing more now). The descriptor is non-blocking, so
 * this never waits.
 */
function readRest(fd: number): Buffer[] {
  const chunks: Buffer[] = [];
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let total = 0; total < REST_LIMIT; ) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch {
      break;
    }
    if (n <= 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    total += n;
  }
  return chunks;
}

function isNonBlocking(fd: number): boolean {
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    return flags !== null && (parseInt(flags[1]!, 8) & fsConstants.O_NONBLOCK) !== 0;
  } catch {
    return false;
  }
}
