// rc run --array: which task indexes an array has, and how many of them may
// run at once. `0-99`, `1,5,7`, `0-20:2` (every 2nd), mixtures of these
// (`0-9,20,30-40:5`), and an optional cap after `%` (`0-99%8`). Pure: the
// controller checks a submit with it (protocol/api.ts), the CLI before sending.

/** The most tasks one array may have: one submit stays one transaction of bounded size. */
export const MAX_ARRAY_TASKS = 10_000;
/** The largest index a task may have (RC_ARRAY_INDEX): large enough for any sweep's numbering, small enough to read. */
export const MAX_ARRAY_INDEX = 1_000_000;

export type ArraySpec = { ok: true; indexes: number[]; maxRunning: number | null } | { ok: false; message: string };

const NUMBER = /^\d{1,7}$/;
const PART = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/;

/** The indexes of `text` (ascending) and its cap, or the one sentence that says what is wrong. */
export function parseArraySpec(text: string): ArraySpec {
  const bad = (why: string): ArraySpec => ({ ok: false, message: `--array ${text}: ${why}` });
  const shape = 'write ranges like 0-99, lists like 1,5,7, steps like 0-20:2, and an optional cap like %8 (0-99%8)';
  if (text.trim() === '') return { ok: false, message: `--array needs the task indexes: ${shape}` };
  const pct = text.split('%');
  if (pct.length > 2) return bad(`one % at most, before the cap: ${shape}`);
  let maxRunning: number | null = null;
  if (pct.length === 2) {
    const cap = pct[1]!;
    if (!NUMBER.test(cap)) return bad(`the cap after % must be a whole number of tasks (%8), not ${JSON.stringify(cap)}`);
    maxRunning = Number(cap);
    if (maxRunning < 1) return bad('%0 would never run a task: the cap is at least 1 (or leave it out to run as many as fit)');
    if (maxRunning > MAX_ARRAY_TASKS) return bad(`the cap is at most ${MAX_ARRAY_TASKS} (an array's most tasks)`);
  }
  const parts = pct[0]!.split(',');
  const ranges: { from: number; to: number; step: number }[] = [];
  let count = 0;
  for (const part of parts) {
    const m = PART.exec(part);
    if (!m) return bad(`${JSON.stringify(part)} is not an index, a range or a range with a step: ${shape}`);
    const nums = [m[1], m[2], m[3]].filter((n): n is string => n !== undefined);
    if (nums.some((n) => n.length > 7 || Number(n) > MAX_ARRAY_INDEX)) return bad(`an index is at most ${MAX_ARRAY_INDEX.toLocaleString('en-US')}`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    const step = m[3] === undefined ? 1 : Number(m[3]);
    if (step === 0) return bad(`${part}: a step of 0 never moves; use :1 or more`);
    if (to < from) return bad(`${part}: a range goes up (${to}-${from})`);
    ranges.push({ from, to, step });
    // Counted before expanded: 0-1000000 is refused without making a million numbers.
    count += Math.floor((to - from) / step) + 1;
    if (count > MAX_ARRAY_TASKS) return bad(`more than ${MAX_ARRAY_TASKS.toLocaleString('en-US')} tasks; split it into several arrays`);
  }
  const seen = new Set<number>();
  for (const r of ranges)
    for (let i = r.from; i <= r.to; i += r.step) {
      if (seen.has(i)) return bad(`index ${i} is named twice; name each index once`);
      seen.add(i);
    }
  return { ok: true, indexes: [...seen].sort((a, b) => a - b), maxRunning };
}

/** The reference of one task (rc logs a123:7): the array's id and the task's index; null when `ref` is not one. */
export function parseTaskRef(ref: string): { arrayId: string; index: number } | null {
  const m = /^(a[0-9a-v]{10}):(\d{1,7})$/.exec(ref);
  if (!m || Number(m[2]) > MAX_ARRAY_INDEX) return null;
  return { arrayId: m[1]!, index: Number(m[2]) };
}

/** An array's id: `a` and 10 base32 digits (as a job's is `j` and 10). */
export const ARRAY_ID = /^a[0-9a-v]{10}$/;
