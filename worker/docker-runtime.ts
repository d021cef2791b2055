// Runs jobs in Docker: one long-lived container per device (its GPU attached,
// the shared workspace mounted at /workspace, /scratch, /shared and /secrets:
// docker-containers.ts, job-mounts.ts), jobs
// started in it with `docker exec` (docker-exec.ts). What a job installs
// outside /workspace stays for the next job until the container is
// recreated. Jobs on several GPUs get a one-off `docker run --rm` container
// holding all of them. A device container runs one job at a time, so a kill,
// and the clean-up after a job's exit, take every process in it but its own
// init and keep-alive (docker-signal.ts). A job's --env values never go on
// the docker client's command line (docker-env.ts).
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { StartJob } from '../protocol/worker';
import { dockerGpusValue } from '../core/gpus';
import { dockerCall } from './docker-cli';
import { CAP_DROP, CONTAINER_WORKSPACE, containerName, DeviceContainers, EMPTY_SCRATCH, gpusFor, jobContainerName, mountArgs } from './docker-containers';
import { JobProcess } from './docker-exec';
import { DOCKER_FAILED, translateExecError, translateRunError } from './docker-exec-errors';
import { containerTree, oneOffTree } from './docker-signal';
import { clientEnv, dockerEnv } from './docker-env';
import { CONTAINER_SCRATCH, CONTAINER_SECRETS, CONTAINER_SHARED, type JobMounts, type JobPaths } from './job-mounts';
import type { DeviceProblem, JobCallbacks, PreviousJob, Reclaimed, RunningJob, RunningTty, Runtime, RuntimeDevice, TtyCallbacks } from './runtime';
import { LOGIN_SHELL } from '../protocol/tty';
import { MAX_VALUE_LENGTH } from './probes/parse';
import { PtyJob } from './tty';

export interface DockerRuntimeOptions {
  /** The host's name in rc: part of container names and the rc.host label. */
  host: string;
  image: string;
  /** Host folder mounted at /workspace in every container. */
  workspace: string;
  /** The scratch, shared and secrets folders mounted in every container. */
  mounts: JobMounts;
  /** The docker CLI; 'docker' by default. */
  docker?: string;
  log?: (msg: string) => void;
  /** Signal job processes from the host's /proc when it can see them (default); false: always through docker exec. */
  signalFromHost?: boolean;
}

