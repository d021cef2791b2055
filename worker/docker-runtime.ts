// Runs jobs in Docker: one long-lived container per device (its GPU attached,
// the shared workspace mounted at /workspace), jobs started in it with
// `docker exec`. What a job installs outside /workspace stays for the next job
// until the container is recreated. Jobs on several GPUs get a one-off
// `docker run --rm` container holding all of them.
//
// Killing: killing the `docker exec` client does not kill anything inside the
// container, so every job process carries RC_JOB_ID in its environment and a
// small sh script run in the container signals the processes that have it.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { StartJob } from '../protocol/worker';
import { dockerGpusValue, normalizeGpuSpec } from '../core/gpus';
import { dockerCall, dockerError } from './docker-cli';
import { jobEnv } from './host-runtime';
import { containerNamespace, signalJobOnHost } from './proc-signal';
import type { DeviceProblem, JobCallbacks, PreviousJob, ProcessTree, Reclaimed, RunningJob, RunningTty, Runtime, RuntimeDevice, TtyCallbacks } from './runtime';
import { LOGIN_SHELL } from '../protocol/tty';
import { JobLife } from './supervise';
import { PtyJob } from './tty';

export interface DockerRuntimeOptions {
  /** The host's name in rc: part of container names and the rc.host label. */
  host: string;
  image: string;
  /** Host folder mounted at /workspace in every container. */
  workspace: string;
  /** The docker CLI; 'docker' by default. */
  docker?: string;
  log?: (msg: string) => void;
  /** Signal job processes from the host's /proc when it can see them (default); false: always through docker exec. */
  signalFromHost?: boolean;
}

export const CONTAINER_WORKSPACE = '/workspace';
/** PID 1's child: does nothing, forever, in busybox and Ubuntu alike. */
const KEEP_ALIVE = ['tail', '-f', '/dev/null'];
/** Exit code of a job that could not be started because of Docker (docker's own code for that). */
export const DOCKER_FAILED = 125;
// Creating a container may pull its image.
const CREATE_TIMEOUT_MS = 30 * 60_000;
// How long to wait for a finished job's pipes once its processes are gone.
const PIPE_GRACE_MS = 1000;

/**
 * Signals every process in the container whose environment has
 * RC_JOB_ID=<id> (any RC_JOB_ID when id is empty), except itself. POSIX sh
 * only: runs under busybox sh and dash. The matches are stopped before they
 * are signalled, so that a parent cannot see its children die and exit 0
 * before its own signal comes. With KILL it goes round again while it finds
 * some, since a dying tree may still fork. Prints how many it hit.
 */
export const SIGNAL_SCRIPT = `sig=$1 id=$2 me=$$ round=0 n=0
while :; do
  pids=
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$me" ] && continue
    if [ -n "$id" ]; then
      tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -qxF "RC_JOB_ID=$id" || continue
    else
      tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -q '^RC_JOB_ID=' || continue
    fi
    pids="$pids $p"
  done
  [ -z "$pids" ] && break
  set -- $pids
  [ "$round" = 0 ] && n=$#
  if [ "$sig" = KILL ]; then
    kill -s KILL "$@" 2>/dev/null
  else
    kill -s STOP "$@" 2>/dev/null; kill -s "$sig" "$@" 2>/dev/null; kill -s CONT "$@" 2>/dev/null
    break
  fi
  round=$((round+1))
  [ "$round" -ge 10 ] && break
done
echo "$n"`;

/** Docker names allow [a-zA-Z0-9_.-]; anything else in a host name or job id becomes '-'. */
function nameSafe(s: string): string {
  return s.replace(/[^a-zA-Z0-9_.-]/g, '-');
}

export function containerName(host: string, index: number): string {
  return `rc-${nameSafe(host)}-gpu${index}`;
}

export function jobContainerName(host: string, jobId: string): string {
  return `rc-${nameSafe(host)}-job-${nameSafe(jobId)}`;
}

