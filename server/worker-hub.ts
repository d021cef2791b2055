// The controller's side of the worker connection: workers dial in on the
// /worker namespace with their host credential, say hello, heartbeat, stream
// output and report exits. Every report carries the job's fencing number.
import { and, eq, notInArray, sql } from 'drizzle-orm';
import type { Namespace, Server, Socket } from 'socket.io';
import { devices as devicesT, hosts, jobs, labels } from '../db/schema';
import {
  type ControllerToWorker,
  type FileEvent,
  type ReportReply,
  type Unchecked,
  WORKER_NAMESPACE,
  WorkerEvent,
  type WorkerToController,
} from '../protocol/events';
import {
  type FileOp,
  type GpuSample,
  type FileReply,
  Heartbeat,
  Hello,
  Inventory,
  JobExit,
  JobOutput,
  Quarantine,
  type KillJobOrder,
  type StartJob,
  type StdinOp,
  type StdinReply,
} from '../protocol/worker';
import { loadDevices } from './fleet';
import { quarantineDevice, quarantinesFromLabels } from './quarantine';
import { HeartbeatWriter } from './heartbeat';
import type { SocketIdentity } from './socket-auth';
import type { Db, Sql, Tx } from './db';
import type { JobEvents } from './job-events';
import { ended, outcome, type StopRequest } from '../core/job-state';
import { EndBatcher } from './jobs/end-batch';
import { endJob, releaseEnded, releaseLeftBehind } from './jobs/finish';
import type { JobRow } from './jobs/job-view';
import { markOutputTruncated } from './jobs/sql/mark-output-truncated';
import type { OutputWriter } from './output-writer';
import type { Dispatcher } from './scheduler';
import { TtyOutput } from '../protocol/tty';
import { zodMessage } from '../protocol/zod-message';
import type { Metrics } from './metrics';

/** What the terminal side (server/tty.ts) needs from the hub's traffic. */
export interface TtyHooks {
  /** The terminal size a tty job starts with (null: 80x24). */
  sizeOf(jobId: string): { cols: number; rows: number } | null;
  /** A tty job was sent to its worker. */
  started(job: JobRow): void;
  /** Live terminal output from a worker (fence already checked). */
  output(hostName: string, out: TtyOutput): void;
  /** Resolves once the terminal's output so far is stored (and told): its exit is reported after it. */
  flushed(jobId: string): Promise<void>;
}

export interface HubDeps {
  db: Db;
  sql: Sql;
  /** Where heartbeats are stored: a pool of its own whose commits do not wait for the disk (default: sql). */
  beatSql?: Sql;
  events: JobEvents;
  writer: OutputWriter;
  /** Called when devices may have appeared (a worker said hello or re-probed). */
  poke: () => void;
  /** Called when a job ended and freed its devices. */
  freed: () => void;
  log: (msg: string) => void;
  heartbeatMs: number;
  /** Heartbeats' lateness and handling time, output received (server/metrics.ts). */
  metrics: Pick<Metrics, 'heartbeat' | 'heartbeatStored' | 'output'>;
  /** Bytes of output kept per job; past it a marker is stored and the rest is only streamed live. */
  outputLimitBytes: number;
  /** A file step for a worker connected to another controller (server/remote-calls.ts). */
  fileElsewhere: (hostName: string, event: FileEvent, op: FileOp, timeoutMs: number) => Promise<FileReply | null>;
  /** The host's devices changed as the dashboard shows them (its state, inventory, a quarantine). */
  changed: (hostName: string) => void;
  /** A heartbeat's GPU samples were stored (the fleet view; the dashboard's charts, told at most every few seconds). */
  sampled?: (hostName: string, gpus: GpuSample[]) => void;
  /** A quarantine wrote an audit row (the dashboard's audit page). */
  audited?: () => void;
  /** An order for a worker that is not connected here: for the controller that holds it (the bus). */
  elsewhere: (hostName: string, event: keyof ControllerToWorker, payload: unknown) => void;
}

