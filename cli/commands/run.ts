// rc run: claim a device, run the command on its host, stream the output,
// exit with the command's exit code.
import { idempotencyKey, resending } from '../resend';
import { StdinPump, stdinIsData } from '../stdin-pump';
import { EXIT } from '../../core/exit-codes';
import { exitCodeFor } from '../../core/job-state';
import { hostOffText } from '../../core/hosts-off';
import { FRAME_EVENT, FRAME_STDOUT, FrameDecoder, splitOutput } from '../../core/frames';
import type { Explanation, JobEvent, SubmitJobBody } from '../../protocol/wire';
import type { Client } from '../client';
import type { TtyRun } from '../tty';
import type { Body } from '../http1';
import { durationFlag, intFlag, parseFlags, stringFlag, type FlagSpec, type Parsed } from '../flags';
import { err, errorLine, fail, json, jsonLine, out, setBrokenPipeHook, stderr, stdout, usage } from '../output';
import { StringDecoder } from 'node:string_decoder';
import { jsonEventOf, outputLine } from '../json-stream';
import { envKeyProblem, envProblem, jobNameProblem, MAX_RESTARTS } from '../../core/job-options';
import { MAX_DEPENDENCIES, MAX_RETRIES, MAX_RETRY_DELAY_S, retryNotice } from '../../core/dependencies';
import { parseDuration } from '../../core/duration';
import { MACHINE_FLAGS, machineOf, PLACEMENT_FLAGS, placementOf } from '../placement';
import { localClock, untilText } from '../../core/until-text';
import { parseArraySpec } from '../../core/array-spec';
import { runArray } from './arrays';

