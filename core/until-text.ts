// A queued job's bound (core/until.ts) in words, as rc ps, rc describe,
// rc run --explain and the Queue page say it. Apart from the rule so that the
// CLI and the browser load only this.
import { formatDuration } from './duration';

/**
 * The bound in words, as rc ps, rc describe, rc run --explain and the Queue
 * page say it: `a matching device frees by 14:05:00 (in 4m59s) at the latest`.
 * `clock` writes the time (the CLI and the browser: local time).
 */
export function untilText(freesByIso: string | null, gpus: number, now: number, clock: (d: Date) => string): string {
  if (freesByIso === null) return "no bound is known (its matching devices' jobs have no --max-runtime)";
  const t = Date.parse(freesByIso);
  const what = gpus > 1 ? `${gpus} matching devices on one host` : 'a matching device';
  if (t <= now) return gpus > 1 ? `${what} are free now` : `${what} is free now`;
  return `${what} ${gpus > 1 ? 'free' : 'frees'} by ${clock(new Date(t))} (in ${formatDuration((t - now) / 1000)}) at the latest, if nothing else changes`;
}

/** A time as people read it here: `14:05:00` today, `2027-01-02 14:05` another day (local time). */
export function localClock(now: number): (d: Date) => string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const today = new Date(now).toDateString();
  return (d) => {
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    return d.toDateString() === today ? `${time}:${pad(d.getSeconds())}` : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
  };
}

/** The same, short, for a table's column (rc ps's UNTIL): `by 14:05:00 (in 4m59s)`, `free now`, `no bound known`. */
export function untilShort(freesByIso: string | null, now: number, clock: (d: Date) => string): string {
  if (freesByIso === null) return 'no bound known';
  const t = Date.parse(freesByIso);
  return t <= now ? 'free now' : `by ${clock(new Date(t))} (in ${formatDuration((t - now) / 1000)})`;
}

/**
 * When an idle machine is deleted, for a table's cell (rc machines' IDLE UNTIL, the Machines page):
 * `14:05:00 (in 4m)` (whole minutes from one on), `14:05:00 (due)` once past, `-` for none.
 */
export function idleUntilText(iso: string | null, now: number, clock: (d: Date) => string): string {
  if (iso === null) return '-';
  const t = Date.parse(iso);
  const s = (t - now) / 1000;
  if (s <= 0) return `${clock(new Date(t))} (due)`;
  return `${clock(new Date(t))} (in ${formatDuration(s >= 60 ? Math.floor(s / 60) * 60 : s)})`;
}
