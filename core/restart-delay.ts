// How long a supervisor waits before it starts a child that died again (npm
// start's embedded Postgres and local worker): soon after a one-off crash, ever
// later while it keeps dying at start, so a child that cannot start is not a
// restart loop that eats the machine.

/** The wait before the next start: 1 s, doubling to at most 30 s; back to 1 s after a run of a minute or more. */
export function restartDelayMs(previousMs: number | null, ranMs: number): number {
  if (previousMs === null || ranMs >= 60_000) return 1000;
  return Math.min(previousMs * 2, 30_000);
}