/** Short hash of what the container is made from: a container with another one is recreated. */
export function specHash(image: string, gpusArg: string | null, workspace: string): string {
  const text = JSON.stringify({ image, gpus: gpusArg, workspace, mount: CONTAINER_WORKSPACE });
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

type Ensured = { ok: true; name: string } | { ok: false; problem: DeviceProblem };

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  readonly labels: { key: string; value: string }[];
  private readonly docker: string;
  private readonly workspace: string;
  private readonly log: (msg: string) => void;
  /** One container operation at a time per device. */
  private readonly locks = new Map<number, Promise<unknown>>();
  /**
   * Per device container, when this worker can see its processes in the host's
   * /proc: its init's pid and pid namespace, and the spec it was made from.
   * Signals go through it, and it tells cheaply that the container is still up.
   */
  private readonly hostView = new Map<string, { pid: number; ns: string; spec: string } | null>();

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.docker = opts.docker ?? 'docker';
    this.workspace = resolve(opts.workspace);
    this.log = opts.log ?? (() => {});
    this.labels = [
      { key: 'runtime', value: 'docker' },
      { key: 'image', value: opts.image },
    ];
  }

  /**
   * Before hello: the one-off job containers of a previous worker run are
   * removed, and every job process left in this host's device containers is
   * killed (any RC_JOB_ID: no job of this run has started yet). The
   * containers themselves stay, to be adopted by prepare.
   */
  async reclaim(_previous: PreviousJob[]): Promise<Reclaimed> {
    const removed = await this.removeJobContainers();
    const r = await dockerCall(this.docker, ['ps', '--filter', `label=rc.host=${this.opts.host}`, '--filter', 'label=rc.device', '--format', '{{.Names}}'], {
      timeoutMs: 20_000,
    });
    const names = r.ok ? r.stdout.split('\n').filter(Boolean) : [];
    let killed = 0;
    let jobs = removed;
    for (const name of names) {
      const n = await this.signalTagged(name, 'KILL', '');
      if (n > 0) this.log(`killed ${n} process(es) left over from earlier jobs in ${name}`);
      killed += n;
      if (n > 0) jobs += 1;
    }
    return { killed, jobs, unkillable: [] };
  }

  async prepare(devices: RuntimeDevice[]): Promise<DeviceProblem[]> {
    try {
      mkdirSync(this.workspace, { recursive: true });
    } catch {
      // docker reports it below, per device, if the folder is really unusable.
    }
    const results = await Promise.all(devices.map((d) => this.ensure(d, true)));
    return results.flatMap((r) => (r.ok ? [] : [r.problem]));
  }

  jobCgroup(): null {
    return null;
  }
  close(): void {}

  run(order: StartJob, cb: JobCallbacks, problem: (p: DeviceProblem) => void): RunningJob {
    return order.devices.length > 1 ? this.runOneOff(order, cb) : this.runInDeviceContainer(order, cb, problem);
  }

  /**
   * A terminal job: `docker exec -it` (or, on several GPUs, `docker run --rm -it`)
   * under node-pty. Killing goes through the RC_JOB_ID tag, as for other jobs.
   */
  runTty(order: StartJob, cb: TtyCallbacks, problem: (p: DeviceProblem) => void): RunningTty {
    const job = new PtyJob(cb);
    const cwd = order.cwd ?? CONTAINER_WORKSPACE;
    const argv = order.argv.length ? order.argv : LOGIN_SHELL;
    const base = { file: this.docker, env: process.env as Record<string, string>, cols: order.tty?.cols ?? 80, rows: order.tty?.rows ?? 24 };
    const envArgs = [...this.envArgs(order), '-e', 'TERM=xterm-256color'];
    if (order.devices.length > 1) {
      const name = jobContainerName(this.opts.host, order.jobId);
      const gpus = this.gpusFor(order.devices);
      if (!gpus.ok) {
        job.failAtOnce(DOCKER_FAILED, `rc: cannot run the job: ${gpus.reason}\n`);
        return job;
      }
      job.start({ ...base, args: this.oneOffArgs(order, gpus.arg, ['-it'], envArgs, argv), tree: this.oneOffTree(name) });
      return job;
    }
    const name = containerName(this.opts.host, order.devices[0]?.index ?? 0);
    const start = async () => {
      if (!(await this.readyFor(order, problem, (message) => job.failAtOnce(DOCKER_FAILED, message)))) return;
      job.start({ ...base, args: ['exec', '-it', '-u', '0:0', '-w', cwd, ...envArgs, name, ...argv], tree: this.taggedTree(name, order.jobId) });
    };
    void start();
    return job;
  }

  // ---- containers --------------------------------------------------------

  private withLock<T>(index: number, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(index) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    this.locks.set(
      index,
      next.catch(() => {}),
    );
    return next;
  }

  /**
   * The device's container, running and made from the current spec: adopted
   * if it is, (re)created if not (`adopting`: prepare, which says so in the log;
   * what a previous worker run's jobs left in it was killed by reclaim).
   */
  private ensure(device: RuntimeDevice, adopting: boolean): Promise<Ensured> {
    return this.withLock(device.index, async () => {
      const name = containerName(this.opts.host, device.index);
      const gpus = this.gpusFor([device]);
      if (!gpus.ok) return { ok: false, problem: this.problem(device.index, name, gpus.reason) };
      const spec = specHash(this.opts.image, gpus.arg, this.workspace);
      // Still the same init in the same namespace: the container is up as we made it, no `docker inspect` (about 20 ms) needed.
      const seen = this.hostView.get(name);
      if (!adopting && seen && seen.spec === spec && containerNamespace(seen.pid) === seen.ns) return { ok: true, name };
      const state = await this.inspect(name);
      if (state?.running && state.spec === spec) {
        this.hostView.set(name, this.viewOf(state.pid, spec));
        if (adopting) this.log(`device ${device.index}: adopted the running container ${name} (${state.id.slice(0, 12)})`);
        return { ok: true, name };
      }
      if (state) {
        const why = state.running ? 'its spec changed' : 'it is not running';
        this.log(`device ${device.index}: recreating the container ${name}: ${why}`);
        const rm = await dockerCall(this.docker, ['rm', '-f', name]);
        if (!rm.ok && !/No such container/i.test(rm.stderr)) {
          return { ok: false, problem: this.problem(device.index, name, `cannot remove the old container ${name}: ${rm.error}`, rm.error) };
        }
      }
      const args = [
        'run',
        '-d',
        '--init',
        '--network',
        'host',
        '--ipc',
        'host',
        '--name',
        name,
        '--label',
        `rc.host=${this.opts.host}`,
        '--label',
        `rc.device=${device.index}`,
        '--label',
        `rc.spec=${spec}`,
        '-v',
        `${this.workspace}:${CONTAINER_WORKSPACE}`,
        ...(gpus.arg ? ['--gpus', dockerGpusValue(gpus.arg)] : []),
        this.opts.image,
        ...KEEP_ALIVE,
      ];
      const created = await dockerCall(this.docker, args, { timeoutMs: CREATE_TIMEOUT_MS });
      if (!created.ok) {
        // A half-made container (created, failed to start) would only be in the way.
        await dockerCall(this.docker, ['rm', '-f', name]);
        const present = (await dockerCall(this.docker, ['image', 'inspect', '-f', '{{.Id}}', this.opts.image])).ok;
        const why = present ? '' : ` (the image is not on this host and could not be pulled)`;
        return {
          ok: false,
          problem: this.problem(
            device.index,
            name,
            `cannot create the container ${name} from the image ${this.opts.image}${why}: ${created.error}`,
            created.error,
          ),
        };
      }
      this.log(`device ${device.index}: started the container ${name} (${created.stdout.trim().slice(0, 12)}) from ${this.opts.image}`);
      const made = await this.inspect(name);
      this.hostView.set(name, this.viewOf(made?.pid ?? 0, spec));
      return { ok: true, name };
    });
  }

  /** The --gpus value for these devices (null: attach none). Devices with no UUID are CPU slots. */
  private gpusFor(devices: { uuid: string | null }[]): { ok: true; arg: string | null } | { ok: false; reason: string } {
    const uuids = devices.flatMap((d) => (d.uuid ? [d.uuid] : []));
    if (uuids.length === 0) return { ok: true, arg: null };
    const spec = normalizeGpuSpec(uuids.join(','));
    return spec.ok ? spec : { ok: false, reason: `cannot attach the GPU(s) ${uuids.join(', ')}: ${spec.reason}` };
  }

  private problem(index: number, container: string, reason: string, error = reason): DeviceProblem {
    return { index, reason, evidence: { container, image: this.opts.image, error } };
  }

  private async inspect(name: string): Promise<{ id: string; running: boolean; spec: string; pid: number } | null> {
    const r = await dockerCall(this.docker, [
      'inspect',
      '--type',
      'container',
      '-f',
      '{{.Id}} {{.State.Running}} {{.State.Pid}} {{index .Config.Labels "rc.spec"}}',
      name,
    ]);
    if (!r.ok) return null;
    const [id = '', running = '', pid = '0', spec = ''] = r.stdout.trim().split(' ');
    return { id, running: running === 'true', spec, pid: Number(pid) || 0 };
  }

  private viewOf(initPid: number, spec: string): { pid: number; ns: string; spec: string } | null {
    const ns = this.opts.signalFromHost !== false && initPid > 0 ? containerNamespace(initPid) : null;
    return ns ? { pid: initPid, ns, spec } : null;
  }

  /** Signals the processes tagged with the job id (any job when ''); resolves to how many it hit. */
  private async signalTagged(container: string, sig: 'TERM' | 'KILL', jobId: string): Promise<number> {
    // From the host when it can see the container's processes; otherwise inside, through docker exec.
    const ns = jobId ? this.hostView.get(container)?.ns : null;
    // A container removed behind our back has no processes left in its namespace: nothing to find, nothing to kill.
    if (ns) return signalJobOnHost(ns, jobId, sig);
    const r = await dockerCall(this.docker, ['exec', '-u', '0:0', container, 'sh', '-c', SIGNAL_SCRIPT, 'sh', sig, jobId]);
    if (!r.ok) this.log(`cannot signal ${jobId ? `job ${jobId}` : 'leftover jobs'} in ${container}: ${r.error}`);
    return Number(r.stdout.trim()) || 0;
  }

  /** One-off job containers a previous worker run left behind; resolves to how many. */
  private async removeJobContainers(): Promise<number> {
    const r = await dockerCall(this.docker, ['ps', '-aq', '--filter', `label=rc.host=${this.opts.host}`, '--filter', 'label=rc.job']);
    const ids = r.ok ? r.stdout.split('\n').filter(Boolean) : [];
    if (ids.length === 0) return 0;
    this.log(`removing ${ids.length} job container(s) left over from earlier jobs`);
    await dockerCall(this.docker, ['rm', '-f', ...ids]);
    return ids.length;
  }

  /** A job in a device container: its processes are those tagged with its RC_JOB_ID; nothing of a finished job may stay. */
  private taggedTree(container: string, jobId: string): ProcessTree {
    return {
      signal: (sig) => this.signalTagged(container, sig, jobId).then(() => {}),
      reap: () => this.signalTagged(container, 'KILL', jobId).then(() => []),
    };
  }

  /** A one-off container (docker run --rm): signalled through docker; its processes go with it. */
  private oneOffTree(name: string): ProcessTree {
    return {
      signal: async (sig) => {
        await dockerCall(this.docker, sig === 'TERM' ? ['kill', '-s', 'TERM', name] : ['kill', name]);
      },
      reap: () => Promise.resolve([]),
    };
  }

  private envArgs(order: StartJob): string[] {
    // PATH, HOME and the like come from the image, not from the worker's host.
    return Object.entries(jobEnv(order, {} as NodeJS.ProcessEnv)).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  }

  // ---- jobs ----------------------------------------------------------------

  /** The job's device container is up (made or remade if need be); false after failing the job and reporting the device. */
  private async readyFor(order: StartJob, problem: (p: DeviceProblem) => void, failJob: (message: string) => void): Promise<boolean> {
    const device = order.devices[0];
    if (!device) {
      failJob('rc: the job has no device to run on\n');
      return false;
    }
    const ensured = await this.ensure(device, false);
    if (ensured.ok) return true;
    problem(ensured.problem);
    failJob(`rc: cannot run the job: ${ensured.problem.reason}\n`);
    return false;
  }

  private runInDeviceContainer(order: StartJob, cb: JobCallbacks, problem: (p: DeviceProblem) => void): RunningJob {
    const cwd = order.cwd ?? CONTAINER_WORKSPACE;
    const job = new JobProcess(cb);
    const name = containerName(this.opts.host, order.devices[0]?.index ?? 0);
    const start = async () => {
      if (!(await this.readyFor(order, problem, (message) => job.failAtOnce(DOCKER_FAILED, message)))) return;
      job.start(this.docker, ['exec', '-u', '0:0', '-w', cwd, ...this.envArgs(order), name, ...order.argv], {
        translate: (held, code) => translateExecError(held, code, cwd, order.argv[0] ?? '', name),
        tree: this.taggedTree(name, order.jobId),
      });
    };
    void start();
    return { kill: (graceS) => job.kill(graceS) };
  }

  /** `docker run` of a one-off container holding all the job's GPUs (jobs on several devices). */
  private oneOffArgs(order: StartJob, gpusArg: string | null, extra: string[], envArgs: string[], argv: string[]): string[] {
    return [
      // The image was pulled (if it could be) when the device containers were made.
      'run',
      '--rm',
      ...extra,
      '--pull',
      'never',
      '--init',
      '--network',
      'host',
      '--ipc',
      'host',
      '--name',
      jobContainerName(this.opts.host, order.jobId),
      '--label',
      `rc.host=${this.opts.host}`,
      '--label',
      `rc.job=${order.jobId}`,
      '-v',
      `${this.workspace}:${CONTAINER_WORKSPACE}`,
      ...(gpusArg ? ['--gpus', dockerGpusValue(gpusArg)] : []),
      '-u',
      '0:0',
      '-w',
      order.cwd ?? CONTAINER_WORKSPACE,
      ...envArgs,
      this.opts.image,
      ...argv,
    ];
  }

  private runOneOff(order: StartJob, cb: JobCallbacks): RunningJob {
    const job = new JobProcess(cb);
    const name = jobContainerName(this.opts.host, order.jobId);
    const gpus = this.gpusFor(order.devices);
    if (!gpus.ok) {
      job.failAtOnce(DOCKER_FAILED, `rc: cannot run the job: ${gpus.reason}\n`);
      return { kill() {} };
    }
    job.start(this.docker, this.oneOffArgs(order, gpus.arg, [], this.envArgs(order), order.argv), {
      translate: (held) =>
        /FATAL tini.*exec .* failed: No such file/.test(held)
          ? `rc: ${order.argv[0] ?? ''}: command not found in the image ${this.opts.image}\n`
          : `rc: cannot run the job in a container: ${dockerError(held)}\n`,
      // --rm: the container, and every process in it, is gone with the job.
      tree: this.oneOffTree(name),
    });
    return { kill: (graceS) => job.kill(graceS) };
  }
}

