// rc-worker: the daemon on each GPU host. It dials out to the controller
// (no inbound port: controller-link.ts), reports its devices and their labels,
// runs what it is assigned (job-runner.ts; terminals: tty-flow.ts) and streams
// output back with sequence numbers; it answers rc cp's file requests
// (file-requests.ts). This file wires those together and is the entry.
//
// Probes run at start (before hello), every RC_PROBE_INTERVAL_S and when the
// controller sends PROBE_NOW; after each run the worker sends 'inventory'.
//
// Before it connects, the worker kills whatever the jobs of its previous run
// left running (reclaim.ts), so that no device is leased again while its last
// job may still run.
import { mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { WorkerEvent } from '../protocol/events';
import { EXIT_HOST_CONNECTED, EXIT_HOST_REMOVED, type Quarantine } from '../protocol/worker';
import { loadWorkerConfig, mountDirs, type WorkerConfig } from './config';
import { ControllerLink } from './controller-link';
import { DockerRuntime } from './docker-runtime';
import { doctor } from './doctor';
import { answerFileRequests } from './file-requests';
import { GpuMonitor } from './gpu-monitor';
import { beat } from './heartbeat';
import { HostRuntime } from './host-runtime';
import { Prober } from './inventory';
import { checkMountDirs, JobMounts } from './job-mounts';
import { JobRunner } from './job-runner';
import { JobPhases } from './job-phases';
import { JobState } from './job-state';
import { JobSupervisor } from './job-supervisor';
import { type JobUser, jobUserFor, unreachableBy } from './job-user';
import { reclaim } from './reclaim';
import type { Runtime } from './runtime';
import { readWorkerConfigFile } from './worker-config';
import { quietOnClosedOutput } from '../server/quiet-output';

const log = (msg: string) => console.log(`[rc-worker] ${msg}`);

class Worker {
  private readonly probeTimer: NodeJS.Timeout;
  private readonly link: ControllerLink;
  private readonly jobs: JobRunner;

  constructor(
    config: WorkerConfig,
    prober: Prober,
    private readonly runtime: Runtime,
    gpus: GpuMonitor,
    private readonly state: JobState,
  ) {
    this.link = new ControllerLink(
      config,
      prober,
      {
        hello: () => ({ running: this.jobs.held(), unkillable: state.unkillable() }),
        welcomed: (reply) => {
          // Output sent before the reconnect will never be acknowledged: the window starts again.
          this.jobs.terminals.flowAll(true);
          this.jobs.resend(reply.resume);
        },
        lost: () => this.jobs.terminals.flowAll(false),
        beat: () => beat(this.link, gpus, prober, this.jobs, log),
        removed: (message) => {
          log(message);
          // A distinct status, so that a service manager does not start it again (docs/operators.md: RestartPreventExitStatus).
          void this.shutdown().then(() => process.exit(EXIT_HOST_REMOVED));
        },
        refused: (message) => {
          log(message);
          // Not started again by its service manager either: a person must stop one of the two (docs/operators.md).
          void this.shutdown().then(() => process.exit(EXIT_HOST_CONNECTED));
        },
      },
      log,
    );
    this.jobs = new JobRunner(config, runtime, gpus, state, this.link, (problem) => this.unusable(problem), log, new JobPhases(config.RC_JOB_PHASES ?? null));
    prober.onInventory = (inventory) => {
      if (this.link.ready) this.link.sendInventory(inventory);
    };
    this.probeTimer = setInterval(() => void prober.run(), config.RC_PROBE_INTERVAL_S * 1000);
    this.link.socket.on(WorkerEvent.probeNow, () => void prober.run());
    answerFileRequests(this.link.socket, config.RC_WORKSPACE);
  }

  /** A device the runtime cannot use: the controller quarantines it. */
  unusable(problem: Quarantine): void {
    log(`gpu${problem.index} is unusable: ${problem.reason}`);
    this.link.sendUnhealthy(problem);
  }

  /** Stops every job (nothing is left behind on the host), reports what it can, then disconnects. */
  async shutdown(): Promise<void> {
    this.link.stopReconnecting();
    await this.jobs.stopAll(2, 4000);
    clearInterval(this.probeTimer);
    this.link.close();
    await this.runtime.close();
    await this.state.flushed();
    this.state.release();
  }
}

async function main(): Promise<void> {
  quietOnClosedOutput();
  watchTheControllerThatStartedThis();
  if (process.argv[2] === 'doctor') process.exit(await doctor(process.env, (line) => process.stdout.write(`${line}\n`)));
  if (process.argv[2] && process.argv[2] !== 'run') {
    console.error(`rc-worker: unknown command ${process.argv[2]}; usage: rc-worker [doctor]`);
    process.exit(2);
  }
  let config: WorkerConfig;
  let jobUser: JobUser | null;
  try {
    config = loadWorkerConfig();
    // A config file that cannot be used stops the worker here, with a plain message.
    if (config.RC_WORKER_CONFIG) readWorkerConfigFile(config.RC_WORKER_CONFIG);
    mkdirSync(config.RC_WORKSPACE, { recursive: true });
    const problems = checkMountDirs(mountDirs(config), config.RC_WORKSPACE);
    if (problems.length) throw new Error(problems.join('; '));
    // Containers are the Docker runtime's boundary; RC_JOB_USER is the host runtime's.
    jobUser = config.RC_RUNTIME === 'host' ? jobUserFor(config.RC_JOB_USER, process.getuid?.()) : null;
    for (const [dir, what] of [
      [join(config.RC_SCRATCH_DIR, 'jobs'), "where jobs' scratch folders are made; set RC_SCRATCH_DIR to a folder it can enter"],
      [config.RC_WORKSPACE, 'on the way to the workspace; set RC_WORKSPACE to a folder it can use'],
    ] as const) {
      const closed = jobUser && unreachableBy(jobUser, dir);
      if (jobUser && closed) throw new Error(`RC_JOB_USER=${jobUser.name} cannot enter ${closed}, ${what}`);
    }
  } catch (err) {
    // Environment and config file problems, or a workspace that cannot be made: one line, no stack.
    console.error(`rc-worker: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
  const state = new JobState(config.RC_STATE_DIR, log);
  let previous: ReturnType<JobState['open']>;
  try {
    previous = state.open();
  } catch (err) {
    console.error(`rc-worker: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
  let runtime: Runtime;
  const mounts = new JobMounts(mountDirs(config));
  if (config.RC_RUNTIME === 'docker') {
    runtime = new DockerRuntime({
      host: config.RC_HOST_NAME,
      image: config.RC_DOCKER_IMAGE,
      workspace: config.RC_WORKSPACE,
      mounts,
      docker: config.RC_DOCKER,
      log,
    });
  } else {
    const supervisor = JobSupervisor.start({ host: config.RC_HOST_NAME, stateDir: config.RC_STATE_DIR, cgroups: config.RC_CGROUPS, log });
    log(supervisor.describe());
    log(
      jobUser
        ? `jobs run as ${jobUser.name} (uid ${jobUser.uid}), not as this worker's user: they cannot read its key or its files`
        : `jobs run as ${userInfo().username}, this worker's own user: a job can read this worker's key and every file it can (RC_JOB_USER, as root, runs them as another user)`,
    );
    runtime = new HostRuntime(config.RC_WORKSPACE, supervisor, mounts, log, jobUser);
  }
  // Before the hello: what the previous run's jobs left must be gone before the controller leases their devices again.
  await reclaim(runtime, state, previous, log);
  if (runtime instanceof HostRuntime) runtime.warm(config.RC_READY_SHELLS);
  const prober = new Prober({
    runtimeLabels: runtime.labels,
    workspace: config.RC_WORKSPACE,
    fakeDevices: config.RC_FAKE_DEVICES,
    configFile: config.RC_WORKER_CONFIG ?? null,
    probesDir: config.RC_PROBES_DIR ?? null,
    log,
  });
  const first = await prober.run();
  log(`probed: ${first.devices.length} device(s), ${first.hostLabels.length} host label(s)`);
  const gpus = new GpuMonitor({
    command: 'nvidia-smi',
    env: process.env,
    thresholdMiB: config.RC_GPU_MEM_THRESHOLD_MIB,
    settleMs: config.RC_GPU_SETTLE_S * 1000,
    log,
  });
  const worker = new Worker(config, prober, runtime, gpus, state);
  // Containers are made (or adopted) while the worker is already connected; a device whose
  // container cannot be made is quarantined, with docker's words as the evidence.
  void runtime.prepare(first.devices.map((d) => ({ index: d.index, uuid: d.uuid ?? null }))).then(
    (problems) => {
      for (const p of problems) worker.unusable(p);
    },
    (err: unknown) => log(`preparing the ${runtime.name} runtime failed: ${String(err)}`),
  );
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void worker.shutdown().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  parentGone = stop;
}

/** What the end of npm start's controller does: before any job can run, exit; after, stop as at SIGTERM. */
let parentGone: () => void = () => process.exit(0);

/** npm start's local worker: its controller holds the other end of this channel, which closes when it ends, even by kill -9. */
function watchTheControllerThatStartedThis(): void {
  if (!process.channel) return;
  process.channel.unref();
  process.on('disconnect', () => {
    log('the controller that started this worker is gone: stopping');
    parentGone();
  });
}

void main();
