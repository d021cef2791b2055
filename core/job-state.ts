// A job's life, apart from any I/O: its states, the moves between them, and
// how it ends. How it ended travels as data (the cause), so that no layer has
// to read it back out of the reason, which is prose for people.
import { EXIT } from './exit-codes';

export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'killed', 'lost', 'cancelled', 'preempted'] as const;
export type JobState = (typeof JOB_STATES)[number];
export type FinalState = Exclude<JobState, 'queued' | 'running'>;

export const FINAL_STATES: ReadonlySet<JobState> = new Set<JobState>(['succeeded', 'failed', 'killed', 'lost', 'cancelled', 'preempted']);

export function isFinal(state: JobState): state is FinalState {
  return FINAL_STATES.has(state);
}

/**
 * Why a job ended.
 * - exit: its command exited by itself (succeeded or failed by its code, or a signal nobody in rc sent);
 * - killed: rc kill (or Ctrl-C of rc run) by someone allowed to; released: rc release of a hold;
 * - max_runtime, idle: its watchdogs; hold_expired: a hold's TTL ran out;
 * - unattended: a terminal nobody was attached to for RC_TTY_GRACE_S;
 * - no_wait: --no-wait, and nothing was free; wait_timeout: --timeout ran out in the queue;
 * - lost: its worker went away, or came back without it;
 * - copy_failed: an rc cp that did not complete;
 * - preempted: a --preemptible job stopped (SIGTERM, notice, SIGKILL) to make room for a job that could start nowhere else;
 * - idle_hold: a hold whose GPUs were idle (core/idle.ts) for RC_IDLE_HOLD_RELEASE, released by the controller;
 * - gpu_idle: rc run --gpu-idle-timeout: its GPUs were idle that long;
 * - dependency: rc run --after: a job it runs after ended other than succeeded, so it never runs (core/dependencies.ts);
 * - spot: the provider took back the spot machine it ran on (server/machines/): it starts over on another, --restarts times.
 */
export const END_CAUSES = [
  'exit',
  'killed',
  'released',
  'max_runtime',
  'idle',
  'hold_expired',
  'unattended',
  'no_wait',
  'wait_timeout',
  'lost',
  'copy_failed',
  'preempted',
  'idle_hold',
  'gpu_idle',
  'dependency',
  'spot',
] as const;
export type EndCause = (typeof END_CAUSES)[number];

/** The causes a stop asked of a job's worker can have (a kill request): they end it `killed`, or `cancelled` while still queued. */
export type StopCause = Extract<
  EndCause,
  'killed' | 'released' | 'max_runtime' | 'idle' | 'hold_expired' | 'unattended' | 'preempted' | 'idle_hold' | 'gpu_idle'
>;
export const STOP_CAUSES: readonly StopCause[] = [
  'killed',
  'released',
  'max_runtime',
  'idle',
  'hold_expired',
  'unattended',
  'preempted',
  'idle_hold',
  'gpu_idle',
];

/**
 * Where each state may go. `running → queued`: the claim was undone because its worker was not connected to take it,
 * or the attempt ended (lost with restarts left, preempted with --retry-on-preempt) and the job waits for its next one.
 */
export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  queued: ['running', 'cancelled'],
  running: ['succeeded', 'failed', 'killed', 'lost', 'preempted', 'queued'],
  succeeded: [],
  failed: [],
  killed: [],
  lost: [],
  cancelled: [],
  preempted: [],
};

export function canMove(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Which causes each final state may carry. */
export const CAUSES_OF: Readonly<Record<FinalState, readonly EndCause[]>> = {
  succeeded: ['exit'],
  failed: ['exit', 'copy_failed'],
  killed: ['killed', 'released', 'max_runtime', 'idle', 'hold_expired', 'unattended', 'idle_hold', 'gpu_idle'],
  lost: ['lost'],
  cancelled: ['killed', 'released', 'unattended', 'no_wait', 'wait_timeout', 'dependency'],
  preempted: ['preempted', 'spot'],
};

export interface Ending {
  state: FinalState;
  exitCode: number | null;
  cause: EndCause;
  reason: string | null;
}

/** A stop asked of the job before it ended: why, in words and as a cause. */
export interface StopRequest {
  cause: StopCause;
  reason: string;
}

const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};

/**
 * How a running job ended, from its worker's report (the command's exit code,
 * or the signal that ended it) and the stop asked of it, if any: a stop wins,
 * so a job killed by rc is `killed` whatever its command did on the way out.
 */
export function outcome(exitCode: number | null, signal: string | null, stop: StopRequest | null): Ending {
  const code = exitCode ?? (signal ? 128 + (SIGNALS[signal] ?? 0) : null);
  if (stop) return { state: stoppedState(stop.cause), exitCode: code, cause: stop.cause, reason: stop.reason };
  return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code, cause: 'exit', reason: signal ? `terminated by ${signal}` : null };
}

/** The state a stop ends a running job in: `preempted` for a preemption, `killed` for the rest. */
export function stoppedState(cause: StopCause): 'killed' | 'preempted' {
  return cause === 'preempted' ? 'preempted' : 'killed';
}

/**
 * Whether an attempt that ended so is followed by another (the job goes back
 * to the queue, at the front of its priority) rather than ending the job: a
 * lost one while `--restarts` has some left (attempt n of restarts+1, the
 * attempts --retries used not counted), a preempted one with
 * `--retry-on-preempt` (as often as it is preempted) or on a spot machine taken
 * back while `--restarts` has some left (counted as a lost one's), one whose command
 * exited non-zero while `--retries` has some left (`retried` of them used).
 * server/jobs/finish.ts's statement says the same (test/integration/leases.test.ts).
 */
