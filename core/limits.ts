// Limits on a team's or a token's use (issue 32), as pure rules: how a limit
// is written (`--gpu-hours 200/week`, `--max-runtime 12h`, `none` clears one),
// and whether a submit passes them. The database's figures (jobs queued,
// device-hours used) are read by server/limits.ts; the decision is here.
// A token's and its team's limits both apply: each is checked, so the
// stricter wins, and a refusal names the scope whose limit it hit.
import { formatDuration, parseDuration } from './duration';

export type Period = 'day' | 'week';
export const PERIOD_S: Record<Period, number> = { day: 86400, week: 7 * 86400 };
const PERIOD_WORD: Record<Period, string> = { day: 'today (the last 24 hours)', week: 'this week (the last 7 days)' };

/** A team's or a token's limits: null is no limit. */
export interface LimitValues {
  gpus: number | null;
  /** The budget of device-hours over `period` (both set, or neither). */
  gpuHours: number | null;
  period: Period | null;
  queued: number | null;
  maxPriority: number | null;
  maxHoldTtlS: number | null;
  maxRuntimeS: number | null;
}

export type Scope = { kind: 'team'; team: string } | { kind: 'token'; tokenId: number; name: string };

export interface ScopeLimits extends LimitValues {
  scope: Scope;
}

export const NO_LIMITS: LimitValues = {
  gpus: null,
  gpuHours: null,
  period: null,
  queued: null,
  maxPriority: null,
  maxHoldTtlS: null,
  maxRuntimeS: null,
};

/** `team vision`, `token agent-a`: a scope as a sentence names it. */
export function scopeWords(s: Scope): string {
  return s.kind === 'team' ? `team ${s.team}` : `token ${s.name}`;
}

/** `team:vision`, `token:agent-a`: a scope as rc admin limit takes and shows it. */
export function scopeKey(s: Scope): string {
  return s.kind === 'team' ? `team:${s.team}` : `token:${s.name}`;
}

/** Team names: as host and job names (letters, digits, . _ -, starting with a letter or digit, at most 63). */
export const TEAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const TEAM_NAME_RULE = 'a team name is 1-63 letters, digits, . _ or -, starting with a letter or digit';

/** A scope as written (`team:vision`, `token:agent-a`, `token:12`), or the sentence saying why it is not one. */
export function parseScope(text: string): { ok: true; kind: 'team' | 'token'; name: string } | { ok: false; message: string } {
  const m = /^(team|token):(.+)$/.exec(text);
  if (!m) return { ok: false, message: `scope: ${JSON.stringify(text.slice(0, 80))} is not team:<name> or token:<name or id>` };
  const [, kind, name] = m;
  if (kind === 'team' && !TEAM_NAME.test(name!)) return { ok: false, message: `scope: ${TEAM_NAME_RULE}, not ${JSON.stringify(name!.slice(0, 80))}` };
  if (name!.length > 200) return { ok: false, message: 'scope: a token name is at most 200 characters' };
  return { ok: true, kind: kind as 'team' | 'token', name: name! };
}

/** What rc admin limit set changes: each limit given (null clears it); one left out stays as it is. */
export type LimitPatch = { [K in keyof LimitValues]?: LimitValues[K] };

/** The flags of rc admin limit set, as the API body names them, and as the CLI writes them (the sentences name the flag). */
export const LIMIT_FLAGS = {
  gpus: '--gpus',
  gpuHours: '--gpu-hours',
  queued: '--queued',
  maxPriority: '--max-priority',
  maxHoldTtl: '--max-hold-ttl',
  maxRuntime: '--max-runtime',
} as const;
export type LimitField = keyof typeof LIMIT_FLAGS;
export type LimitTexts = { [K in LimitField]?: string | number | null };

const MAX_GPUS = 100_000;
const MAX_QUEUED = 1_000_000;
const MAX_GPU_HOURS = 10_000_000;
const MAX_DURATION_S = 30 * 86400;

/**
 * The limits as written (a flag's text, a number, or null / `none` to clear
 * one) → the patch, or the sentence naming the first flag that is wrong.
 */
