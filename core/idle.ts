// When a leased GPU counts as idle: its utilisation at most IDLE_UTIL_PCT and
// no compute process on it, both (one busy kernel reads as high utilisation;
// a process that holds the GPU but computes nothing is still someone's work).
// A device with no GPU signal (a CPU slot, a worker that sends no process
// count) is never idle: its idleness is unknown.

/** At most this utilisation (percent) counts as idle. */
export const IDLE_UTIL_PCT = 1;

/** true: idle; false: busy; null: no signal (no utilisation or no process count). */
export function gpuIdle(s: { utilPct: number | null; procs?: number | null }): boolean | null {
  if (s.utilPct === null || s.procs === undefined || s.procs === null) return null;
  return s.utilPct <= IDLE_UTIL_PCT && s.procs === 0;
}

/**
 * A job's idle seconds from its devices' streaks: null when none of them has a
 * signal; otherwise the shortest streak (a job is idle only while all its
 * devices with a signal are; one busy device makes it 0).
 */
export function jobIdleSeconds(devices: readonly (number | null)[]): number | null {
  const known = devices.filter((d): d is number => d !== null);
  if (!known.length) return null;
  return Math.max(0, Math.min(...known));
}

/** `idle 42m`, `busy` (0: in use at the last sample), or `no GPU signal`: how the CLI and dashboard say it. */
export function idleText(idleS: number | null, format: (s: number) => string): string {
  if (idleS === null) return 'no GPU signal';
  return idleS < 1 ? 'busy' : `idle ${format(Math.floor(idleS))}`;
}

/** The longest idle setting there is (the watchdogs' bound: 30 days). */
export const MAX_IDLE_S = 30 * 86400;

/**
 * An idle setting as written (RC_IDLE_HOLD_WARN, RC_IDLE_HOLD_RELEASE): a
 * duration from 1s to 30d, or `off`. A problem comes back as a sentence.
 */
export function parseIdleSetting(text: string, parse: (t: string) => number | null): { seconds: number | null } | { problem: string } {
  const t = text.trim();
  if (t === 'off') return { seconds: null };
  const s = parse(t);
  if (s === null) return { problem: `takes a duration such as 90s, 30m or 2h, or off; not ${JSON.stringify(t.slice(0, 50))}` };
  if (s < 1) return { problem: 'must be at least 1s (write off to turn it off)' };
  if (s > MAX_IDLE_S) return { problem: `must be at most 30d, not ${t}` };
  return { seconds: s };
}

/** The idle share (whole percent) of leased time that had a GPU signal; null with none (rc usage, the Usage page). */
export function idleSharePct(row: { leasedS: number; idleS: number; noSignalS: number }): number | null {
  const signal = row.leasedS - row.noSignalS;
  return signal < 1 ? null : Math.round((100 * row.idleS) / signal);
}

/**
 * The leased time with no GPU signal, in words after the idle share (rc usage, the Usage page): CPU slots
 * only where there were some, and GPUs that sent none (a job shorter than a heartbeat, a GPU that reports
 * no utilisation) as such; '' when all of it had a signal. `cpuSlotS` absent: a controller from before it.
 */
export function noSignalText(row: { noSignalS: number; cpuSlotS?: number }, hours: (s: number) => string): string {
  const cpu = row.cpuSlotS ?? 0;
  const gpu = row.noSignalS - cpu;
  return (
    (cpu >= 0.5 ? `; ${hours(cpu)} on CPU slots, with no GPU signal` : '') +
    (gpu >= 0.5 ? `; ${hours(gpu)} on GPUs that sent no signal, counted neither idle nor busy` : '')
  );
}
