// The Usage page's chart (GET /api/usage/series): leased device-seconds and
// their idle part per time bucket, per key of a grouping. Pure: the leases
// come in as spans, counted as server/usage.ts counts a window (a lease's idle
// seconds go to each bucket in the proportion of it that bucket holds).

/** Bucket lengths, shortest first: the shortest that cuts the window into at most MAX_BUCKETS is used. */
const STEPS_S = [60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400];
const MAX_BUCKETS = 90;
/** The keys drawn apart (the most leased first); the rest are summed as `others`, so the chart stays readable. */
export const SERIES_SHOWN = 7;

/** One lease, in epoch seconds; `idleS` null when its device sent no GPU signal (never counted idle). */
export interface LeaseSpan {
  key: string;
  fromS: number;
  /** Its end, or null while it is held (it runs to `nowS`). */
  toS: number | null;
  idleS: number | null;
}

export interface SeriesLine {
  leasedS: number[];
  idleS: number[];
}

export interface BucketedUse {
  stepS: number;
  /** Each bucket's start, oldest first (aligned to the step in UTC, so the first may begin before the window). */
  at: number[];
  series: (SeriesLine & { key: string })[];
  others: (SeriesLine & { keys: number }) | null;
}

export function seriesStep(sinceS: number): number {
  return STEPS_S.find((s) => sinceS / s <= MAX_BUCKETS) ?? STEPS_S.at(-1)!;
}

export function bucketUse(spans: readonly LeaseSpan[], sinceS: number, nowS: number): BucketedUse {
  const stepS = seriesStep(sinceS);
  const windowFrom = nowS - sinceS;
  const first = Math.floor(windowFrom / stepS) * stepS;
  const at: number[] = [];
  for (let b = first; b < nowS; b += stepS) at.push(b);
  const byKey = new Map<string, SeriesLine & { total: number }>();
  for (const s of spans) {
    const end = s.toS ?? nowS;
    const from = Math.max(s.fromS, windowFrom);
    const to = Math.min(end, nowS);
    if (to <= from) continue;
    const fullS = end - s.fromS;
    const line = byKey.get(s.key) ?? { leasedS: at.map(() => 0), idleS: at.map(() => 0), total: 0 };
    byKey.set(s.key, line);
    for (let i = Math.floor((from - first) / stepS); i < at.length && at[i]! < to; i++) {
      const part = Math.min(to, at[i]! + stepS) - Math.max(from, at[i]!);
      if (part <= 0) continue;
      line.leasedS[i]! += part;
      line.total += part;
      if (s.idleS !== null && fullS > 0) line.idleS[i]! += Math.min(part, (s.idleS * part) / fullS);
    }
  }
  const ranked = [...byKey.entries()].sort((a, b) => b[1].total - a[1].total || a[0].localeCompare(b[0]));
  const series = ranked.slice(0, SERIES_SHOWN).map(([key, l]) => ({ key, leasedS: l.leasedS, idleS: l.idleS }));
  const rest = ranked.slice(SERIES_SHOWN);
  const others = rest.length
    ? {
        keys: rest.length,
        leasedS: at.map((_, i) => rest.reduce((sum, [, l]) => sum + l.leasedS[i]!, 0)),
        idleS: at.map((_, i) => rest.reduce((sum, [, l]) => sum + l.idleS[i]!, 0)),
      }
    : null;
  return { stepS, at, series, others };
}
