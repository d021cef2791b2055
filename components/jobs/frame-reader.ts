// A job's frame stream (core/frames.ts: 1 byte type, 4 bytes big-endian
// length, payload) read in the browser, where there is no Buffer: the same
// format over Uint8Array.
import { FRAME_EVENT, FRAME_STDERR, FRAME_STDOUT } from '../../core/frames';
import type { JobEvent } from '../../protocol/wire';

export type StreamItem = { kind: 'output'; stream: 1 | 2; seq: number; data: Uint8Array } | { kind: 'event'; event: JobEvent };

export class FrameReader {
  private pending = new Uint8Array(0);
  private readonly text = new TextDecoder();

  /** The whole frames in this chunk (and what was left of the last). */
  push(chunk: Uint8Array): StreamItem[] {
    let buf = chunk;
    if (this.pending.length) {
      buf = new Uint8Array(this.pending.length + chunk.length);
      buf.set(this.pending);
      buf.set(chunk, this.pending.length);
    }
    const out: StreamItem[] = [];
    let at = 0;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    while (buf.length - at >= 5) {
      const len = view.getUint32(at + 1);
      if (buf.length - at < 5 + len) break;
      const type = buf[at]!;
      const payload = buf.subarray(at + 5, at + 5 + len);
      if ((type === FRAME_STDOUT || type === FRAME_STDERR) && len >= 4) {
        out.push({ kind: 'output', stream: type === FRAME_STDOUT ? 1 : 2, seq: view.getUint32(at + 5), data: payload.subarray(4) });
      } else if (type === FRAME_EVENT) {
        try {
          out.push({ kind: 'event', event: JSON.parse(this.text.decode(payload)) as JobEvent });
        } catch {
          // Not an event this page knows: skipped.
        }
      }
      at += 5 + len;
    }
    this.pending = buf.slice(at);
    return out;
  }
}
