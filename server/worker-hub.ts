// The controller's side of the worker connection: workers dial in on the
// /worker namespace with their host credential, say hello, heartbeat, stream
// output and report exits. Every report carries the job's fencing number.
import type { Server, Socket } from 'socket.io';
import { type ControllerToWorker, type FileEvent, WORKER_NAMESPACE, WorkerEvent } from '../protocol/events';
import type { FileOp, FileReply, KillJobOrder, StartJob, StdinOp, StdinReply } from '../protocol/worker';
import { fromBus, RELAYED_ORDERS, toBus } from './bus-orders';
import { claimHost, hostConnected, releaseHost, WORKER_INSTANCE } from './worker-claim';
import type { JobRow } from './jobs/job-view';
import type { Dispatcher } from './scheduler';
import { type InboundDeps, type TtyHooks, WorkerInbound, type WorkerNamespace, type WorkerSocket } from './worker-inbound';

export interface HubDeps extends InboundDeps {
  /** A file step for a worker connected to another controller (server/remote-calls.ts). */
  fileElsewhere: (hostName: string, event: FileEvent, op: FileOp, timeoutMs: number) => Promise<FileReply | null>;
  /** An order for a worker that is not connected here: for the controller that holds it (the bus). */
  elsewhere: (hostName: string, event: keyof ControllerToWorker, payload: unknown) => void;
  /** This controller, as the others know it (its bus id): the host's row says which controller holds its worker. */
  controllerId: string;
  /** RC_HOST_TIMEOUT_S: a worker heard from within it holds its host against a second one. */
  hostTimeoutS: number;
  /** A worker process was let in here for its host: told to the other controllers, which cut any other process's socket for it. */
  admitted: (hostName: string, instance: string | null) => void;
}

/** The worker's send side, in general: emitTo's payloads. */
type Emit<E extends keyof ControllerToWorker> = Parameters<ControllerToWorker[E]>;

export class WorkerHub implements Dispatcher {
  private readonly sockets = new Map<string, WorkerSocket>();
  /** When each connected host's worker was last heard from, by this controller's clock (not the database's). */
  private readonly heard = new Map<string, number>();
  private ns: WorkerNamespace | null = null;
  /** What the workers send, handled (server/worker-inbound.ts). */
  private readonly inbound: WorkerInbound;

  constructor(private readonly deps: HubDeps) {
    this.inbound = new WorkerInbound(deps);
  }

  /** Set by the terminal hub (server/tty.ts). */
  get tty(): TtyHooks | null {
    return this.inbound.tty;
  }

  set tty(hooks: TtyHooks | null) {
    this.inbound.tty = hooks;
  }

  /** Takes the /worker namespace, whose sockets `auth` has signed in (server/socket-auth.ts). */
  attach(io: Server, auth: (socket: Socket, next: (err?: Error) => void) => void): void {
    const ns: WorkerNamespace = io.of(WORKER_NAMESPACE);
    this.ns = ns;
    ns.use(auth);
    ns.use((socket, next) => {
      this.admit(socket).then(
        () => next(),
        (err: Error) => next(err),
      );
    });
    ns.on('connection', (socket) => this.onConnection(socket));
  }

  /**
   * One worker per host: a second process with the host's credential is refused while the one that holds
   * it is heard from (server/worker-claim.ts); the holder reconnecting, or a replacement of one that is gone, is let in.
   */
  private async admit(socket: WorkerSocket): Promise<void> {
    const hostName = socket.data.identity.hostName!;
    const raw: unknown = socket.handshake.auth?.instance;
    if (raw !== undefined && (typeof raw !== 'string' || !WORKER_INSTANCE.test(raw)))
      throw new Error('bad_request: the worker id (auth.instance) must be 8 to 64 letters, digits or dashes');
    const instance = raw ?? null;
    // A connection of this host that closed here a moment ago: its host is free once that is written.
    await this.releases.get(hostName);
    const address = socket.handshake.address.replace(/^::ffff:/, '');
    const windowS = this.deps.hostTimeoutS;
    const claim = await claimHost(this.deps.sql, { host: hostName, instance, controller: this.deps.controllerId, address, windowS }).catch((err: unknown) => {
      this.deps.log(`admitting ${hostName}'s worker from ${address}: ${String(err)}`);
      throw new Error('unavailable: the controller cannot reach its database; the worker tries again');
    });
    if (!claim.ok) {
      const refusal = hostConnected(hostName, claim, windowS);
      this.deps.log(`refused a second worker for ${hostName} from ${address}: ${refusal.message}`);
      throw refusal;
    }
    socket.data.instance = instance;
    this.deps.admitted(hostName, instance);
  }

  /** Another controller let a worker process in for `hostName`: a socket here from another process of that host is stale. */
  admittedElsewhere(hostName: string, instance: string | null): void {
    const socket = this.sockets.get(hostName);
    if (socket && socket.data.instance !== instance) socket.disconnect(true);
  }

  /** Hosts connected here whose worker sent anything within the last `ms`: alive, whatever the database's timestamps say. */
  heardFrom(ms: number): string[] {
    const since = Date.now() - ms;
    return [...this.sockets.keys()].filter((h) => (this.heard.get(h) ?? 0) >= since);
  }