export const RUN_HELP = `usage: rc run [flags] -- <command> [args...]

Claims a free matching device, runs the command on the host that owns it,
streams its output and exits with its exit code. Waits in the queue when every
matching device is busy.

  -s, --select <selector>   labels the device must have, e.g. 'vram>=40G,vendor=nvidia'
                            (given twice, both must hold)
  -d, --device <host:gpuN>  this device and no other
      --cwd <dir>           working directory on the device host
      --name <name>         a name for the job, shown by rc ps, rc jobs and
                            rc describe, and usable instead of its id in rc kill,
                            rc logs, rc attach and rc describe (1-63 letters,
                            digits, . _ -; need not be unique)
      --comment <text>      a note for people (why it runs, a ticket), shown by
                            rc describe and the job's page (one line, at most
                            500 characters)
      --env KEY=VALUE       set KEY in the job's environment (repeatable; the
                            last one for a KEY wins). --env KEY passes your own
                            value of KEY. Values may be secrets: rc never shows
                            them, only the keys. rc's own variables
                            (CUDA_VISIBLE_DEVICES, RC_JOB_ID, ...) are refused
      --gpus <n>            devices on one host (1-8, default 1)
      --gpu <choices>       any one of these GPU families or models, in order of
                            preference, with how many on one host: A100:2,H100
                            (a family: A100 is any A100, 40 or 80 GB; an exact
                            model: A100-80GB is only that; 5090, RTX5090 and
                            'RTX 5090' are one). Starts on the first choice free
                            now, else on whichever frees first; --select must
                            hold too
      --cloud-only          run only on a provider machine (an idle one, else
                            the cheapest offer that fits is launched), never
                            on a joined host; rc offers shows the offers
      --reserved-only       run only on joined hosts, never launch a machine
                            (by default a job takes a free joined host first,
                            else a provider machine when providers are set up)
      --cloud <p[/a]>       only machines of this provider (local, runpod) or
                            account (runpod/lab-b); implies --cloud-only
      --max-price <$>       its machine costs at most this many dollars an hour
      --spot                spot offers compete with on-demand ones on price;
                            a spot machine taken back starts the job over on
                            another (--restarts, 10 by default with --spot)
      --cpus <n>            its machine has at least this many CPUs
      --ram <GiB>           its machine has at least this much memory
      --disk <GiB>          its machine has at least this much disk
      --cuda <version>      its machine's driver supports this CUDA version
      --keep <dur>          its machine stays idle this long for the next job
                            once it ends (default 5m; 0 deletes it at once)
      --priority <n>        -10..10, higher goes first (default 0)
      --no-wait             fail with busy instead of queueing
      --timeout <dur>       give up waiting for a device after this long (e.g. 30m)
      --max-runtime <dur>   kill the job if it runs longer (e.g. 2h)
      --idle-timeout <dur>  kill the job after this long with no output; 0 disables
      --gpu-idle-timeout <dur>
                            kill the job once its GPUs have been idle this long
                            (utilisation at most 1% and no process on them), e.g.
                            30m; exit code 204, cause gpu_idle. Needs a GPU signal:
                            CPU slots are never idle
      --restarts <n>        if the job's host is lost, run it again from the start
                            (on any matching device, before the queued jobs of its
                            priority), up to n times (0-20, default 0). Checkpoint
                            to shared storage: a restart starts over
      --preemptible         may run on any free device, and be preempted for a job
                            that can start nowhere else: SIGTERM, the deadline in
                            the file $RC_PREEMPT_FILE names, SIGKILL at the deadline
                            (the fleet's notice, 60 s unless set); ends preempted (exit 215)
      --retry-on-preempt    with --preemptible: queued again (at the front of its
                            priority) each time it is preempted
      --after <job>[,<job>...]
                            start only once each of these jobs (ids or names) has
                            succeeded; if one fails, is killed, cancelled or lost,
                            this job is cancelled without running (cause
                            dependency, exit 218). Repeatable; at most 100 jobs
      --after-any <job>[,<job>...]
                            start only once each of these jobs has ended, however
                            it ended. Both flags may be given
      --retries <n>         if the command exits non-zero, queue it again (at the
                            front of its priority) as a new attempt, up to n times
                            (0-20, default 0); rc exits with the last attempt's
                            code. Distinct from --restarts (a lost host)
      --retry-delay <dur>   wait this long before each retry (e.g. 30s; default
                            0, at most 24h)
  -t, --tty                 an interactive terminal: raw keys (Ctrl-C, Ctrl-D) go to
                            the program, window resizes follow; without a command,
                            a login shell (bash -l, else sh). Output is not stored
      --detach              queue the job, print its id and exit 0 at once; rc wait <id>
                            waits for its end (and exits with its code), rc attach <id>
                            or rc logs -f <id> follow its output
      --no-stdin            the job reads nothing (/dev/null) even when rc's stdin is a
                            pipe or a file; without it, a piped stdin reaches the job
                            and its end is the job's end of file (as with srun, ssh)
      --array <spec>        an array: one task per index, each a run of the command
                            with RC_ARRAY_ID and RC_ARRAY_INDEX set: 0-99, 1,5,7,
                            0-20:2 (every 2nd), or a mix (0-9,20,30-40:5); %N runs
                            at most N at once (0-99%8). At most 10,000 tasks,
                            indexes up to 1,000,000. Prints the array's id; without
                            --detach follows it, a line each time its counts
                            change, and exits 0 when every task succeeded, else as
                            rc run would for the lowest-index task that did not
                            (its command's code; 200 and up when rc ended it).
                            --name names the array; rc logs <array>:<index> shows a
                            task's output, rc jobs --array <array> lists them
      --explain             print which devices match, how many are free (a device
                            reserved for a queued job is not) and how deep their
                            queue is, and why the others do not match; then exit
                            without submitting
      --json                JSON on stdout (docs/cli.md, "JSON output"): with --detach
                            or --explain the API's answer; else one object a line as
                            it happens: queued, started, each output chunk
                            {"type":"output","stream","offset","data"}, and the exit
                            {"type":"exit","job","state","exitCode","cause","reason"}.
                            rc still exits with the command's code
`;