export function parseLimitTexts(texts: LimitTexts): { ok: true; patch: LimitPatch } | { ok: false; message: string } {
  const patch: LimitPatch = {};
  const given = (Object.keys(LIMIT_FLAGS) as LimitField[]).filter((k) => texts[k] !== undefined);
  if (!given.length) return { ok: false, message: `give at least one limit: ${Object.values(LIMIT_FLAGS).join(', ')} (a value of none clears it)` };
  for (const k of given) {
    const raw = texts[k]!;
    const flag = LIMIT_FLAGS[k];
    const text = raw === null ? 'none' : String(raw).trim();
    if (text === 'none') {
      if (k === 'gpuHours') Object.assign(patch, { gpuHours: null, period: null });
      else if (k === 'maxHoldTtl') patch.maxHoldTtlS = null;
      else if (k === 'maxRuntime') patch.maxRuntimeS = null;
      else patch[k] = null;
      continue;
    }
    const bad = (rule: string) => ({ ok: false as const, message: `${flag}: ${rule}, not ${JSON.stringify(text.slice(0, 50))} (none clears it)` });
    const whole = (min: number, max: number) => (/^-?\d+$/.test(text) && Number(text) >= min && Number(text) <= max ? Number(text) : null);
    switch (k) {
      case 'gpus': {
        const n = whole(1, MAX_GPUS);
        if (n === null) return bad(`the devices leased at once, a whole number from 1 to ${MAX_GPUS}`);
        patch.gpus = n;
        break;
      }
      case 'queued': {
        const n = whole(0, MAX_QUEUED);
        if (n === null) return bad(`the jobs waiting at once, a whole number from 0 to ${MAX_QUEUED}`);
        patch.queued = n;
        break;
      }
      case 'maxPriority': {
        const n = whole(-10, 10);
        if (n === null) return bad('the highest --priority, a whole number from -10 to 10');
        patch.maxPriority = n;
        break;
      }
      case 'gpuHours': {
        const m = /^(\d+(?:\.\d+)?)\/(day|week)$/.exec(text);
        const hours = m ? Number(m[1]) : NaN;
        if (!m || !(hours > 0) || hours > MAX_GPU_HOURS) return bad('a budget of device-hours per day or week, such as 200/week or 24/day, more than 0');
        Object.assign(patch, { gpuHours: hours, period: m[2] as Period });
        break;
      }
      case 'maxHoldTtl':
      case 'maxRuntime': {
        const s = parseDuration(text);
        if (s === null || s < 1 || s > MAX_DURATION_S) return bad('a duration such as 90s, 10m, 2h or 1h30m, from 1s to 30d');
        if (k === 'maxHoldTtl') patch.maxHoldTtlS = s;
        else patch.maxRuntimeS = s;
        break;
      }
    }
  }
  return { ok: true, patch };
}

/** One scope's limits as a short line: `gpus 4, 200 GPU-hours/week, queued 10, priority ≤ 2, hold ttl ≤ 8h, runtime ≤ 1d`; `none` when none is set. */
export function limitsSummary(l: LimitValues): string {
  const parts: string[] = [];
  if (l.gpus !== null) parts.push(`gpus ${l.gpus}`);
  if (l.gpuHours !== null) parts.push(`${hoursText(l.gpuHours)} GPU-hours/${l.period}`);
  if (l.queued !== null) parts.push(`queued ${l.queued}`);
  if (l.maxPriority !== null) parts.push(`priority <= ${l.maxPriority}`);
  if (l.maxHoldTtlS !== null) parts.push(`hold ttl <= ${formatDuration(l.maxHoldTtlS)}`);
  if (l.maxRuntimeS !== null) parts.push(`runtime <= ${formatDuration(l.maxRuntimeS)}`);
  return parts.length ? parts.join(', ') : 'none';
}

/** 200 → `200`, 41.5 → `41.5`: hours as limits and figures print them. */
export function hoursText(h: number): string {
  return Number.isInteger(h) ? String(h) : h.toFixed(1);
}

/** What a submit asks for, as the limits see it. */
export interface Ask {
  kind: 'run' | 'tty' | 'hold';
  priority: number;
  /** --max-runtime as asked (after the fleet's own default), or null. */
  maxRuntimeS: number | null;
  /** Whether maxRuntimeS was given by the submitter (not the fleet's default). */
  runtimeAsked: boolean;
  /** A hold's --ttl. */
  ttlS: number | null;
  /** The fewest GPUs any of its ways needs. */
  gpus: number;
}

export type AskVerdict = { ok: true; maxRuntimeS: number | null; notice: string | null } | { ok: false; message: string };

/**
 * The checks a submit's own flags face (no figures needed): --priority,
 * --max-runtime, a hold's --ttl, and --gpus beyond what the scope may ever
 * hold. A job (or terminal) that gives no --max-runtime under a ceiling gets
 * the ceiling as its limit, and `notice` says so.
 */
export function checkAsk(scopes: readonly ScopeLimits[], ask: Ask): AskVerdict {
  const of = (l: ScopeLimits) => `limit of ${scopeWords(l.scope)}`;
  for (const l of scopes) {
    if (l.maxPriority !== null && ask.priority > l.maxPriority)
      return { ok: false, message: `--priority ${ask.priority} is over the ceiling: this token may ask for --priority up to ${l.maxPriority} (${of(l)})` };
    if (l.gpus !== null && ask.gpus > l.gpus)
      return {
        ok: false,
        message: `the job asks for ${ask.gpus} GPUs and ${scopeWords(l.scope)} may hold at most ${l.gpus} at once (its --gpus limit): it could never start; ask for at most ${l.gpus}`,
      };
    if (ask.kind === 'hold' && l.maxHoldTtlS !== null && ask.ttlS !== null && ask.ttlS > l.maxHoldTtlS)
      return {
        ok: false,
        message: `--ttl ${formatDuration(ask.ttlS)} is over the ceiling: a hold may last at most ${formatDuration(l.maxHoldTtlS)} (${of(l)}); extend it later with rc hold extend`,
      };
  }
  if (ask.kind === 'hold') return { ok: true, maxRuntimeS: ask.maxRuntimeS, notice: null };
  // The strictest runtime ceiling of all scopes.
  const ceiling = scopes.filter((l) => l.maxRuntimeS !== null).sort((a, b) => a.maxRuntimeS! - b.maxRuntimeS!)[0];
  if (!ceiling) return { ok: true, maxRuntimeS: ask.maxRuntimeS, notice: null };
  const most = ceiling.maxRuntimeS!;
  if (ask.maxRuntimeS !== null && ask.maxRuntimeS <= most) return { ok: true, maxRuntimeS: ask.maxRuntimeS, notice: null };
  if (ask.runtimeAsked)
    return {
      ok: false,
      message: `--max-runtime ${formatDuration(ask.maxRuntimeS!)} is over the ceiling: a job may run at most ${formatDuration(most)} (${of(ceiling)}); checkpoint longer work to run it in parts`,
    };
  return {
    ok: true,
    maxRuntimeS: most,
    notice: `no --max-runtime within the ceiling was given: the ${of(ceiling)} of ${formatDuration(most)} applies, and the ${ask.kind === 'tty' ? 'terminal' : 'job'} is killed past it`,
  };
}