/** What the controller knows of a worker's socket: who signed in (a host credential: its host), with which token (cut when revoked). */
type WorkerSocketData = SocketIdentity;
type WorkerNamespace = Namespace<Unchecked<WorkerToController>, ControllerToWorker, Record<string, never>, WorkerSocketData>;
type WorkerSocket = Socket<Unchecked<WorkerToController>, ControllerToWorker, Record<string, never>, WorkerSocketData>;
/** The worker's send side, in general: emitTo's payloads. */
type Emit<E extends keyof ControllerToWorker> = Parameters<ControllerToWorker[E]>;

export class WorkerHub implements Dispatcher {
  private readonly sockets = new Map<string, WorkerSocket>();
  /** Host and fence of each running job assigned through this controller: a report about a job must come from its host with its fence. */
  private readonly fences = new Map<string, { host: string; fence: number }>();
  /** Refused reports per host since the last audit row about them (see refused()). */
  private readonly refusals = new Map<string, { count: number; auditedAt: number }>();
  /** When each running job last printed (or started, or was re-adopted): the controller's idle clock. */
  private readonly lastOutput = new Map<string, number>();
  /** Output bytes stored per running job (counted from this controller's start). */
  private readonly storedBytes = new Map<string, number>();
  /** Highest sequence number handled (stored, or dropped past the bound) per running job, and its host. */
  private readonly handledSeq = new Map<string, { seq: number; host: string }>();
  /** The jobs in handledSeq by host: a heartbeat's acknowledgements cost its host's jobs, not every job here. */
  private readonly handledOf = new Map<string, Set<string>>();
  /** When each connected host's worker was last heard from, by this controller's clock (not the database's). */
  private readonly heard = new Map<string, number>();
  private ns: WorkerNamespace | null = null;
  /** Set by the terminal hub (server/tty.ts). */
  tty: TtyHooks | null = null;

  /** Heartbeats stored in batches. */
  private readonly beats: HeartbeatWriter;
  /** Exit reports stored in batches. */
  private readonly ends: EndBatcher;

  constructor(private readonly deps: HubDeps) {
    this.beats = new HeartbeatWriter(deps.beatSql ?? deps.sql);
    this.ends = new EndBatcher(deps);
  }

  /** Takes the /worker namespace, whose sockets `auth` has signed in (server/socket-auth.ts). */
  attach(io: Server, auth: (socket: Socket, next: (err?: Error) => void) => void): void {
    const ns: WorkerNamespace = io.of(WORKER_NAMESPACE);
    this.ns = ns;
    ns.use(auth);
    ns.on('connection', (socket) => this.onConnection(socket));
  }

  /** Hosts connected here whose worker sent anything within the last `ms`: alive, whatever the database's timestamps say. */
  heardFrom(ms: number): string[] {
    const since = Date.now() - ms;
    return [...this.sockets.keys()].filter((h) => (this.heard.get(h) ?? 0) >= since);
  }

