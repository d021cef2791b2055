// Durations as people write them: 90s, 10m, 2h, 1h30m, 7d; a bare number is seconds.

const UNIT: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Seconds, or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  if (!/^(\d+[smhd])+$/.test(t)) return null;
  let total = 0;
  for (const [, n, u] of t.matchAll(/(\d+)([smhd])/g)) total += Number(n) * UNIT[u!]!;
  return Number.isSafeInteger(total) ? total : null;
}

/** 5400 → "1h30m", 600 → "10m", 45 → "45s". */
export function formatDuration(seconds: number): string {
  if (seconds <= 0) return '0s';
  let rest = Math.round(seconds);
  let out = '';
  for (const [u, n] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= n) {
      out += `${Math.floor(rest / n)}${u}`;
      rest %= n;
    }
  }
  return out;
}
