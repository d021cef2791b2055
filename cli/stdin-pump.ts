// rc run's standard input, when it is a pipe or a file (`git diff | rc run --
// git apply`), sent to the job once it runs: a piece at a time, each answered
// once the job's pipe has it, so a slow reader holds rc back. Its end reaches
// the job as end of file. A command that closes its stdin stops the sending.
import { fstatSync } from 'node:fs';
import type { Client } from './client';
import { CliExit, err } from './output';

/** The most bytes per request (the controller's bound is the same: protocol/worker.ts STDIN_CHUNK_BYTES). */
const PIECE_BYTES = 1024 * 1024;

/**
 * Whether rc's stdin has anything to give a job: a pipe, a file or a socket.
 * A terminal (its keys are rc's: Ctrl-C), /dev/null and a closed descriptor
 * do not, and the job then reads /dev/null as before.
 */
export function stdinIsData(fd = 0): boolean {
  try {
    const s = fstatSync(fd);
    return s.isFIFO() || s.isFile() || s.isSocket();
  } catch {
    return false;
  }
}

export class StdinPump {
  private stopped = false;

  constructor(
    private readonly client: Client,
    private readonly jobId: string,
  ) {}

  /** Sends all of stdin, then its end; resolves when done, stopped, or refused (which it says on stderr). */
  async run(input: AsyncIterable<Buffer> = process.stdin): Promise<void> {
    let offset = 0;
    try {
      for await (const chunk of input) {
        for (let at = 0; at < chunk.length && !this.stopped; at += PIECE_BYTES) {
          const piece = chunk.subarray(at, at + PIECE_BYTES);
          if (await this.send(offset, piece, false)) return this.stop();
          offset += piece.length;
        }
        if (this.stopped) return;
      }
      if (!this.stopped) await this.send(offset, Buffer.alloc(0), true);
    } catch (e) {
      // A refusal is said (the job then reads no end of file); a lost controller is the follower's to tell.
      if (e instanceof CliExit && e.message && !this.stopped) err(`${e.message.replace(/^rc: /, 'rc: stdin: ')}\n`);
    } finally {
      this.stop();
    }
  }

  /** The job ended: nothing more is read or sent. */
  stop(): void {
    this.stopped = true;
    process.stdin.destroy();
  }

  /** True when the job will take no more. */
  private async send(offset: number, data: Buffer, eof: boolean): Promise<boolean> {
    const r = await this.client.call('POST /api/jobs/:id/stdin', {
      id: this.jobId,
      query: { submitter: this.client.submitter, offset, ...(eof ? { eof: '1' as const } : {}) },
      body: data,
    });
    return r.closed;
  }
}
