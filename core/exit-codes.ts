// How `rc` exits. When the command ran, rc exits with the command's own code
// (128+N when a signal ended it). rc's own outcomes use codes from 200 up, so a
// script can tell "my command failed" from "rc could not run it".
export const EXIT = {
  ok: 0,
  /** Bad flags or arguments: nothing was submitted. */
  usage: 2,
  /** Ctrl-C on the CLI killed the job (the shell convention). */
  interrupted: 130,
  /** rc's stdout or stderr was closed by its reader (`| head`): as a program killed by SIGPIPE; rc run kills its job. */
  broken_pipe: 141,
  no_matching_device: 201,
  busy: 202,
  wait_timeout: 203,
  watchdog: 204,
  lost: 205,
  unauthorized: 206,
  unreachable: 207,
  not_found: 208,
  not_job_owner: 209,
  /** Any other error reported by the controller. */
  error: 211,
  bad_selector: 212,
  /** The device asked for (or every device that matches) is quarantined: pick another. */
  quarantined: 213,
  /** A job name matched several jobs: use one of the ids the message lists. */
  ambiguous_name: 214,
  /** The --preemptible job was preempted (stopped for a job that could start nowhere else), or its spot machine taken back once more than --restarts allows, and not queued again. */
  preempted: 215,
  /** The hold's GPUs were idle for RC_IDLE_HOLD_RELEASE and the controller released it (cause idle_hold). */
  idle_hold: 216,
  /** A limit of the token or its team refused the submit (rc admin limit): the message says which and when it frees. */
  over_limit: 217,
  /** rc run --after: a job it runs after failed, was killed, cancelled or lost, so this one was cancelled (cause dependency) without running. */
  dependency: 218,
} as const;

export type ExitName = keyof typeof EXIT;

/** The exit code for an error code the controller returned. */
export function exitCodeForError(code: string): number {
  switch (code) {
    case 'no_matching_device':
      return EXIT.no_matching_device;
    case 'busy':
      return EXIT.busy;
    case 'bad_selector':
      return EXIT.bad_selector;
    case 'quarantined':
      return EXIT.quarantined;
    case 'bad_request':
    case 'bad_env':
    case 'reserved_env':
    case 'bad_name':
    case 'bad_gpu':
    case 'bad_cloud':
    case 'bad_array':
    case 'bad_dependency':
      return EXIT.usage;
    case 'unauthorized':
    case 'forbidden':
      return EXIT.unauthorized;
    case 'not_found':
      return EXIT.not_found;
    case 'not_job_owner':
      return EXIT.not_job_owner;
    case 'ambiguous_name':
      return EXIT.ambiguous_name;
    case 'over_limit':
      return EXIT.over_limit;
    default:
      return EXIT.error;
  }
}

/**
 * What each of rc's own exit codes means, as docs/cli.md's table shows it (npm run docs writes the table from
 * this; test/unit/docs-tables.test.ts fails when they differ). A code without its sentence does not compile.
 */
export const EXIT_MEANING: Record<Exclude<ExitName, 'ok'>, string> = {
  usage: 'Usage: bad flags or arguments, or the controller answered `bad_request`. Nothing ran.',
  interrupted: 'Ctrl-C: the job was killed, or cancelled if it was still queued.',
  broken_pipe: "rc's output was closed by its reader (`rc run -- yes | head -1`): the job was killed, as SIGPIPE ends a local command.",
  no_matching_device: '`no_matching_device`: no device has the labels asked for.',
  busy: '`busy`: `--no-wait`, and no matching device was free.',
  wait_timeout: 'The queued job was cancelled before it started: `--timeout` ran out, or someone killed it while it was queued.',
  watchdog: 'Killed by a watchdog: `--max-runtime`, `--idle-timeout` or `--gpu-idle-timeout` (cause `max_runtime`, `idle` or `gpu_idle`).',
  lost: '`lost`: the worker went away mid-job.',
  unauthorized: '`unauthorized` or `forbidden`, or the CLI is not configured.',
  unreachable:
    'The controller is unreachable or did not answer in time (`no_answer`: `RC_CONNECT_TIMEOUT_MS`, `RC_ANSWER_TIMEOUT_MS`), or the connection dropped mid-job and did not come back within 2 minutes.',
  not_found: '`not_found`.',
  not_job_owner: '`not_job_owner`.',
  error: 'Any other error from the controller.',
  bad_selector: '`bad_selector`.',
  quarantined: '`quarantined`: the device asked for (or every device that matches) is unhealthy. Pick another device; an operator must clear it.',
  ambiguous_name: '`ambiguous_name`: a job name matched several jobs.',
  preempted:
    '`preempted`: the `--preemptible` job was stopped for a job that could start nowhere else, or the spot machine it ran on was taken back once more than `--restarts` allows, and not queued again.',
  over_limit: '`over_limit`: a limit of the token or its team (`rc admin limit`) refused the submit; the message says which, and when a budget refills.',
  dependency: '`dependency`: a job given to `--after` failed, was killed, cancelled or lost, so this job was cancelled without running; the message names it.',
  idle_hold: "`idle_hold`: `rc hold`'s GPUs were idle for the fleet's `RC_IDLE_HOLD_RELEASE` and the controller released the hold.",
};