export const RUN_SPECS: FlagSpec[] = [
  ...PLACEMENT_FLAGS,
  ...MACHINE_FLAGS,
  { name: 'cwd', type: 'string' },
  { name: 'name', type: 'string' },
  { name: 'comment', type: 'string' },
  { name: 'env', type: 'string', repeat: true },
  { name: 'explain', type: 'boolean' },
  { name: 'json', type: 'boolean' },
  { name: 'array', type: 'string' },
  { name: 'detach', type: 'boolean' },
  { name: 'no-stdin', type: 'boolean' },
  { name: 'tty', short: 't', type: 'boolean' },
  { name: 'max-runtime', type: 'string' },
  { name: 'idle-timeout', type: 'string' },
  { name: 'gpu-idle-timeout', type: 'string' },
  { name: 'restarts', type: 'string' },
  { name: 'preemptible', type: 'boolean' },
  { name: 'retry-on-preempt', type: 'boolean' },
  { name: 'after', type: 'string', repeat: true },
  { name: 'after-any', type: 'string', repeat: true },
  { name: 'retries', type: 'string' },
  { name: 'retry-delay', type: 'string' },
  { name: 'help', short: 'h', type: 'boolean' },
];

/** Resolves to the exit code. */
export async function run(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('run', args, RUN_SPECS, true);
  if (parsed.flags.has('help')) {
    out(RUN_HELP);
    return EXIT.ok;
  }
  if (parsed.flags.has('explain')) {
    const { selector, device, gpu, gpus } = placementOf(parsed);
    return explain(client, selector, device, gpu ?? null, gpus, parsed.flags.has('json'));
  }
  const tty = parsed.flags.has('tty');
  if (parsed.rest.length === 0 && !tty) usage('rc run needs a command: rc run [flags] -- <command> [args...]');
  const cwd = stringFlag(parsed, 'cwd');
  if (cwd !== undefined && !cwd.startsWith('/')) usage(`--cwd must be an absolute path on the device host, not ${cwd}`);
  const name = stringFlag(parsed, 'name');
  const nameProblem = name === undefined ? null : jobNameProblem(name);
  if (nameProblem) fail('bad_name', nameProblem, EXIT.usage);
  const restarts = intFlag(parsed, 'restarts', 0, MAX_RESTARTS);
  const preemptible = parsed.flags.has('preemptible');
  const retryOnPreempt = parsed.flags.has('retry-on-preempt');
  if (retryOnPreempt && !preemptible) usage('--retry-on-preempt needs --preemptible: only a preemptible job is preempted');
  if (tty && restarts) usage('--restarts is for jobs with stored output: a terminal (--tty) is not started over');
  const waits = waitsOf(parsed);
  if (tty && Object.keys(waits).length) usage('--after, --after-any, --retries and --retry-delay are for jobs with stored output, not a terminal (--tty)');
  if (waits.after && parsed.flags.has('no-wait')) usage('--no-wait starts now or never, and --after waits for other jobs: give one or the other');
  const body: SubmitJobBody = {
    argv: parsed.rest,
    name: name ?? null,
    comment: stringFlag(parsed, 'comment') ?? null,
    env: envOf(parsed),
    ...placementOf(parsed),
    ...machineOf(parsed),
    cwd: cwd ?? null,
    maxRuntimeS: durationFlag(parsed, 'max-runtime', 1),
    idleTimeoutS: durationFlag(parsed, 'idle-timeout', 0),
    gpuIdleTimeoutS: durationFlag(parsed, 'gpu-idle-timeout', 1) ?? null,
    submitter: client.submitter,
    ...(restarts ? { restarts } : {}),
    ...(preemptible ? { preemptible } : {}),
    ...(retryOnPreempt ? { retryOnPreempt } : {}),
  };
  if (tty && parsed.flags.has('detach')) usage('--detach is for jobs with stored output: a terminal (--tty) needs you attached');
  if (tty && parsed.flags.has('json')) usage('--json is for jobs with stored output: a terminal (--tty) is a screen, not lines');
  const array = stringFlag(parsed, 'array');
  if (array !== undefined && tty) usage('--array runs commands with stored output: a terminal (--tty) is not an array task');
  if (tty) {
    // The terminal socket's open has no dependencies or retries (refused above): its own `after` is a replay offset.
    const { after: _a, afterAny: _b, retries: _c, retryDelayS: _d, ...open } = body;
    return runTtyJob(client, open);
  }
  Object.assign(body, waits);
  if (array !== undefined) {
    if (body.wait === false) fail('bad_array', 'an array always queues its tasks: drop --no-wait', EXIT.usage);
    const spec = parseArraySpec(array);
    if (!spec.ok) fail('bad_array', spec.message, EXIT.usage);
    return runArray(client, array, body, parsed.flags.has('detach'), parsed.flags.has('json'));
  }
  // A terminal opens on its socket once and is not sent again; a submit may be (resending), so it carries a key.
  body.idempotencyKey = idempotencyKey();
  // A pipe or a file on rc's stdin goes to the job (as srun and ssh do); a terminal's keys stay rc's (Ctrl-C).
  const pipeStdin = !tty && !parsed.flags.has('detach') && !parsed.flags.has('no-stdin') && stdinIsData();
  if (pipeStdin) body.stdin = true;
  if (parsed.flags.has('detach')) {
    // The plain answer: stored (queued, or started at once), nothing followed.
    const answer = await resending(() => client.call('POST /api/jobs', { body }));
    if (parsed.flags.has('json')) {
      json(answer);
      return EXIT.ok;
    }
    for (const n of answer.notices ?? []) err(`rc: ${n}\n`);
    out(`${answer.job.id}\n`);
    return EXIT.ok;
  }
  const submit = () => resending(() => client.stream('POST /api/jobs', { body }));
  const res = await submit();
  let pump: StdinPump | null = null;
  const code = await follow(client, res, {
    json: parsed.flags.has('json'),
    resubmit: submit,
    onStarted: pipeStdin
      ? (jobId) => {
          pump ??= new StdinPump(client, jobId);
          void pump.run();
        }
      : undefined,
  });
  (pump as StdinPump | null)?.stop();
  return code;
}