  startJob(job: JobRow, devices: StartJob['devices']): boolean {
    const socket = this.sockets.get(job.hostName!);
    if (!socket) return false;
    this.fences.set(job.id, { host: job.hostName!, fence: job.fence! });
    this.lastOutput.set(job.id, Date.now());
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
    if (!socket || !ORDERS.has(event as keyof ControllerToWorker)) return;
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

  /** Stores a chunk unless the job's output is past the bound; past it, keeps what fits and flags the job (replays then say so). */
  private store(jobId: string, host: string, seq: number, stream: 1 | 2, data: Buffer): void {
    const handled = this.handledSeq.get(jobId);
    if (handled && seq <= handled.seq) return;
    if (this.deps.writer.full) return this.overflow(host);
    this.handled(jobId, seq, host);
    const before = this.storedBytes.get(jobId) ?? 0;
    if (before === Infinity) return;
    const limit = this.deps.outputLimitBytes;
    if (before + data.length <= limit) {
      this.storedBytes.set(jobId, before + data.length);
      this.deps.writer.add({ jobId, seq, stream, data });
      return;
    }
    this.storedBytes.set(jobId, Infinity);
    // Keep what fits; replays then say that the rest was not stored.
    if (limit > before) this.deps.writer.add({ jobId, seq, stream, data: data.subarray(0, limit - before) });
    markOutputTruncated(this.deps.sql, jobId).catch((err: unknown) => this.deps.log(`marking ${jobId} truncated: ${String(err)}`));
  }

  /**
   * The database is too far behind to take more output: the chunk is not
   * taken (and so never acknowledged), and the worker is cut off, so nothing
   * later is taken past the gap either. It reconnects, and its hello (which
   * waits until the database caught up) tells it what to resend.
   */
  private overflow(host: string): void {
    const socket = this.sockets.get(host);
    if (!socket) return;
    this.deps.log(`the database is behind on storing output; disconnecting ${host}'s worker, which resends once it has caught up`);
    socket.disconnect(true);
  }

  /** Seconds since the job last printed, as far as this controller saw; 0 when unknown. */
  idleSeconds(jobId: string): number {
    const at = this.lastOutput.get(jobId);
    return at === undefined ? 0 : (Date.now() - at) / 1000;
  }

  close(): void {
    this.ns?.disconnectSockets(true);
  }

  private onConnection(socket: WorkerSocket): void {
    const hostName = socket.data.identity.hostName!;
    const { db, log } = this.deps;
    const old = this.sockets.get(hostName);
    if (old && old !== socket) old.disconnect(true);
    this.sockets.set(hostName, socket);
    this.heard.set(hostName, Date.now());
    socket.onAny(() => {
      if (this.sockets.get(hostName) === socket) this.heard.set(hostName, Date.now());
    });

    socket.on(WorkerEvent.hello, (raw, ack) => {
      const hello = Hello.safeParse(raw);
      if (!hello.success) return reply(ack, false, 'bad_hello');
      this.quarantineUnkillable(hostName, hello.data)
        .then(() => this.onHello(hostName, hello.data))
        .then(
          async (kill) => {
            // Before the answer: a worker answered takes its devices as known (the next listing, or rc run -d, loads them).
            this.deps.changed(hostName);
            if (typeof ack === 'function') ack({ ok: true, heartbeatMs: this.deps.heartbeatMs, resume: await this.resumePoints(hostName, hello.data) });
            for (const order of kill) socket.emit(WorkerEvent.jobKill, order);
            // A quarantine says its own change.
            await this.quarantineFromProbes(hostName).catch((err: unknown) => log(`health labels of ${hostName}: ${String(err)}`));
            this.deps.poke();
          },
          (err) => {
            log(`hello from ${hostName} failed: ${String(err)}`);
            reply(ack, false, 'internal');
          },
        );
    });

    socket.on(WorkerEvent.inventory, (raw) => {
      const inv = Inventory.safeParse(raw);
      if (!inv.success) return log(`bad inventory from ${hostName}: ${zodMessage(inv.error)}`);
      db.transaction((tx) => storeInventory(tx, hostName, inv.data))
        .then(() => this.quarantineFromProbes(hostName))
        .then(
          () => {
            this.deps.changed(hostName);
            this.deps.poke();
          },
          (err: unknown) => log(`inventory from ${hostName}: ${String(err)}`),
        );
    });

    // When this connection's last heartbeat arrived (its lateness is measured from it).
    let lastBeat: number | null = null;
    socket.on(WorkerEvent.heartbeat, (raw) => {
      const receivedAt = this.deps.metrics.heartbeat(lastBeat);
      lastBeat = receivedAt;
      void this.ackStored(socket, hostName);
      // Workers before GPU samples sent no payload.
      const beat = Heartbeat.safeParse(raw ?? { gpus: [] });
      const gpus = beat.success ? beat.data.gpus : [];
      this.beats
        .store(hostName, gpus)
        .then(
          (cameBack) => {
            this.deps.metrics.heartbeatStored(receivedAt);
            if (gpus.length) this.deps.sampled?.(hostName, gpus);
            if (cameBack) return this.cameBack(hostName, socket);
          },
          (err: unknown) => log(`heartbeat from ${hostName}: ${String(err)}`),
        )
        .catch((err: unknown) => log(`${hostName} came back: ${String(err)}`));
    });

    socket.on(WorkerEvent.deviceUnhealthy, (raw, ack) => {
      const q = Quarantine.safeParse(raw);
      if (!q.success) return reply(ack, false, 'bad_quarantine');
      this.quarantine(hostName, q.data).then(
        () => reply(ack, true),
        (err: unknown) => {
          log(`quarantine report from ${hostName}: ${String(err)}`);
          reply(ack, false, 'internal');
        },
      );
    });

    socket.on(WorkerEvent.jobOutput, (raw) => {
      // A socket this host replaced (or that was cut off) is heard no more.
      if (this.sockets.get(hostName) !== socket) return;
      const out = JobOutput.safeParse(raw);
      if (!out.success) return;
      if (!this.fenceOk(hostName, out.data.jobId, out.data.fence)) return this.refused(hostName, WorkerEvent.jobOutput, out.data.jobId);
      const { jobId, seq, stream, data } = out.data;
      this.deps.metrics.output(data.length);
      this.lastOutput.set(jobId, Date.now());
      this.store(jobId, hostName, seq, stream, data);
      this.deps.events.output(jobId, seq, stream, data);
    });

    // A terminal's output is live only: never stored, but it counts as activity for --idle-timeout.
    socket.on(WorkerEvent.ttyOutput, (raw) => {
      const out = TtyOutput.safeParse(raw);
      if (!out.success) return;
      if (!this.fenceOk(hostName, out.data.jobId, out.data.fence)) return this.refused(hostName, WorkerEvent.ttyOutput, out.data.jobId);
      this.lastOutput.set(out.data.jobId, Date.now());
      this.tty?.output(hostName, out.data);
    });

    socket.on(WorkerEvent.jobExit, (raw, ack) => {
      const exit = JobExit.safeParse(raw);
      if (!exit.success) return reply(ack, false, 'bad_exit');
      this.onExit(hostName, exit.data).then(
        (ok) => {
          if (!ok) this.refused(hostName, WorkerEvent.jobExit, exit.data.jobId);
          reply(ack, ok, ok ? undefined : 'stale_lease');
        },
        (err) => {
          log(`exit report for ${exit.data.jobId} failed: ${String(err)}`);
          reply(ack, false, 'internal');
        },
      );
    });

    socket.on('disconnect', () => {
      if (this.sockets.get(hostName) !== socket) return;
      this.sockets.delete(hostName);
      this.heard.delete(hostName);
      // Away, not offline: running jobs keep running until the host timeout.
      db.update(hosts)
        .set({ status: 'away' })
        .where(and(eq(hosts.name, hostName), eq(hosts.status, 'online')))
        .then(
          () => this.deps.changed(hostName),
          (err: unknown) => log(`disconnect of ${hostName}: ${String(err)}`),
        );
    });
  }

  private async quarantine(hostName: string, q: Quarantine): Promise<void> {
    if (await quarantineDevice(this.deps.sql, hostName, q, `host:${hostName}`)) {
      this.deps.log(`quarantined ${hostName}:gpu${q.index}: ${q.reason}`);
      this.deps.changed(hostName);
      this.deps.audited?.();
    }
  }

  /**
   * Devices where the worker found processes it could not kill: quarantined before the
   * hello's reconcile ends their jobs and frees their leases, so no job is given them meanwhile.
   */
  private async quarantineUnkillable(hostName: string, hello: Hello): Promise<void> {
    for (const u of hello.unkillable ?? []) {
      const shown = u.pids.slice(0, 10).join(', ') + (u.pids.length > 10 ? ', …' : '');
      const reason = `processes of job ${u.jobId} from the worker's previous run could not be killed (pid ${shown})`;
      for (const index of u.devices) await this.quarantine(hostName, { index, reason, evidence: { jobId: u.jobId, pids: u.pids.slice(0, 100) } });
    }
  }

  /** A probe saying a GPU is failing (a `health` label other than ok) quarantines it. */
  private async quarantineFromProbes(hostName: string): Promise<void> {
    const devices = await loadDevices(this.deps.sql, { host: hostName });
    for (const { q } of quarantinesFromLabels(devices)) await this.quarantine(hostName, q);
  }

  /**
   * A host heard from again after it was counted offline (a worker that was
   * stuck, or cut off, without losing its connection). Jobs ended meanwhile
   * that still hold its devices are stopped now; their exit reports free the devices.
   */
  private async cameBack(hostName: string, socket: WorkerSocket): Promise<void> {
    // By the lease's own fence: an earlier attempt of a job that runs again elsewhere (a restart) is over too.
    const rows = await this.deps.sql<{ id: string; fence: number; reason: string | null }[]>`
      select distinct j.id, l.fence, coalesce(j.reason, 'its attempt ' || coalesce(a.attempt::text, '?') || ' was ' || coalesce(a.state, 'ended')) as reason
      from leases l join jobs j on j.id = l.job_id join devices d on d.id = l.device_id
        left join job_attempts a on a.job_id = j.id and a.fence = l.fence
      where l.released_at is null and d.host_name = ${hostName} and l.fence is not null
        and (j.state not in ('queued', 'running') or l.fence is distinct from j.fence)`;
    for (const j of rows)
      socket.emit(WorkerEvent.jobKill, {
        jobId: j.id,
        fence: j.fence,
        reason: `ended by the controller meanwhile (${j.reason ?? 'no reason recorded'})`,
      } satisfies KillJobOrder);
    this.deps.changed(hostName);
    this.deps.poke();
  }

  /** Tells the worker which output is stored, so it can let go of it. */
  private async ackStored(socket: WorkerSocket, hostName: string): Promise<void> {
    // What was handled before the drain is stored after it; later chunks wait for the next heartbeat.
    const handled = [...(this.handledOf.get(hostName) ?? [])].map((jobId) => ({ jobId, seq: this.handledSeq.get(jobId)?.seq ?? 0 }));
    if (!handled.length) return;
    await this.deps.writer.drain();
    for (const a of handled) socket.emit(WorkerEvent.jobAck, a);
  }

  /**
   * For each job the worker still has: the last chunk stored, so it resends
   * only what comes after. A controller that restarted also learns here how
   * much of each job's output is stored, so the bound holds across restarts.
   */
  private async resumePoints(hostName: string, hello: Hello): Promise<Record<string, number>> {
    await this.deps.writer.drain();
    const ids = hello.running.map((r) => r.jobId);
    if (!ids.length) return {};
    const rows = await this.deps.sql<{ id: string; seq: number; bytes: number; truncated: boolean }[]>`
      select j.id, coalesce(max(o.seq), 0)::int as seq, coalesce(sum(octet_length(o.data)), 0)::float8 as bytes, j.output_truncated as truncated
      from jobs j left join job_output o on o.job_id = j.id
      where j.id = any(${ids}::text[]) and j.host_name = ${hostName} and j.state = 'running' group by j.id`;
    // Only this host's running jobs: a hello naming another host's job learns nothing and changes nothing.
    const out: Record<string, number> = {};
    for (const r of rows) {
      out[r.id] = r.seq;
      if (!this.storedBytes.has(r.id)) this.storedBytes.set(r.id, r.truncated ? Infinity : r.bytes);
    }
    for (const [jobId, seq] of Object.entries(out)) {
      const known = this.handledSeq.get(jobId)?.seq ?? 0;
      out[jobId] = Math.max(seq, known);
      this.handled(jobId, out[jobId]!, hostName);
    }
    return out;
  }

  private fenceOk(hostName: string, jobId: string, fence: number): boolean {
    const f = this.fences.get(jobId);
    return f !== undefined && f.host === hostName && f.fence === fence;
  }

  /**
   * A report about a job that is not this host's current assignment: dropped.
   * A stale worker sends a few after a reconnect; a host forging reports sends
   * many. At most one audit row per host a minute, with the count since the last.
   */
  private refused(hostName: string, event: string, jobId: string): void {
    const now = Date.now();
    const r = this.refusals.get(hostName) ?? { count: 0, auditedAt: 0 };
    r.count += 1;
    this.refusals.set(hostName, r);
    if (now - r.auditedAt < REFUSAL_AUDIT_EVERY_MS) return;
    const detail = { host: hostName, event, jobId, refused: r.count };
    r.count = 0;
    r.auditedAt = now;
    this.deps.log(`refused ${detail.refused} report(s) from ${hostName} about jobs it does not run now, stale or forged (the latest: ${event} for ${jobId})`);
    this.deps
      .sql`insert into audit (actor, action, target, detail) values (${`host:${hostName}`}, 'worker.refused', ${jobId}, ${JSON.stringify(detail)}::text::jsonb)`.catch(
      (err: unknown) => this.deps.log(`auditing refused reports from ${hostName}: ${String(err)}`),
    );
  }

  /** Records the host's devices and labels, and reconciles its jobs. Returns jobs the worker must stop. */
  private async onHello(hostName: string, hello: Hello): Promise<KillJobOrder[]> {
    return this.deps.db
      .transaction(async (tx) => {
        await tx
          .insert(hosts)
          .values({ name: hostName, status: 'online', lastSeenAt: sql`now()`, workerVersion: hello.version })
          .onConflictDoUpdate({ target: hosts.name, set: { status: 'online', lastSeenAt: sql`now()`, workerVersion: hello.version } });
        await storeInventory(tx, hostName, hello);
        return tx
          .select()
          .from(jobs)
          .where(and(eq(jobs.hostName, hostName), eq(jobs.state, 'running')));
      })
      .then((running) => this.reconcile(hostName, hello, running));
  }

  /**
   * Jobs the database runs there but the worker does not know are lost; jobs
   * the worker runs without a lease are stopped (their leases, if they still
   * hold some, go with their exit report). The worker has killed what its
   * previous run left behind before this hello, so the leases of ended jobs it
   * does not list are free.
   */
  private async reconcile(hostName: string, hello: Hello, running: JobRow[]): Promise<KillJobOrder[]> {
    const reported = new Map(hello.running.map((r) => [r.jobId, r.fence]));
    const known = new Set<string>();
    for (const job of running) {
      if (reported.get(job.id) === job.fence) {
        known.add(job.id);
        this.fences.set(job.id, { host: hostName, fence: job.fence! });
        if (!this.lastOutput.has(job.id)) this.lastOutput.set(job.id, Date.now());
        continue;
      }
      await endJob(this.deps, job.id, ended('lost', 'lost', 'the worker restarted and no longer had the job'), { from: ['running'], fence: job.fence });
    }
    const freed = await releaseLeftBehind(
      this.deps.sql,
      hostName,
      hello.running.map((r) => r.jobId),
    );
    if (freed > 0) {
      this.deps.changed(hostName);
      this.deps.freed();
    }
    // A kill asked for while the worker was away is sent again now.
    const pendingKills = running.filter((j) => known.has(j.id) && j.killRequestedBy).map((j) => ({ jobId: j.id, fence: j.fence!, reason: j.killRequestedBy! }));
    return hello.running
      .filter((r) => !known.has(r.jobId))
      .map((r) => ({ jobId: r.jobId, fence: r.fence, reason: 'the controller no longer holds a lease for this job' }))
      .concat(pendingKills);
  }

  /** A job's exit, from its host's worker. False when it is not that host's job with that fence (refused). */
  private async onExit(hostName: string, exit: JobExit): Promise<boolean> {
    const { writer } = this.deps;
    // Every chunk before the exit is stored before the job is final, so `rc logs` is whole, and a terminal's last output is told before its end.
    await Promise.all([writer.drain(), this.tty?.flushed(exit.jobId)]);
    // Quarantined while the job still holds the device: no moment where another job could take it.
    if (exit.quarantine?.length) {
      const [mine] = await this.deps.sql`
        select 1 from jobs where id = ${exit.jobId} and fence = ${exit.fence} and host_name = ${hostName}
        union all select 1 from job_attempts where job_id = ${exit.jobId} and fence = ${exit.fence} and host_name = ${hostName}`;
      for (const q of exit.quarantine) if (mine) await this.quarantine(hostName, q);
    }
    // The worker's own watchdog is a stop too; any stop asked for earlier still wins (endJob).
    const stop: StopRequest | null = exit.killedFor ? { cause: exit.killCause ?? 'killed', reason: exit.killedFor } : null;
    const done = await this.ends.end({ jobId: exit.jobId, end: outcome(exit.exitCode, exit.signal, stop), fence: exit.fence, host: hostName });
    if (done) {
      this.forget(exit.jobId);
      this.deps.freed();
      return true;
    }
    // Already over (lost, or ended by the controller's watchdog): its processes are gone now, and so are its leases.
    const late = await releaseEnded(this.deps.sql, hostName, exit.jobId, exit.fence);
    if (!late.mine) return false;
    // An earlier attempt's report: what is kept here of the job may be its next attempt's by now.
    if (this.fenceOk(hostName, exit.jobId, exit.fence)) this.forget(exit.jobId);
    if (late.released) {
      // No event says this: the fleet views load the host again.
      this.deps.changed(hostName);
      this.deps.freed();
    }
    return true;
  }

  private handled(jobId: string, seq: number, host: string): void {
    const before = this.handledSeq.get(jobId);
    if (before && before.host !== host) this.handledOf.get(before.host)?.delete(jobId);
    this.handledSeq.set(jobId, { seq, host });
    const mine = this.handledOf.get(host) ?? new Set<string>();
    mine.add(jobId);
    this.handledOf.set(host, mine);
  }

  private forget(jobId: string): void {
    this.fences.delete(jobId);
    this.lastOutput.delete(jobId);
    this.storedBytes.delete(jobId);
    const h = this.handledSeq.get(jobId);
    if (h) {
      const mine = this.handledOf.get(h.host);
      mine?.delete(jobId);
      if (mine?.size === 0) this.handledOf.delete(h.host);
    }
    this.handledSeq.delete(jobId);
  }
}

/** The orders another controller may relay to a worker connected here. */
const ORDERS = new Set<keyof ControllerToWorker>([
  WorkerEvent.jobKill,
  WorkerEvent.probeNow,
  WorkerEvent.ttyInput,
  WorkerEvent.ttyResize,
  WorkerEvent.ttyPause,
  WorkerEvent.ttyResume,
]);

/** A payload as JSON can carry it: a Buffer field (terminal input) as base64. */
function toBus(payload: unknown): unknown {
  if (!payload || typeof payload !== 'object') return payload;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) out[k] = Buffer.isBuffer(v) ? { $b64: v.toString('base64') } : v;
  return out;
}