export function runsAgain(
  job: { attempt: number; restarts: number; retryOnPreempt: boolean; retries?: number; retried?: number },
  end: Pick<Ending, 'state'> & { cause?: EndCause },
): boolean {
  if (end.state === 'lost') return job.attempt - (job.retried ?? 0) <= job.restarts;
  if (end.state === 'preempted') return job.retryOnPreempt || (end.cause === 'spot' && job.attempt - (job.retried ?? 0) <= job.restarts);
  if (end.state === 'failed' && end.cause === 'exit') return (job.retried ?? 0) < (job.retries ?? 0);
  return false;
}

/** Whether runsAgain's next attempt is a --retries one (it counts in `retried`, and waits --retry-delay). */
export function isRetry(end: Pick<Ending, 'state'> & { cause?: EndCause }): boolean {
  return end.state === 'failed' && end.cause === 'exit';
}

/** A job that ends without its command's report: cancelled in the queue, lost, or ended by the controller. */
export function ended(state: Exclude<FinalState, 'succeeded'>, cause: EndCause, reason: string | null, exitCode: number | null = null): Ending {
  if (!CAUSES_OF[state].includes(cause)) throw new Error(`a ${state} job cannot have the cause ${cause}`);
  return { state, exitCode, cause, reason };
}

/**
 * rc's exit code for a job's end, as `rc run`, `rc attach` and `rc wait`
 * exit: the command's own code when it ran to its end, rc's own codes (200
 * and up) for rc's outcomes. `interrupted`: this rc's Ctrl-C stopped it.
 */
export function exitCodeFor(end: { state: string; cause: EndCause | null; exitCode: number | null }, interrupted = false): number {
  switch (end.state) {
    case 'succeeded':
    case 'failed':
      return end.exitCode ?? EXIT.error;
    case 'killed':
      if (interrupted) return EXIT.interrupted;
      if (end.cause === 'idle_hold') return EXIT.idle_hold;
      return end.cause === 'max_runtime' || end.cause === 'idle' || end.cause === 'gpu_idle' ? EXIT.watchdog : (end.exitCode ?? EXIT.error);
    case 'lost':
      return EXIT.lost;
    case 'preempted':
      return EXIT.preempted;
    case 'cancelled':
      if (interrupted) return EXIT.interrupted;
      if (end.cause === 'dependency') return EXIT.dependency;
      return end.cause === 'no_wait' ? EXIT.busy : EXIT.wait_timeout;
    default:
      return EXIT.error;
  }
}

export function isEndCause(s: unknown): s is EndCause {
  return typeof s === 'string' && (END_CAUSES as readonly string[]).includes(s);
}

/**
 * What happens to a job, as the controller's statements see it. Each one
 * applies only in the states its statement names; in any other it changes
 * nothing (a late report, a kill of a finished job).
 */
export type LifeEvent =
  | { type: 'claim' }
  /** The claim is undone: its worker was not connected to take the start. */
  | { type: 'requeue' }
  /** A stop is asked (rc kill, a watchdog): the first one asked is kept. */
  | { type: 'stop'; stop: StopRequest }
  /** The worker reports the command's end, and its own watchdog's stop if that ended it. */
  | { type: 'exit'; exitCode: number | null; signal: string | null; reported: StopRequest | null }
  /** A queued job is taken out of the queue. */
  | { type: 'cancel'; cause: Extract<EndCause, 'no_wait' | 'wait_timeout' | 'killed' | 'released' | 'unattended' | 'dependency'>; reason: string }
  /** Its host stopped answering, or its worker came back without it. */
  | { type: 'lose'; reason: string }
  /** The controller ends it past a limit its worker did not enforce. */
  | { type: 'backstop'; stop: StopRequest };

export interface JobLife {
  state: JobState;
  stop: StopRequest | null;
  ending: Ending | null;
}

/** The next life of a job after an event: the rules the controller's statements follow. */
export function step(job: JobLife, e: LifeEvent): JobLife {
  switch (e.type) {
    case 'claim':
      return job.state === 'queued' ? { ...job, state: 'running' } : job;
    case 'requeue':
      return job.state === 'running' && job.stop === null ? { ...job, state: 'queued' } : job;
    case 'stop':
      if (job.state === 'queued') return finish(job, ended('cancelled', CAUSES_OF.cancelled.includes(e.stop.cause) ? e.stop.cause : 'killed', e.stop.reason));
      return job.state === 'running' ? { ...job, stop: job.stop ?? e.stop } : job;
    case 'exit':
      return job.state === 'running' ? finish(job, outcome(e.exitCode, e.signal, job.stop ?? e.reported)) : job;
    case 'cancel':
      return job.state === 'queued' ? finish(job, ended('cancelled', e.cause, e.reason)) : job;
    case 'lose':
      return job.state === 'running' ? finish(job, ended('lost', 'lost', job.stop?.reason ?? e.reason)) : job;
    case 'backstop':
      return job.state === 'running' ? finish(job, ended(stoppedState(e.stop.cause), e.stop.cause, e.stop.reason)) : job;
  }
}

function finish(job: JobLife, end: Ending): JobLife {
  return { ...job, state: end.state, ending: end };
}
