// The device containers of the docker runtime: one long-lived container per
// device (its GPU attached, the shared workspace mounted at /workspace, the
// device's scratch at /scratch, and /shared and /secrets: job-mounts.ts),
// named after the host and the device and labelled with the spec it was made
// from. Each is adopted when it is up as made, (re)created when not, one
// operation at a time per device.
import { createHash } from 'node:crypto';
import type { DeviceProblem, RuntimeDevice } from './runtime';
import { dockerGpusValue, normalizeGpuSpec } from '../core/gpus';
import { dockerCall } from './docker-cli';
import { CONTAINER_SCRATCH, CONTAINER_SECRETS, CONTAINER_SHARED, type JobMounts } from './job-mounts';
import { SIGNAL_SCRIPT } from './docker-signal';
import { containerJobPids, containerNamespace, signalContainerJobs } from './proc-signal';
import { sleep } from './job-cgroup';
import { REAP_WAIT_MS } from './job-supervisor';

export const CONTAINER_WORKSPACE = '/workspace';
/** PID 1's child: does nothing, forever, in busybox and Ubuntu alike. */
const KEEP_ALIVE = ['tail', '-f', '/dev/null'];
// Creating a container may pull its image.
const CREATE_TIMEOUT_MS = 30 * 60_000;

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

/**
 * Capabilities a job's container does not get. It shares the host's network
 * (--network host), where the controller's clients, the worker and the
 * database talk over the loopback: with NET_RAW, root in the container could
 * capture that traffic, tokens and the database's login included.
 */
export const CAP_DROP = ['--cap-drop', 'NET_RAW'];

/** Short hash of what the container is made from: a container with another one is recreated (one made with NET_RAW too). */
export function specHash(image: string, gpusArg: string | null, volumes: string[]): string {
  const text = JSON.stringify({ image, gpus: gpusArg, volumes, capDrop: CAP_DROP });
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** The -v arguments of a job's container: the workspace, the scratch folder given, the shared storage and the secrets (read-only). */
export function mountArgs(workspace: string, scratch: string, mounts: JobMounts): string[] {
  const { shared, secrets } = mounts.dirs;
  return [
    '-v',
    `${workspace}:${CONTAINER_WORKSPACE}`,
    '-v',
    `${scratch}:${CONTAINER_SCRATCH}`,
    ...(shared ? ['-v', `${shared}:${CONTAINER_SHARED}`] : []),
    ...(secrets ? ['-v', `${secrets}:${CONTAINER_SECRETS}:ro`] : []),
  ];
}

/** The glob-free way to empty a folder in any sh (busybox too): the dot files as well, the folder itself stays. */
export const EMPTY_SCRATCH = ['sh', '-c', `rm -rf ${CONTAINER_SCRATCH}/* ${CONTAINER_SCRATCH}/.[!.]* ${CONTAINER_SCRATCH}/..?*`];

/** The --gpus value for these devices (null: attach none). Devices with no UUID are CPU slots. */
export function gpusFor(devices: { uuid: string | null }[]): { ok: true; arg: string | null } | { ok: false; reason: string } {
  const uuids = devices.flatMap((d) => (d.uuid ? [d.uuid] : []));
  if (uuids.length === 0) return { ok: true, arg: null };
  const spec = normalizeGpuSpec(uuids.join(','));
  return spec.ok ? spec : { ok: false, reason: `cannot attach the GPU(s) ${uuids.join(', ')}: ${spec.reason}` };
}

export type Ensured = { ok: true; name: string } | { ok: false; problem: DeviceProblem };

export interface DeviceContainersOptions {
  /** The host's name in rc: part of container names and the rc.host label. */
  host: string;
  image: string;
  /** Host folder mounted at /workspace (resolved). */
  workspace: string;
  /** The scratch, shared and secrets folders. */
  mounts: JobMounts;
  /** The docker CLI. */
  docker: string;
  log: (msg: string) => void;
  /** Signal job processes from the host's /proc when it can see them (default); false: always through docker exec. */
  signalFromHost?: boolean;
}

export class DeviceContainers {
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

  constructor(private readonly opts: DeviceContainersOptions) {
    this.docker = opts.docker;
    this.workspace = opts.workspace;
    this.log = opts.log;
  }

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
  ensure(device: RuntimeDevice, adopting: boolean): Promise<Ensured> {
    return this.withLock(device.index, async () => {
      const name = containerName(this.opts.host, device.index);
      const gpus = gpusFor([device]);
      if (!gpus.ok) return { ok: false, problem: this.problem(device.index, name, gpus.reason) };
      const scratch = this.opts.mounts.deviceScratch(device.index);
      const volumes = mountArgs(this.workspace, scratch, this.opts.mounts);
      const spec = specHash(this.opts.image, gpus.arg, volumes);
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
      try {
        this.opts.mounts.make(scratch);
      } catch (err) {
        const why = `cannot make its scratch folder ${scratch}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
        return { ok: false, problem: this.problem(device.index, name, why) };
      }
      const args = [
        'run',
        '-d',
        '--init',
        '--network',
        'host',
        '--ipc',
        'host',
        ...CAP_DROP,
        '--name',
        name,
        '--label',
        `rc.host=${this.opts.host}`,
        '--label',
        `rc.device=${device.index}`,
        '--label',
        `rc.spec=${spec}`,
        ...volumes,
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

  /**
   * Signals every job process in the container: all of its processes but its
   * init and keep-alive (docker-signal.ts says why); resolves to how many it hit.
   */
  async sweep(container: string, sig: 'TERM' | 'KILL'): Promise<number> {
    // From the host when it can see the container's processes; otherwise inside, through docker exec.
    const view = this.hostView.get(container);
    // A container removed behind our back has no processes left in its namespace: nothing to find, nothing to kill.
    if (view) return signalContainerJobs(view.pid, view.ns, sig);
    const r = await dockerCall(this.docker, ['exec', '-u', '0:0', container, 'sh', '-c', SIGNAL_SCRIPT, 'sh', sig]);
    if (!r.ok) this.log(`cannot signal the job processes in ${container}: ${r.error}`);
    return Number(r.stdout.trim()) || 0;
  }

  /**
   * After a job: kills what it left in the container and waits, at most
   * REAP_WAIT_MS, until it is gone. Resolves to the host pids still there
   * then (stuck in the kernel: the device is quarantined); always empty when
   * this worker cannot see the container's processes.
   */
  async reap(container: string): Promise<number[]> {
    await this.sweep(container, 'KILL');
    const view = this.hostView.get(container);
    if (!view) return [];
    const deadline = Date.now() + REAP_WAIT_MS;
    let left = containerJobPids(view.pid, view.ns);
    for (let round = 0; left.length && Date.now() < deadline; round++) {
      await sleep(Math.min(50, 2 * (round + 1)));
      if (round % 10 === 9) signalContainerJobs(view.pid, view.ns, 'KILL');
      left = containerJobPids(view.pid, view.ns);
    }
    return left;
  }

  /** One-off job containers a previous worker run left behind; resolves to how many. */
  async removeJobContainers(): Promise<number> {
    const r = await dockerCall(this.docker, ['ps', '-aq', '--filter', `label=rc.host=${this.opts.host}`, '--filter', 'label=rc.job']);
    const ids = r.ok ? r.stdout.split('\n').filter(Boolean) : [];
    if (ids.length === 0) return 0;
    this.log(`removing ${ids.length} job container(s) left over from earlier jobs`);
    await dockerCall(this.docker, ['rm', '-f', ...ids]);
    return ids.length;
  }
}
