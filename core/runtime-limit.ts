// The fleet's bound on long work (the manual's rule 4: always bound it):
// a job without --max-runtime gets the fleet's default, and none may ask for
// more than its maximum. Holds end by their TTL and terminals by their
// grace, so only commands (kind run) are bounded here.
import { formatDuration } from './duration';

export interface RuntimeLimits {
  /** --max-runtime for a job that gives none (RC_MAX_RUNTIME_DEFAULT_S); null: none. */
  defaultS: number | null;
  /** The most a job may ask for (RC_MAX_RUNTIME_LIMIT_S); null: no maximum. */
  maxS: number | null;
}

export type RuntimeVerdict = { ok: true; maxRuntimeS: number | null; defaulted: boolean } | { ok: false; message: string };

export function boundRuntime(kind: string, asked: number | null | undefined, limits: RuntimeLimits): RuntimeVerdict {
  if (kind !== 'run') return { ok: true, maxRuntimeS: asked ?? null, defaulted: false };
  if (asked != null) {
    if (limits.maxS !== null && asked > limits.maxS)
      return {
        ok: false,
        message: `--max-runtime ${formatDuration(asked)} is over this fleet's maximum of ${formatDuration(limits.maxS)}; ask for at most that, and checkpoint longer work to run it in parts`,
      };
    return { ok: true, maxRuntimeS: asked, defaulted: false };
  }
  const fallback = limits.defaultS === null ? null : limits.maxS === null ? limits.defaultS : Math.min(limits.defaultS, limits.maxS);
  return { ok: true, maxRuntimeS: fallback, defaulted: fallback !== null };
}

/** What rc run says on stderr of a job that got the fleet's default (once per submitter: server/http/api.ts). */
export function defaultedRuntimeNotice(jobId: string, maxRuntimeS: number, limits: RuntimeLimits): string {
  const most = limits.maxS === null ? '' : ` (at most ${formatDuration(limits.maxS)})`;
  return `job ${jobId} has no --max-runtime: this fleet's default of ${formatDuration(maxRuntimeS)} applies, and it is killed past it; give --max-runtime to choose${most}`;
}