  startJob(job: JobRow, devices: StartJob['devices']): boolean {
    const socket = this.sockets.get(job.hostName!);
    if (!socket) return false;
    this.inbound.running.started(job.id, job.hostName!, job.fence!);
    const order: StartJob = {
      jobId: job.id,
      kind: job.kind,
      fence: job.fence!,
      argv: job.argv,
      env: job.env ?? {},
      cwd: job.cwd,
      devices,
      maxRuntimeS: job.maxRuntimeS,
      idleTimeoutS: job.idleTimeoutS,
    };
    // A later attempt's output follows the earlier attempts' (job_output is numbered per job).
    if (job.outputBase > 0) order.seqFrom = job.outputBase;
    if (job.preemptible) order.preemptible = true;
    // A task of an array (rc run --array): RC_ARRAY_ID and RC_ARRAY_INDEX, from the row, never from its --env.
    if (job.arrayId !== null && job.arrayIndex !== null) order.array = { id: job.arrayId, index: job.arrayIndex };
    // Its stdin came from rc run once: a later attempt (a restart) reads /dev/null rather than wait for input nobody sends.
    if (job.stdin && job.attempt === 1) order.stdin = true;
    if (job.kind === 'tty') order.tty = this.tty?.sizeOf(job.id) ?? { cols: 80, rows: 24 };
    socket.emit(WorkerEvent.jobStart, order);
    if (job.kind === 'tty') this.tty?.started(job);
    return true;
  }

  /** Sends a message to a host's worker if it is connected here; false when it is not. */
  emitTo<E extends keyof ControllerToWorker>(hostName: string, event: E, ...payload: Emit<E>): boolean {
    const socket = this.sockets.get(hostName);
    if (!socket) return false;
    socket.emit(event, ...payload);
    return true;
  }

  /** Sends an order to a host's worker wherever it is connected: here, or through the controller that holds it. */
  order<E extends keyof ControllerToWorker>(hostName: string, event: E, ...payload: Emit<E>): void {
    if (this.emitTo(hostName, event, ...payload)) return;
    this.deps.elsewhere(hostName, event, toBus(payload[0]));
  }

  /** An order from another controller (the bus): carried out if the host's worker is connected here. */
  orderFromBus(hostName: string, event: string, payload: unknown): void {
    const socket = this.sockets.get(hostName);
    if (!socket || !RELAYED_ORDERS.has(event as keyof ControllerToWorker)) return;
    const args = payload === undefined ? [] : [fromBus(payload)];
    (socket.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
  }

  /** Whether the host's worker is connected to this controller. */
  holds(hostName: string): boolean {
    return this.sockets.has(hostName);
  }

  killJob(hostName: string, order: KillJobOrder): void {
    this.order(hostName, WorkerEvent.jobKill, order);
  }

  /** One rc cp step on a host's worker (FILE_* events), wherever it is connected; null when it does not answer. */
  fileCall(hostName: string, event: FileEvent, op: FileOp, timeoutMs = 30_000): Promise<FileReply | null> {
    if (!this.sockets.has(hostName)) return this.deps.fileElsewhere(hostName, event, op, timeoutMs);
    return this.fileCallHere(hostName, event, op, timeoutMs);
  }

  /** One rc cp step on a worker connected here; null when it is not, or does not answer. */
  async fileCallHere(hostName: string, event: FileEvent, op: FileOp, timeoutMs: number): Promise<FileReply | null> {
    const socket = this.sockets.get(hostName);
    if (!socket) return null;
    return socket
      .timeout(timeoutMs)
      .emitWithAck(event, op)
      .then(
        (r) => r,
        () => null,
      );
  }

  /** The next piece of a job's stdin to its worker, connected here; null when it is not, or does not answer. */
  async stdinCall(hostName: string, op: StdinOp, timeoutMs = 120_000): Promise<StdinReply | null> {
    const socket = this.sockets.get(hostName);
    if (!socket) return null;
    return socket
      .timeout(timeoutMs)
      .emitWithAck(WorkerEvent.jobStdin, op)
      .then(
        (r) => r,
        () => null,
      );
  }

  /** Asks a host's worker to run its probes now, wherever it is connected. */
  probeNow(hostName: string): void {
    this.order(hostName, WorkerEvent.probeNow);
  }

  /** Seconds since the job last printed, as far as this controller saw; 0 when unknown. */
  idleSeconds(jobId: string): number {
    return this.inbound.running.idleSeconds(jobId);
  }

  /** Hosts being marked away after their worker left: the controller's stop waits for these writes before it closes the database. */
  private readonly leaving = new Set<Promise<void>>();
  /** The latest of those writes by host: its next worker is admitted after it (the host is free then). */
  private readonly releases = new Map<string, Promise<void>>();

  /** Disconnects every worker (each moves to another controller or waits for this one) and resolves once their hosts are marked away. */
  async close(): Promise<void> {
    this.ns?.disconnectSockets(true);
    await Promise.all(this.leaving);
  }

  private onConnection(socket: WorkerSocket): void {
    const hostName = socket.data.identity.hostName!;
    const old = this.sockets.get(hostName);
    if (old && old !== socket) old.disconnect(true);
    this.sockets.set(hostName, socket);
    this.heard.set(hostName, Date.now());
    socket.onAny(() => {
      if (this.sockets.get(hostName) === socket) this.heard.set(hostName, Date.now());
    });
    this.inbound.listen(hostName, socket, () => this.sockets.get(hostName) === socket);

    socket.on('disconnect', () => {
      if (this.sockets.get(hostName) !== socket) return;
      this.sockets.delete(hostName);
      this.heard.delete(hostName);
      // Away, not offline: running jobs keep running until the host timeout.
      const away = releaseHost(this.deps.sql, hostName, socket.data.instance ?? null, this.deps.controllerId).then(
        () => this.deps.changed(hostName),
        (err: unknown) => this.deps.log(`disconnect of ${hostName}: ${String(err)}`),
      );
      this.leaving.add(away);
      this.releases.set(hostName, away);
      void away.finally(() => {
        this.leaving.delete(away);
        if (this.releases.get(hostName) === away) this.releases.delete(hostName);
      });
    });
  }
}