/** A scope's use in its budget's window: device-seconds leased (idle ones included), and the leases as intervals (for when it refills). */
export interface BudgetUse {
  usedS: number;
  idleS: number;
}

/** The refusal of a submit whose scope has used its whole budget, or null when some is left. */
export function budgetRefusal(l: ScopeLimits, use: BudgetUse, refillAt: Date | null): string | null {
  if (l.gpuHours === null || l.period === null) return null;
  if (use.usedS < l.gpuHours * 3600) return null;
  const when = refillAt ? `; use leaves the window from ${utcMinute(refillAt)}` : '';
  return `${scopeWords(l.scope)} used ${(use.usedS / 3600).toFixed(1)} of its ${hoursText(l.gpuHours)} GPU-hours ${PERIOD_WORD[l.period]}${when}`;
}

/** The refusal of a job that would wait past a scope's --queued limit, or null. */
export function queuedRefusal(l: ScopeLimits, queuedNow: number, adding = 1): string | null {
  if (l.queued === null || queuedNow + adding <= l.queued) return null;
  // An array (rc run --array) counts every task: it is refused whole.
  if (adding > 1)
    return `${scopeWords(l.scope)} has ${queuedNow} jobs waiting and its limit is --queued ${l.queued}: an array of ${adding} tasks would pass it; submit a smaller array, or wait for some to start or end`;
  return `${scopeWords(l.scope)} has ${queuedNow} jobs waiting, its limit (--queued ${l.queued}): wait for one to start or end, or rc kill one you no longer need`;
}

/**
 * When a scope's use in its rolling window falls below its budget, if nothing
 * more runs: the leases' intervals (running ones end now) leave the window
 * [t - window, t] as t moves on. Null when it is below the budget already.
 */
export function refillAt(intervals: readonly { from: Date; to: Date }[], windowS: number, budgetS: number, now: Date): Date | null {
  const start = now.getTime() - windowS * 1000;
  const clipped = intervals.map((i) => ({ from: Math.max(i.from.getTime(), start), to: Math.min(i.to.getTime(), now.getTime()) })).filter((i) => i.to > i.from);
  let used = clipped.reduce((n, i) => n + (i.to - i.from) / 1000, 0);
  if (used < budgetS) return null;
  // As the window's start moves from `start`, the use falls by the number of intervals it is inside of, per second.
  const points = [...new Set(clipped.flatMap((i) => [i.from, i.to]))].sort((a, b) => a - b);
  let at = start;
  for (const p of points) {
    const inside = clipped.filter((i) => i.from <= at && i.to > at).length;
    const fall = (inside * (p - at)) / 1000;
    if (inside > 0 && used - fall < budgetS) return new Date(at + ((used - budgetS) / inside) * 1000 + windowS * 1000);
    used -= fall;
    at = p;
  }
  return new Date(now.getTime() + windowS * 1000);
}

/** `2026-12-07 14:00 UTC`: a time to the minute, rounded up (use has left by then). */
export function utcMinute(d: Date): string {
  const up = new Date(Math.ceil(d.getTime() / 60_000) * 60_000);
  return `${up.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** What whoami says of one scope: `gpus 3 of 4 in use; 41.5 of 200 GPU-hours this week, 12.0 of them idle`. */
export function standingText(l: LimitValues, s: { gpusInUse: number; usedS: number; idleS: number; queued: number }): string {
  const parts: string[] = [];
  parts.push(l.gpus !== null ? `gpus ${s.gpusInUse} of ${l.gpus} in use` : `gpus ${s.gpusInUse} in use`);
  if (l.gpuHours !== null && l.period !== null)
    parts.push(`${(s.usedS / 3600).toFixed(1)} of ${hoursText(l.gpuHours)} GPU-hours this ${l.period}, ${(s.idleS / 3600).toFixed(1)} of them idle`);
  if (l.queued !== null) parts.push(`${s.queued} of ${l.queued} jobs waiting`);
  return parts.join('; ');
}
