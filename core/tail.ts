// `rc logs --tail N`: where the last N lines of a job's stored output begin.
// The output is chunks (one pipe read each) of stdout and stderr interleaved
// in the order they came; lines are counted across both, as a terminal shows
// them. A last line without its newline counts as a line.

/** The most lines --tail takes. */
export const MAX_TAIL_LINES = 100_000;

/** Where the tail starts: in chunk `seq`, after its first `skip` bytes. */
export interface TailStart {
  seq: number;
  skip: number;
}

/**
 * Fed the stored chunks newest first, says where the last `lines` lines
 * begin: a TailStart once it is found, or undefined while it needs older
 * chunks. `done()` is the answer when there are no older ones: the start of
 * the output (null: there is no output at all, or `lines` is 0 and nothing is shown).
 */
export class TailFinder {
  private newlines = 0;
  private first = true;
  private oldest: number | null = null;
  private found: TailStart | undefined;

  constructor(private readonly lines: number) {}

  push(seq: number, data: Uint8Array): TailStart | undefined {
    if (this.found) return this.found;
    if (this.lines === 0) {
      this.found = { seq, skip: data.length };
      return this.found;
    }
    this.oldest = seq;
    let end = data.length;
    // The output's very last byte ending a line does not begin another one.
    if (this.first && end > 0) {
      this.first = false;
      if (data[end - 1] === 0x0a) end--;
    }
    for (let i = end - 1; i >= 0; i--) {
      if (data[i] !== 0x0a) continue;
      if (++this.newlines === this.lines) {
        this.found = { seq, skip: i + 1 };
        return this.found;
      }
    }
    return undefined;
  }

  /** No older chunks: the tail is the whole output (from its first chunk), or nothing when there was none. */
  done(): TailStart | null {
    if (this.found) return this.found;
    return this.oldest === null ? null : { seq: this.oldest, skip: 0 };
  }
}