/**
 * The --env flags as the job's environment: KEY=VALUE, or KEY for this
 * shell's own value of KEY; the last one for a KEY wins. Checked here as the
 * controller will (core/job-options.ts), with the code it would answer.
 */
export function envOf(parsed: Parsed, from: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> | null {
  const given = parsed.lists.get('env') ?? [];
  if (given.length === 0) return null;
  const env: Record<string, string> = {};
  for (const item of given) {
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const bad = envKeyProblem(key);
    if (bad) fail(bad.code, `--env ${key}: ${bad.message}`, EXIT.usage);
    const value = eq < 0 ? from[key] : item.slice(eq + 1);
    if (value === undefined)
      usage(`--env ${key}: ${key} is not set in your environment, so there is no value to pass; set it, or give one: --env ${key}=VALUE`);
    env[key] = value;
  }
  const bad = envProblem(env);
  if (bad) fail(bad.code, bad.key ? `--env ${bad.key}: ${bad.message}` : bad.message, EXIT.usage);
  return env;
}

/**
 * --after, --after-any (comma-separated, repeatable), --retries and
 * --retry-delay, checked as the controller will (core/dependencies.ts's bounds).
 */
export function waitsOf(parsed: Parsed): Pick<SubmitJobBody, 'after' | 'afterAny' | 'retries' | 'retryDelayS'> {
  const out: Pick<SubmitJobBody, 'after' | 'afterAny' | 'retries' | 'retryDelayS'> = {};
  for (const [flag, field] of [
    ['after', 'after'],
    ['after-any', 'afterAny'],
  ] as const) {
    const given = parsed.lists.get(flag);
    if (!given) continue;
    const refs = given.flatMap((g) => g.split(',')).map((r) => r.trim());
    if (refs.some((r) => r === '')) usage(`--${flag} takes job ids or names, separated by commas (--${flag} j123,train); an empty one is not a job`);
    if (refs.length > MAX_DEPENDENCIES) usage(`--${flag} takes at most ${MAX_DEPENDENCIES} jobs, not ${refs.length}`);
    out[field] = [...new Set(refs)];
  }
  const retries = intFlag(parsed, 'retries', 0, MAX_RETRIES);
  if (retries) out.retries = retries;
  const delay = stringFlag(parsed, 'retry-delay');
  if (delay !== undefined) {
    const s = parseDuration(delay);
    if (s === null || s < 0 || s > MAX_RETRY_DELAY_S) usage(`--retry-delay takes a duration such as 30s, 5m or 1h, at most 24h; not ${delay}`);
    if (!retries) usage('--retry-delay needs --retries: without retries there is nothing to delay');
    if (s) out.retryDelayS = s;
  }
  return out;
}

/** How long a lost stream may take to come back before rc gives up (exit 207); rc hold waits as long. */
export const RECONNECT_MS = 120_000;

/**
 * Copies a job's frame stream to stdout/stderr until its exit event and
 * resolves to rc's exit code. If the stream breaks (a controller restart, or
 * the controller dropped this client for falling too far behind), it
 * reconnects and resumes after the last chunk it printed. Ctrl-C kills the job
 * (rc run) or, with `detachOnInterrupt`, only stops following (rc attach, rc logs -f).
 */
export async function follow(
  client: Client,
  first: Body,
  opts: {
    detachOnInterrupt?: boolean;
    knownJobId?: string;
    reconnect?: boolean;
    quiet?: boolean;
    /** --json: each event and chunk as a line of JSON on stdout (quiet: the exit alone). */
    json?: boolean;
    onStarted?: (jobId: string) => void;
    /** The submit again (with its idempotency key), for a stream lost before it named the job. */
    resubmit?: () => Promise<Body>;
  } = {},
): Promise<number> {
  const state: FollowState = {
    jobId: opts.knownJobId ?? null,
    interrupted: false,
    lastSeq: opts.quiet ? NO_OUTPUT : 0,
    result: null,
    quiet: opts.quiet ?? false,
    json: opts.json ?? false,
    offsets: { stdout: 0, stderr: 0 },
    decoders: null,
    mayResubmit: opts.resubmit !== undefined,
  };
  const killed = (): Promise<void> =>
    state.jobId
      ? client.call('POST /api/jobs/:id/kill', { id: state.jobId, body: { submitter: client.submitter } }).then(
          () => {},
          () => {},
        )
      : Promise.resolve();
  const kill = () => void killed();
  // Its output's reader is gone: rc run's job goes with it (rc attach and logs -f only stop following).
  setBrokenPipeHook(opts.detachOnInterrupt ? null : killed);
  const onSigint = () => {
    if (opts.detachOnInterrupt || state.interrupted) {
      process.exitCode = EXIT.interrupted;
      process.exit();
    }
    state.interrupted = true;
    err(`\nrc: stopping job ${state.jobId ?? ''} (Ctrl-C again to leave without waiting)\n`);
    kill();
  };
  process.on('SIGINT', onSigint);
  try {
    await readStream(first, state, kill, opts.onStarted);
    let deadline = Date.now() + RECONNECT_MS;
    let told = false;
    while (state.result === null && (state.jobId || opts.resubmit) && opts.reconnect !== false && Date.now() < deadline) {
      if (!told) {
        err(`rc: lost the connection to the controller; reconnecting to ${state.jobId ? `job ${state.jobId}` : 'the job it was submitting'}...\n`);
        told = true;
      }
      await new Promise((r) => setTimeout(r, 500));
      const jobId = state.jobId;
      // A resubmit that is refused (not merely unanswered) ends rc with that refusal.
      const res = jobId
        ? await client.stream('GET /api/jobs/:id/stream', { id: jobId, query: { follow: '1', after: state.lastSeq } }).catch(() => null)
        : await opts.resubmit!();
      if (!res) continue;
      // Back on the stream: a later loss (a controller restart, or this client dropped for
      // falling too far behind) is told again and gets its own time to reconnect.
      deadline = Date.now() + RECONNECT_MS;
      told = false;
      await readStream(res, state, kill, opts.onStarted);
    }
  } finally {
    process.off('SIGINT', onSigint);
    setBrokenPipeHook(null);
  }
  if (state.result === null) {
    errorLine(
      'unreachable',
      `lost the connection to the controller${state.jobId ? `; job ${state.jobId} may still be running (rc attach ${state.jobId})` : ''}`,
    );
    return EXIT.unreachable;
  }
  return state.result;
}

interface FollowState {
  jobId: string | null;
  interrupted: boolean;
  lastSeq: number;
  result: number | null;
  /** rc wait: no output and no word on how it ended, only the exit code. */
  quiet: boolean;
  /** --json: events and chunks as JSON lines (cli/json-stream.ts). */
  json: boolean;
  /** Bytes of each stream before the next chunk (--json's `offset`); the stream's `offsets` event sets them for a tail. */
  offsets: { stdout: number; stderr: number };
  /** --json: each stream's UTF-8 decoder, so that a character split between two chunks is given whole. */
  decoders: { stdout: StringDecoder; stderr: StringDecoder } | null;
  /** The submit may be sent again (it has its idempotency key). */
  mayResubmit: boolean;
}

/** A stream `after` this asks for no output at all (rc wait): only the events. */
const NO_OUTPUT = Number.MAX_SAFE_INTEGER;

function readStream(body: Body, state: FollowState, kill: () => void, onStarted?: (jobId: string) => void): Promise<void> {
  return new Promise((resolve) => {
    let queuedNotice: NodeJS.Timeout | null = null;
    const onEvent = (event: JobEvent) => {
      if (state.json && !state.quiet) {
        const line = jsonEventOf(event);
        if (line) jsonLine(line);
      }
      switch (event.type) {
        case 'queued':
          state.jobId = event.jobId;
          if (state.interrupted) kill();
          if (state.quiet || state.json) break;
          queuedNotice = setTimeout(() => {
            err(
              event.waits === 'after'
                ? `rc: job ${event.jobId} waits for the jobs it runs after (--after); rc describe ${event.jobId} shows them\n`
                : `rc: waiting for a device: job ${event.jobId} is queued (${event.position} ahead of it)\n`,
            );
          }, 1000);
          break;
        case 'started':
          if (queuedNotice) clearTimeout(queuedNotice);
          onStarted?.(event.jobId);
          break;
        case 'requeued':
          // Its next attempt comes: this rc keeps following, and exits as that one ends.
          if (state.quiet || state.json) break;
          if (event.retry)
            err(`rc: job ${event.jobId}: retrying: ${retryNotice(event.retry.n, event.retry.of, event.retry.exitCode, event.retry.delayS)} (--retries)\n`);
          else
            err(
              `rc: job ${event.jobId}: attempt ${event.attempt - 1} ended ${event.state}: ${event.reason ?? event.cause}; queued again for attempt ${event.attempt} (it starts over)\n`,
            );
          break;
        case 'exit':
          // Under --json the exit object says how it ended (rc wait --json prints it alone).
          if (state.json && state.quiet) json(jsonEventOf(event));
          state.result = state.quiet || state.json ? exitCodeFor(event, state.interrupted) : exitCodeOf(event, state.interrupted);
          break;
        case 'end':
          state.result = EXIT.ok;
          break;
        case 'notice':
          if (!state.quiet && !state.json) err(`rc: ${event.message}\n`);
          break;
        case 'offsets':
          state.offsets = { stdout: event.stdout, stderr: event.stderr };
          state.lastSeq = Math.max(state.lastSeq, event.after);
          break;
        case 'error':
          // The database stopped mid-stream: the job (named, or to be found again by the submit's key) is followed again (follow).
          if (event.code === 'database_unavailable' && (state.jobId !== null || state.mayResubmit)) {
            err(
              `rc: the controller's database stopped answering; ${state.jobId ? `following job ${state.jobId} again` : 'sending the submit again: the same request, so it runs once'}\n`,
            );
            break;
          }
          errorLine(event.code, event.message);
          state.result = event.code === 'busy' ? EXIT.busy : EXIT.error;
          break;
      }
    };
    const decoder = new FrameDecoder((type, payload) => {
      if (type === FRAME_EVENT) return onEvent(JSON.parse(payload.toString('utf8')) as JobEvent);
      const { seq, data } = splitOutput(payload);
      if (seq <= state.lastSeq || state.quiet) return;
      state.lastSeq = seq;
      if (!state.json) return (type === FRAME_STDOUT ? stdout() : stderr()).write(data);
      const stream = type === FRAME_STDOUT ? 'stdout' : 'stderr';
      state.decoders ??= { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
      jsonLine(outputLine(stream, state.offsets[stream], state.decoders[stream].write(data)));
      state.offsets[stream] += data.length;
    });
    const done = () => {
      if (queuedNotice) clearTimeout(queuedNotice);
      resolve();
    };
    body.consume({ data: (chunk) => decoder.push(chunk), end: done, error: done });
  });
}

declare const RC_STANDALONE: boolean;

/**
 * The terminal client, with socket.io-client. The Node CLI keeps it a separate
 * bundle (dist/rc-tty.cjs) loaded only here, so its usual path stays lean; the
 * standalone CLI has it built in (a compiled executable has no files beside it).
 */
function loadTty(): typeof import('../tty') {
  // The build's constant itself, not build-info's export: esbuild then drops the branch, and socket.io-client with it, from the Node CLI.
  if (typeof RC_STANDALONE === 'boolean' && RC_STANDALONE) return require('../tty') as typeof import('../tty');
  const { join } = require('node:path') as typeof import('node:path');
  return require(join(__dirname, 'rc-tty.cjs')) as typeof import('../tty');
}

/** rc run --tty and rc attach on a terminal. */
function runTtyJob(client: Client, body: TtyRun['open'], jobId?: string): Promise<number> {
  const mod = loadTty();
  // The terminal client writes to both, through its own bundle's copy of output.ts: this run's exit waits for them.
  stdout();
  stderr();
  return mod.runTty({
    controller: client.controller,
    controllers: client.controllers,
    token: client.token,
    open: body,
    jobId,
    exitCodeOf,
    kill: (jobId) => client.call('POST /api/jobs/:id/kill', { id: jobId, body: { submitter: client.submitter } }).then(() => {}),
  });
}

/** rc attach on a running terminal: back to it, its recent screen replayed. */
export function reattachTty(client: Client, jobId: string): Promise<number> {
  return runTtyJob(client, {}, jobId);
}

/** rc's exit code for a job's end (core/job-state.ts decides it from the cause), after saying on stderr how it ended when the command did not end it. */
export function exitCodeOf(event: Extract<JobEvent, { type: 'exit' }>, interrupted: boolean): number {
  const code = exitCodeFor(event, interrupted);
  if (!interrupted) {
    if (event.state === 'killed') err(`rc: job ${event.jobId} was killed: ${event.reason ?? 'no reason given'}\n`);
    else if (event.state === 'lost')
      err(`rc: lost: job ${event.jobId} was lost: ${event.reason ?? 'its worker went away'}; rc devices shows the host's state\n`);
    else if (event.state === 'preempted') err(`rc: preempted: job ${event.jobId} was preempted: ${event.reason ?? 'no reason given'}\n`);
    else if (event.state === 'cancelled' && event.cause === 'no_wait') err(`rc: busy: ${event.reason}\n`);
    else if (event.state === 'cancelled' && event.cause === 'dependency') err(`rc: dependency: job ${event.jobId} was cancelled: ${event.reason ?? ''}\n`);
    else if (event.state === 'cancelled') err(`rc: job ${event.jobId} was cancelled: ${event.reason ?? ''}\n`);
  }
  return code;
}

/** A matching device's state in --explain: who holds it, or who it is held back for. */
function matchText(m: Explanation['matching'][number]): string {
  if (m.holder) return `${m.state} (held by ${m.holder.submitter}, job ${m.holder.jobId})`;
  if (m.reservedFor) return `${m.state} (held back for ${m.reservedFor.submitter}'s job ${m.reservedFor.jobId}: not free for this job)`;
  return m.state;
}

/** --explain: what the selector would match, and why the rest does not; with --gpu, each choice. Submits nothing. */
async function explain(client: Client, selector: string, device: string | null, gpu: string | null, gpus: number, asJson: boolean): Promise<number> {
  const e = await client.call('POST /api/explain', { body: { selector, device, ...(gpu !== null ? { gpu } : { gpus }) } });
  if (asJson) {
    json(e);
    return EXIT.ok;
  }
  // Until when it would wait at the latest, as rc ps and rc describe say it for a queued job (core/until.ts).
  const now = Date.now();
  const until = e.matching.length && e.freesBy !== undefined ? `until: ${untilText(e.freesBy, gpu !== null ? 1 : gpus, now, localClock(now))}\n` : '';
  const what = [e.selector && `selector ${e.selector}`, e.device && `device ${e.device}`].filter(Boolean).join(' and ') || 'no selector (any device)';
  let text = `${what}: ${e.matching.length} device(s) match, ${e.free} free now, ${e.queued} job(s) queued for them\n`;
  if (e.choices) {
    for (const [i, c] of e.choices.entries()) {
      const verdict =
        c.onOneHost < c.count
          ? `can never start: ${c.matching.length ? `no host has ${c.count} of them` : 'no device matches'}`
          : c.freeOnOneHost >= c.count
            ? 'can start now'
            : `waits: ${c.count === 1 ? 'none is free' : `no host has ${c.count} free`}`;
      text += `choice ${i + 1}, ${c.choice} (${c.by === 'family' ? 'family' : 'exact model'}: ${c.term}): ${c.matching.length} device(s) match, ${c.free} free now, ${c.queued} job(s) queued for them; ${verdict}\n`;
      for (const m of c.matching) text += `  match  ${m.name}  ${m.gpuModel ?? '-'}  ${matchText(m)}\n`;
      for (const h of c.hostsOff ?? []) text += `  ${hostOffText(h)}\n`;
    }
    if (e.hint) text += `${e.hint}\n`;
    const first = e.choices.find((c) => c.freeOnOneHost >= c.count);
    if (e.choices.some((c) => c.onOneHost < c.count)) text += `rc run would be refused with no_matching_device: drop the choices that can never start.\n`;
    else text += first ? `rc run would start on ${first.choice} now.\n` : `rc run would wait, and start on whichever choice frees first.\n`;
    out(text + until);
    return EXIT.ok;
  }
  for (const m of e.matching) text += `  match  ${m.name}  ${matchText(m)}\n`;
  for (const n of e.notMatching) text += `  no     ${n.name}  ${n.reasons.join('; ')}\n`;
  for (const h of e.hostsOff ?? []) text += `${hostOffText(h)}\n`;
  if (e.matching.length === 0) text += `nothing matches: rc run would be refused with no_matching_device. Widen the selector.\n`;
  if (e.hint) text += `${e.hint}\n`;
  out(text + until);
  return EXIT.ok;
}