interface StartOptions {
  /** Docker's own error (held back from the job's stderr) as the line to show instead. */
  translate(held: string, code: number | null): string | { line: string; code: number };
  /** The job's processes: signalled on a kill, reaped after the client exits and before cb.exit. */
  tree: ProcessTree;
}

// Docker's own errors, as opposed to the job's output: held back so they can
// be shown as one readable line.
const HOLD_MAX = 4096;
const DOCKER_ERROR = /^(OCI runtime exec failed|Error response from daemon|docker: Error response from daemon|\[FATAL tini)/;

/** One `docker exec`/`docker run` client: its streams, with docker's own errors told as rc's; its life (kill with grace, the end once) is a JobLife. */
class JobProcess {
  private readonly life: JobLife;
  /** Output that looks like docker's own error, held until the exit code says whose it was. */
  private held: { stream: 1 | 2; data: Buffer }[] = [];
  private translate: StartOptions['translate'] | null = null;

  constructor(private readonly cb: JobCallbacks) {
    this.life = new JobLife({ say: (message) => cb.output(2, Buffer.from(message)), end: (code, signal) => this.end(code, signal) });
  }

  failAtOnce(code: number, message: string): void {
    this.life.failAtOnce(code, message);
  }

  kill(graceS: number): void {
    this.life.kill(graceS);
  }

  start(docker: string, args: string[], opts: StartOptions): void {
    const cut = () => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    // Something outside the sweep may still hold the pipes: the end does not wait long for them.
    // If docker itself hangs after the KILL, at least the client is let go.
    const started = this.life.start({ tree: opts.tree, drain: { ms: PIPE_GRACE_MS, cut }, hung: { ms: 10_000, fn: () => child.kill('SIGKILL') } });
    // Killed while its container was being made: it never runs.
    if (!started) return;
    this.translate = opts.translate;
    const child: ChildProcessByStdio<null, Readable, Readable> = spawn(docker, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let anyOutput = false;
    let heldBytes = 0;
    // docker prints its own exec failures on stdout (OCI errors) or stderr.
    const onData = (stream: 1 | 2, d: Buffer) => {
      if (this.held.length > 0 || (!anyOutput && DOCKER_ERROR.test(d.toString('utf8')))) {
        this.held.push({ stream, data: d });
        heldBytes += d.length;
        // Docker's errors are short: this much is the job's own output after all.
        if (heldBytes <= HOLD_MAX) return;
        this.release();
      }
      anyOutput = true;
      this.cb.output(stream, d);
    };
    child.stdout.on('data', (d: Buffer) => onData(1, d));
    child.stderr.on('data', (d: Buffer) => onData(2, d));
    child.on('close', () => this.life.closed());
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return;
      const why = err.code === 'ENOENT' ? `the docker CLI (${docker}) is not installed or not on PATH` : err.message;
      this.life.spawnFailed(DOCKER_FAILED, `rc: cannot run the job: ${why}\n`);
    });
    child.on('exit', (code, signal) => this.life.exited(code, signal));
  }

  private release(): void {
    for (const h of this.held) this.cb.output(h.stream, h.data);
    this.held = [];
  }

  /** The client and the job's processes are gone: docker's own error, if it held one, becomes rc's line. */
  private end(code: number | null, signal: NodeJS.Signals | null): void {
    let finalCode = code;
    const text = Buffer.concat(this.held.map((h) => h.data)).toString('utf8');
    // docker's failures end in 125 (docker), 126/127 (the command), or 1 (a daemon error).
    if (this.translate && this.held.length > 0 && code !== null && (code >= 125 || (code === 1 && /Error response from daemon/.test(text)))) {
      const t = this.translate(text, code);
      const line = typeof t === 'string' ? t : t.line;
      if (typeof t !== 'string') finalCode = t.code;
      this.held = [];
      this.cb.output(2, Buffer.from(line));
    } else {
      this.release();
    }
    this.cb.exit(finalCode, signal);
  }
}

/** `docker exec`'s own failure (no such cwd, no such command) as one line, with rc's exit code. */
export function translateExecError(held: string, code: number | null, cwd: string, command: string, container: string): { line: string; code: number } {
  const text = held.replace(/\s+/g, ' ').trim();
  if (/chdir to cwd/i.test(text)) {
    return { line: `rc: the working directory ${cwd} does not exist in the container ${container}\n`, code: 126 };
  }
  if (/executable file not found|exec: .*no such file or directory/i.test(text)) {
    return { line: `rc: ${command}: command not found in the container ${container}\n`, code: 127 };
  }
  if (/permission denied/i.test(text)) {
    return { line: `rc: ${command}: permission denied in the container ${container}\n`, code: 126 };
  }
  if (/is not running|No such container/i.test(text)) {
    return { line: `rc: the container ${container} stopped before the job could start in it\n`, code: DOCKER_FAILED };
  }
  const why = text.replace(/^OCI runtime exec failed: (exec failed: )?(unable to start container process: )?/i, '').replace(/: unknown$/, '');
  return { line: `rc: cannot start ${command} in the container ${container}: ${why}\n`, code: code ?? DOCKER_FAILED };
}