function fromBus(payload: unknown): unknown {
  if (!payload || typeof payload !== 'object') return payload;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) {
    const b64 = v && typeof v === 'object' ? (v as { $b64?: unknown }).$b64 : undefined;
    out[k] = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : v;
  }
  return out;
}

/** Refused reports of one host are audited at most this often (with their count). */
const REFUSAL_AUDIT_EVERY_MS = 60_000;

/** Replaces a host's devices and labels with what its worker reports. */
async function storeInventory(tx: Tx, hostName: string, inv: Inventory): Promise<void> {
  const indexes = inv.devices.map((d) => d.index);
  for (const d of inv.devices) {
    await tx
      .insert(devicesT)
      .values({ hostName, index: d.index, uuid: d.uuid ?? null, present: true })
      .onConflictDoUpdate({ target: [devicesT.hostName, devicesT.index], set: { uuid: d.uuid ?? null, present: true } });
  }
  await tx
    .update(devicesT)
    .set({ present: false })
    .where(and(eq(devicesT.hostName, hostName), indexes.length ? notInArray(devicesT.index, indexes) : undefined));
  await tx.delete(labels).where(eq(labels.hostName, hostName));
  const rows = [
    ...inv.hostLabels.map((l) => ({ ...l, deviceIndex: -1 })),
    ...inv.devices.flatMap((d) => d.labels.map((l) => ({ ...l, deviceIndex: d.index }))),
  ].map((l) => ({
    hostName,
    deviceIndex: l.deviceIndex,
    key: l.key,
    value: l.value,
    source: l.source,
    probe: l.probe ?? null,
    seenAt: l.seenAt ? new Date(l.seenAt) : new Date(),
    stale: l.stale ?? null,
  }));
  // In pieces: one statement's parameters are at most 65,535 (8 per label; a hello may carry 65,000 labels).
  for (let i = 0; i < rows.length; i += LABELS_PER_INSERT)
    await tx
      .insert(labels)
      .values(rows.slice(i, i + LABELS_PER_INSERT))
      .onConflictDoNothing();
}

/** Labels per INSERT (each takes 8 of a statement's 65,535 parameters). */
const LABELS_PER_INSERT = 4000;

/** Answers a report, if the worker asked for an answer. */
function reply(ack: unknown, ok: boolean, code?: string): void {
  if (typeof ack === 'function') (ack as (r: ReportReply) => void)(code ? { ok, code } : { ok });
}
