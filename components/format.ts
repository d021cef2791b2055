// Human units for the dashboard: GiB, "3 min ago", "1h 20m". Pure, so the
// unit tests pin them; the exact value goes in a title attribute beside.

import type { JobView } from '../protocol/wire';
const GIB = 1024 ** 3;

/** Bytes → "80 GiB", "23.5 GiB", "512 MiB". */
export function bytesText(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '–';
  if (bytes >= GIB) return `${trim(bytes / GIB)} GiB`;
  if (bytes >= 1024 ** 2) return `${trim(bytes / 1024 ** 2)} MiB`;
  if (bytes >= 1024) return `${trim(bytes / 1024)} KiB`;
  return `${bytes} B`;
}

/** MiB (as nvidia-smi reports memory) → "79.6 GiB". */
export function mibText(mib: number): string {
  return bytesText(mib * 1024 ** 2);
}

/** A label value that is a size in bytes (vram) → GiB; anything else as it is. */
export function vramText(value: string | undefined): string {
  if (value === undefined) return '–';
  return /^\d+$/.test(value) ? bytesText(Number(value)) : value;
}

/** A label's value as people read it: sizes in bytes (vram, *_bytes) in GiB, anything else as it is. */
export function labelText(key: string, value: string): string {
  return key === 'vram' || key.endsWith('_bytes') ? vramText(value) : value;
}

function trim(n: number): string {
  return n >= 100 ? String(Math.round(n)) : String(Math.round(n * 10) / 10);
}

/** Seconds → "45s", "12 min", "1h 20m", "3d 4h". */
export function durationText(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return `${Math.floor(s / 3600)}h${m ? ` ${m}m` : ''}`;
  }
  const h = Math.floor((s % 86400) / 3600);
  return `${Math.floor(s / 86400)}d${h ? ` ${h}h` : ''}`;
}

/** An instant relative to now: "just now", "3 min ago", "in 5 min". */
export function agoText(iso: string | null | undefined, now: number): string {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '–';
  const d = (now - t) / 1000;
  if (Math.abs(d) < 5) return 'just now';
  return d > 0 ? `${durationText(d)} ago` : `in ${durationText(-d)}`;
}

/** The exact instant, for a title: "2026-12-01 14:03:07 UTC". */
/**
 * The exact time for a title beside a relative one: ISO 8601 in the browser's time zone, with its offset and the
 * zone's name (`2026-12-01T21:27:00+09:00 (Asia/Tokyo)`), so it lines up with other logs read in that zone.
 */
export function exactTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '';
  const offMin = -t.getTimezoneOffset();
  const pad = (n: number) => String(Math.floor(Math.abs(n))).padStart(2, '0');
  const local = new Date(t.getTime() + offMin * 60_000).toISOString().slice(0, 19);
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return `${local}${offMin < 0 ? '-' : '+'}${pad(offMin / 60)}:${pad(offMin % 60)} (${zone})`;
}

/** How long a job took or has been running: from start to end (or now). */
export function jobDuration(startedAt: string | null, endedAt: string | null, now: number): string {
  if (!startedAt) return '–';
  const end = endedAt ? Date.parse(endedAt) : now;
  return durationText((end - Date.parse(startedAt)) / 1000);
}

/** A command line as a person would type it: quoted where a shell would need it. */
export function commandText(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** Memory used of total, both in GiB with one decimal: "20.0 / 79.6 GiB". */
export function memPairText(usedMiB: number, totalMiB: number): string {
  const g = (mib: number) => (mib / 1024).toFixed(1);
  return `${g(usedMiB)} / ${g(totalMiB)} GiB`;
}

/** A countdown that visibly ticks: "1:59:30", "9:05", "0:42". */
export function countdownText(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** How a job's earlier attempts ended, for a tooltip: `1: lost (host gone); 2: preempted (…)`. */
export function attemptsText(j: Pick<JobView, 'attempt' | 'attempts'>): string {
  const earlier = (j.attempts ?? []).map((a) => `${a.attempt}: ${a.state}${a.reason ? ` (${a.reason})` : ''}`);
  return earlier.length ? `earlier attempts: ${earlier.join('; ')}` : `attempt ${j.attempt}`;
}

/** Device time as the Usage page writes it: `12.5 h`, `40 min`, `7 s`, `0`. */
export function hoursText(s: number): string {
  if (s < 0.5) return '0';
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