export class DockerRuntime implements Runtime {
  readonly jobWorkspace = CONTAINER_WORKSPACE;
  readonly name = 'docker' as const;
  /** runtime and image; image_base and image_contents from the image's rc.base and rc.contents labels once reclaim has read them. */
  readonly labels: { key: string; value: string }[];
  private readonly docker: string;
  private readonly workspace: string;
  private readonly log: (msg: string) => void;
  private readonly containers: DeviceContainers;

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.docker = opts.docker ?? 'docker';
    this.workspace = resolve(opts.workspace);
    this.log = opts.log ?? (() => {});
    this.containers = new DeviceContainers({
      host: opts.host,
      image: opts.image,
      workspace: this.workspace,
      mounts: opts.mounts,
      docker: this.docker,
      log: this.log,
      signalFromHost: opts.signalFromHost,
    });
    this.labels = [
      { key: 'runtime', value: 'docker' },
      { key: 'image', value: opts.image },
    ];
  }

  /**
   * Before hello: the one-off job containers of a previous worker run are
   * removed, and every job process left in this host's device containers is
   * killed (no job of this run has started yet). The containers themselves
   * stay, to be adopted by prepare. Only this host's containers: another
   * worker on the machine has its own.
   */
  async reclaim(_previous: PreviousJob[]): Promise<Reclaimed> {
    // Before the hello too, so that the first inventory has them: what the image says it is.
    this.labels.push(...(await this.imageLabels()));
    const removed = await this.containers.removeJobContainers();
    const r = await dockerCall(this.docker, ['ps', '--filter', `label=rc.host=${this.opts.host}`, '--filter', 'label=rc.device', '--format', '{{.Names}}'], {
      timeoutMs: 20_000,
    });
    const names = r.ok ? r.stdout.split('\n').filter(Boolean) : [];
    let killed = 0;
    let jobs = removed;
    for (const name of names) {
      const n = await this.containers.sweep(name, 'KILL');
      if (n > 0) this.log(`killed ${n} process(es) left over from earlier jobs in ${name}`);
      killed += n;
      if (n > 0) jobs += 1;
    }
    // Their scratch too: a device's scratch the host cannot empty is emptied from inside its container.
    for (const n of await this.opts.mounts.wipeLeftovers()) {
      const wiped = n.device !== null && names.includes(containerName(this.opts.host, n.device)) && (await this.emptyInContainer(n.device));
      if (!wiped) this.log(`cannot wipe ${n.dir}, left by the previous run: ${n.reason}`);
    }
    return { killed, jobs, unkillable: [] };
  }

  /**
   * After a job: a one-off container's scratch goes; a device container's is
   * emptied. Files a job made as root are the host's root's: a worker that
   * is not root cannot remove them and empties the folder from inside a
   * container instead. A device scratch still not empty is the device's
   * problem (the next job there would see it).
   */
  async cleanUp(order: StartJob): Promise<DeviceProblem[]> {
    if (order.devices.length > 1) {
      const dir = this.opts.mounts.jobScratch(order.jobId);
      const left = await this.opts.mounts.wipeJob(order.jobId);
      if (left.length === 0) return [];
      const r = await dockerCall(this.docker, [
        'run',
        '--rm',
        '--pull',
        'never',
        '-u',
        '0:0',
        '-v',
        `${dir}:${CONTAINER_SCRATCH}`,
        this.opts.image,
        ...EMPTY_SCRATCH,
      ]);
      const again = r.ok ? await this.opts.mounts.wipeJob(order.jobId) : left;
      for (const n of again) this.log(`job ${order.jobId}: cannot wipe ${n.dir}: ${n.reason}${r.ok ? '' : ` (nor from a container: ${r.error})`}`);
      return [];
    }
    const index = order.devices[0]?.index;
    if (index === undefined) return [];
    const left = await this.opts.mounts.emptyDevice(index);
    if (!left || (await this.emptyInContainer(index))) return [];
    return [
      {
        index,
        reason: `the scratch of job ${order.jobId} (${left.dir}) could not be wiped: ${left.reason}`,
        evidence: { jobId: order.jobId, dir: left.dir, error: left.reason },
      },
    ];
  }

  /** Empties device N's /scratch from inside its container; true when it is empty then. */
  private async emptyInContainer(index: number): Promise<boolean> {
    const name = containerName(this.opts.host, index);
    const r = await dockerCall(this.docker, ['exec', '-u', '0:0', name, ...EMPTY_SCRATCH]);
    if (!r.ok) this.log(`cannot empty ${CONTAINER_SCRATCH} in ${name}: ${r.error}`);
    return r.ok && (await this.opts.mounts.emptyDevice(index)) === null;
  }

  /** A one-off container's scratch, made by the worker (docker would make it root's); rc's line for the job when it cannot be. */
  private makeJobScratch(order: StartJob): string | null {
    try {
      this.opts.mounts.make(this.opts.mounts.jobScratch(order.jobId));
      return null;
    } catch (err) {
      return `rc: cannot make the job's scratch folder on this host: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`;
    }
  }

  /**
   * The image's own description (the stock image's labels: docker/worker-image):
   * image_base (e.g. "ubuntu 24.04 (noble)") and image_contents (its packages).
   * None for an image without them, or one not here yet.
   */
  private async imageLabels(): Promise<{ key: string; value: string }[]> {
    const r = await dockerCall(this.docker, ['image', 'inspect', '-f', '{{json .Config.Labels}}', this.opts.image], { timeoutMs: 20_000 });
    if (!r.ok) return [];
    let labels: unknown;
    try {
      labels = JSON.parse(r.stdout);
    } catch {
      return [];
    }
    const get = (k: string) => {
      const v = labels && typeof labels === 'object' ? (labels as Record<string, unknown>)[k] : undefined;
      return typeof v === 'string' && v.trim() ? v.trim().slice(0, MAX_VALUE_LENGTH) : null;
    };
    const out: { key: string; value: string }[] = [];
    const base = get('rc.base');
    const contents = get('rc.contents');
    if (base) out.push({ key: 'image_base', value: base });
    if (contents) out.push({ key: 'image_contents', value: contents });
    return out;
  }

  /** What a job is told in RC_WORKSPACE, RC_SCRATCH, RC_SHARED and RC_SECRETS: the paths in its container. */
  private containerPaths(): JobPaths {
    const { shared, secrets } = this.opts.mounts.dirs;
    return { workspace: CONTAINER_WORKSPACE, scratch: CONTAINER_SCRATCH, shared: shared && CONTAINER_SHARED, secrets: secrets && CONTAINER_SECRETS };
  }

  async prepare(devices: RuntimeDevice[]): Promise<DeviceProblem[]> {
    try {
      mkdirSync(this.workspace, { recursive: true });
    } catch {
      // docker reports it below, per device, if the folder is really unusable.
    }
    const results = await Promise.all(devices.map((d) => this.containers.ensure(d, true)));
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
   * under node-pty. Killing takes every job process in the container, as for other jobs.
   */
  runTty(order: StartJob, cb: TtyCallbacks, problem: (p: DeviceProblem) => void): RunningTty {
    const job = new PtyJob(cb);
    const cwd = order.cwd ?? CONTAINER_WORKSPACE;
    const argv = order.argv.length ? order.argv : LOGIN_SHELL;
    const jobVars = dockerEnv(order, this.containerPaths());
    const base = { file: this.docker, env: clientEnv(jobVars), cols: order.tty?.cols ?? 80, rows: order.tty?.rows ?? 24 };
    const envArgs = [...jobVars.args, '-e', 'TERM=xterm-256color'];
    if (order.devices.length > 1) {
      const name = jobContainerName(this.opts.host, order.jobId);
      const gpus = gpusFor(order.devices);
      if (!gpus.ok) {
        job.failAtOnce(DOCKER_FAILED, `rc: cannot run the job: ${gpus.reason}\n`);
        return job;
      }
      const unmade = this.makeJobScratch(order);
      if (unmade) {
        job.failAtOnce(DOCKER_FAILED, unmade);
        return job;
      }
      job.start({ ...base, args: this.oneOffArgs(order, gpus.arg, ['-it'], envArgs, argv), tree: oneOffTree(this.docker, name) });
      return job;
    }
    const name = containerName(this.opts.host, order.devices[0]?.index ?? 0);
    const start = async () => {
      if (!(await this.readyFor(order, problem, (message) => job.failAtOnce(DOCKER_FAILED, message)))) return;
      job.start({ ...base, args: ['exec', '-it', '-u', '0:0', '-w', cwd, ...envArgs, name, ...argv], tree: containerTree(this.containers, name) });
    };
    void start();
    return job;
  }

  // ---- jobs ----------------------------------------------------------------

  /** The job's device container is up (made or remade if need be); false after failing the job and reporting the device. */
  private async readyFor(order: StartJob, problem: (p: DeviceProblem) => void, failJob: (message: string) => void): Promise<boolean> {
    const device = order.devices[0];
    if (!device) {
      failJob('rc: the job has no device to run on\n');
      return false;
    }
    const ensured = await this.containers.ensure(device, false);
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
      const env = dockerEnv(order, this.containerPaths());
      job.start(this.docker, ['exec', ...(order.stdin ? ['-i'] : []), '-u', '0:0', '-w', cwd, ...env.args, name, ...order.argv], {
        env: clientEnv(env),
        stdin: order.stdin === true,
        translate: (held, code) => translateExecError(held, code, cwd, order.argv[0] ?? '', name),
        tree: containerTree(this.containers, name),
      });
    };
    void start();
    return {
      kill: (graceS) => job.kill(graceS),
      get stdin() {
        return job.stdin;
      },
    };
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
      ...CAP_DROP,
      '--name',
      jobContainerName(this.opts.host, order.jobId),
      '--label',
      `rc.host=${this.opts.host}`,
      '--label',
      `rc.job=${order.jobId}`,
      ...mountArgs(this.workspace, this.opts.mounts.jobScratch(order.jobId), this.opts.mounts),
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
    const gpus = gpusFor(order.devices);
    if (!gpus.ok) {
      job.failAtOnce(DOCKER_FAILED, `rc: cannot run the job: ${gpus.reason}\n`);
      return { kill() {} };
    }
    const unmade = this.makeJobScratch(order);
    if (unmade) {
      job.failAtOnce(DOCKER_FAILED, unmade);
      return { kill() {} };
    }
    const env = dockerEnv(order, this.containerPaths());
    job.start(this.docker, this.oneOffArgs(order, gpus.arg, [], env.args, order.argv), {
      env: clientEnv(env),
      translate: (held) => translateRunError(held, order.argv[0] ?? '', this.opts.image),
      // --rm: the container, and every process in it, is gone with the job.
      tree: oneOffTree(this.docker, name),
    });
    return { kill: (graceS) => job.kill(graceS) };
  }
}
