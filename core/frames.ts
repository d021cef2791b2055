// The byte stream a job's output travels in, from controller to CLI.
// Each frame: 1 byte type, 4 bytes big-endian payload length, payload.
// Output frames' payload starts with the chunk's 4-byte sequence number, so a
// client that loses the stream can resume after the last chunk it has.
// Binary framing keeps output byte-exact and costs no base64 or JSON per chunk.
import type { JobEvent } from '../protocol/wire';

export const FRAME_STDOUT = 1;
export const FRAME_STDERR = 2;
export const FRAME_EVENT = 3;
export const STREAM_CONTENT_TYPE = 'application/x-rc-stream';

/** The events a stream carries: protocol/wire.ts. */
export type { JobEvent };

export function encodeFrame(type: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length);
  out[0] = type;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

export function encodeOutput(stream: 1 | 2, seq: number, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(9 + data.length);
  out[0] = stream === 1 ? FRAME_STDOUT : FRAME_STDERR;
  out.writeUInt32BE(4 + data.length, 1);
  out.writeUInt32BE(seq, 5);
  out.set(data, 9);
  return out;
}

/** An output frame's payload → its sequence number and bytes. */
export function splitOutput(payload: Buffer): { seq: number; data: Buffer } {
  return { seq: payload.readUInt32BE(0), data: payload.subarray(4) };
}

export function encodeEvent(event: JobEvent): Buffer {
  return encodeFrame(FRAME_EVENT, Buffer.from(JSON.stringify(event)));
}

/** Incremental decoder: feed it chunks as they arrive, it calls back per whole frame. */
export class FrameDecoder {
  private pending: Buffer = Buffer.alloc(0);
  constructor(private readonly onFrame: (type: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buf.length >= 5) {
      const len = buf.readUInt32BE(1);
      if (buf.length < 5 + len) break;
      this.onFrame(buf[0]!, buf.subarray(5, 5 + len));
      buf = buf.subarray(5 + len);
    }
    this.pending = buf;
  }

  /** Bytes of an unfinished frame; non-zero at end of stream means it was cut. */
  get leftover(): number {
    return this.pending.length;
  }
}
