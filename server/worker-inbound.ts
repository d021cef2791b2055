// What workers send the controller, handled: hellos, re-probes, heartbeats,
// quarantines, output and exits, each checked (who sent it, with which fence)
// and turned into one call: the host's store, a quarantine, the output writer,
// or a job transition (server/jobs/worker-reports.ts). The hub
// (server/worker-hub.ts) owns the sockets and what is sent to workers.
import type { Namespace, Socket } from 'socket.io';
import type { ControllerToWorker, ReportReply, Unchecked, WorkerToController } from '../protocol/events';
import { WorkerEvent } from '../protocol/events';
import { type GpuSample, Heartbeat, Hello, Inventory, JobExit, JobOutput, Quarantine } from '../protocol/worker';
import { TtyOutput } from '../protocol/tty';
import { zodMessage } from '../protocol/zod-message';
import type { Db, Sql } from './db';
import { HeartbeatWriter } from './heartbeat';
import { storeHello, storeReprobe } from './host-store';
import type { JobEvents } from './job-events';
import type { JobRow } from './jobs/job-view';
import type { JobEngine } from './jobs/engine';
import type { RunningHere } from './jobs/running-here';
import type { WorkerReports } from './jobs/worker-reports';
import type { Metrics } from './metrics';
import type { OutputWriter } from './output-writer';
import type { SocketIdentity } from './socket-auth';
import { Refusals } from './worker-refusals';
import type { WorkerQuarantines } from './worker-quarantine';

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

export interface InboundDeps {
  /** The job engine: what a worker's reports change of its jobs (and what is known here of them). */
  engine: Pick<JobEngine, 'running' | 'reports' | 'outputTruncated'>;
  /** The quarantines a worker reports or implies. */
  quarantines: WorkerQuarantines;
  db: Db;
  sql: Sql;
  /** Where heartbeats are stored: a pool of its own whose commits do not wait for the disk (default: sql). */
  beatSql?: Sql;
  events: JobEvents;
  writer: OutputWriter;
  /** Called when devices may have appeared (a worker said hello or re-probed). */
  poke: () => void;
  log: (msg: string) => void;
  heartbeatMs: number;
  /** How long a worker waits for a heartbeat's acknowledgement before it leaves this controller for another (worker/controller-link.ts). */
  heartbeatAckMs: number;
  /** Heartbeats' lateness and handling time, output received (server/metrics.ts). */
  metrics: Pick<Metrics, 'heartbeat' | 'heartbeatStored' | 'output'>;
  /** Bytes of output kept per job; past it a marker is stored and the rest is only streamed live. */
  outputLimitBytes: number;
  /** The host's devices changed as the dashboard shows them (its state, inventory, a quarantine). */
  changed: (hostName: string) => void;
  /** A heartbeat's GPU samples were stored (the fleet view; the dashboard's charts, told at most every few seconds). */
  sampled?: (hostName: string, gpus: GpuSample[]) => void;
}

/**
 * What the controller knows of a worker's socket: who signed in (a host credential: its host), with which token (cut when revoked),
 * and which worker process it is (its id; null: an older worker that sends none).
 */
export type WorkerSocketData = SocketIdentity & { instance?: string | null };
export type WorkerNamespace = Namespace<Unchecked<WorkerToController>, ControllerToWorker, Record<string, never>, WorkerSocketData>;
export type WorkerSocket = Socket<Unchecked<WorkerToController>, ControllerToWorker, Record<string, never>, WorkerSocketData>;
export class WorkerInbound {
  /** The running jobs assigned through this controller: fences, idle clocks, output handled (server/jobs/running-here.ts). */
  readonly running: RunningHere;
  /** Set by the terminal hub (server/tty.ts). */
  tty: TtyHooks | null = null;
  /** Heartbeats stored in batches. */
  private readonly beats: HeartbeatWriter;
  /** The job transitions a worker's reports make. */
  private readonly reports: WorkerReports;
  private readonly quarantines: WorkerQuarantines;
  private readonly refusals: Refusals;
  /** When each host's worker was last cut off because output waited too long for the database (overflow), and whether its disk was full then. */
  private readonly cutAt = new Map<string, { at: number; full: boolean }>();
  /** Jobs whose end waits for their output while the database is out of disk space (said once each). */
  private readonly endWaits = new Set<string>();

  constructor(private readonly deps: InboundDeps) {
    this.beats = new HeartbeatWriter(deps.beatSql ?? deps.sql);
    this.running = deps.engine.running;
    this.reports = deps.engine.reports;
    this.quarantines = deps.quarantines;
    this.refusals = new Refusals(deps.sql, deps.log);
  }

  /** Handles what `hostName`'s worker sends on `socket`; `current()` says whether it is still that host's socket here. */
  listen(hostName: string, socket: WorkerSocket, current: () => boolean): void {
    const { db, log } = this.deps;
    socket.on(WorkerEvent.hello, (raw, ack) => {
      const hello = Hello.safeParse(raw);
      if (!hello.success) return reply(ack, false, 'bad_hello');
      this.quarantines
        .unkillable(hostName, hello.data)
        .then(() => storeHello(db, hostName, hello.data))
        .then(() => this.reports.hello(hostName, hello.data))
        .then(async (kill) => ({ kill, resume: await this.resumePoints(hostName, hello.data) }))
        .then(
          async ({ kill, resume }) => {
            // Before the answer: a worker answered takes its devices as known (the next listing, or rc run -d, loads them).
            this.deps.changed(hostName);
            if (typeof ack === 'function') ack({ ok: true, heartbeatMs: this.deps.heartbeatMs, heartbeatAckMs: this.deps.heartbeatAckMs, resume });
            for (const order of kill) socket.emit(WorkerEvent.jobKill, order);
            // A quarantine says its own change.
            await this.quarantines.fromProbes(hostName).catch((err: unknown) => log(`health labels of ${hostName}: ${String(err)}`));
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
      storeReprobe(db, hostName, inv.data)
        .then(() => this.quarantines.fromProbes(hostName))
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
    socket.on(WorkerEvent.heartbeat, (raw, ack) => {
      // At once, not once stored: it says this controller runs (a slow database is judged apart, server/db-health.ts).
      if (typeof ack === 'function') ack({ ok: true });
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
      this.quarantines.quarantine(hostName, q.data).then(
        () => reply(ack, true),
        (err: unknown) => {
          log(`quarantine report from ${hostName}: ${String(err)}`);
          reply(ack, false, 'internal');
        },
      );
    });

    socket.on(WorkerEvent.jobOutput, (raw) => {
      // A socket this host replaced (or that was cut off) is heard no more.
      if (!current()) return;
      const out = JobOutput.safeParse(raw);
      if (!out.success) return;
      if (!this.running.fenceOk(hostName, out.data.jobId, out.data.fence)) return this.refusals.refused(hostName, WorkerEvent.jobOutput, out.data.jobId);
      const { jobId, seq, stream, data, lostFrom } = out.data;
      this.deps.metrics.output(data.length);
      this.running.printed(jobId);
      this.store(socket, jobId, hostName, seq, stream, data, lostFrom);
      this.deps.events.output(jobId, seq, stream, data);
    });

    // A terminal's output is live only: never stored, but it counts as activity for --idle-timeout.
    socket.on(WorkerEvent.ttyOutput, (raw) => {
      const out = TtyOutput.safeParse(raw);
      if (!out.success) return;
      if (!this.running.fenceOk(hostName, out.data.jobId, out.data.fence)) return this.refusals.refused(hostName, WorkerEvent.ttyOutput, out.data.jobId);
      this.running.printed(out.data.jobId);
      this.tty?.output(hostName, out.data);
    });

    socket.on(WorkerEvent.jobExit, (raw, ack) => {
      const exit = JobExit.safeParse(raw);
      if (!exit.success) return reply(ack, false, 'bad_exit');
      this.onExit(hostName, exit.data).then(
        (ok) => {
          if (!ok) this.refusals.refused(hostName, WorkerEvent.jobExit, exit.data.jobId);
          reply(ack, ok, ok ? undefined : 'stale_lease');
        },
        (err) => {
          log(`exit report for ${exit.data.jobId} failed: ${String(err)}`);
          reply(ack, false, 'internal');
        },
      );
    });
  }

  /**
   * Stores a chunk unless the job's output is past the bound; past it, keeps what fits and flags the job (replays then say so).
   * `lostFrom`: the worker let go of the chunks before this one from there (its buffer was full): the job is flagged too.
   */
  private store(socket: WorkerSocket, jobId: string, host: string, seq: number, stream: 1 | 2, data: Buffer, lostFrom?: number): void {
    const running = this.running;
    const handled = running.handledUpTo(jobId);
    if (seq <= handled) return;
    if (this.deps.writer.full) return this.overflow(socket, host);
    if (lostFrom !== undefined && Math.max(lostFrom, handled + 1) < seq) this.lost(jobId, host, Math.max(lostFrom, handled + 1), seq - 1);
    running.handled(jobId, seq, host);
    const before = running.stored(jobId) ?? 0;
    if (before === Infinity) return;
    const limit = this.deps.outputLimitBytes;
    if (before + data.length <= limit) {
      running.setStored(jobId, before + data.length);
      this.deps.writer.add({ jobId, seq, stream, data });
      return;
    }
    running.setStored(jobId, Infinity);
    // Keep what fits; replays then say that the rest was not stored.
    if (limit > before) this.deps.writer.add({ jobId, seq, stream, data: data.subarray(0, limit - before) });
    this.deps.engine.outputTruncated(jobId, 'output_limit').catch((err: unknown) => this.deps.log(`marking ${jobId} truncated: ${String(err)}`));
  }

  /**
   * Chunks from..to of the job's output are gone (its worker let go of them, never stored): the job says so, and why:
   * disk_full when the database was out of space while the worker was cut off for it.
   */
  private lost(jobId: string, host: string, from: number, to: number): void {
    const cut = this.cutAt.get(host);
    const reason = cut && (cut.full || this.deps.writer.fullSince(cut.at)) ? 'disk_full' : 'store_behind';
    const why = reason === 'disk_full' ? 'the database was out of disk space' : 'they could not be taken';
    this.deps.log(
      `job ${jobId}: output chunks ${from}..${to} were lost: ${why} for longer than the controller and the worker could hold them; its output is marked truncated (${reason})`,
    );
    this.deps.engine.outputTruncated(jobId, reason).catch((err: unknown) => this.deps.log(`marking ${jobId} truncated: ${String(err)}`));
  }

  /**
   * The database is too far behind to take more output: the chunk is not
   * taken (and so never acknowledged), and the worker is cut off, so nothing
   * later is taken past the gap either. It reconnects, and its hello (which
   * waits until the database caught up) tells it what to resend.
   */
  private overflow(socket: WorkerSocket, host: string): void {
    this.cutAt.set(host, { at: Date.now(), full: this.deps.writer.outOfSpaceSince !== null });
    this.deps.log(`the database is behind on storing output; disconnecting ${host}'s worker, which resends once it has caught up`);
    socket.disconnect(true);
  }

  /** A host heard from again after it was counted offline: what ended meanwhile is stopped now. */
  private async cameBack(hostName: string, socket: WorkerSocket): Promise<void> {
    for (const order of await this.reports.cameBack(hostName)) socket.emit(WorkerEvent.jobKill, order);
    this.deps.changed(hostName);
    this.deps.poke();
  }

  /** Tells the worker which output is stored, so it can let go of it. */
  private async ackStored(socket: WorkerSocket, hostName: string): Promise<void> {
    // What was handled before the drain is stored after it; later chunks wait for the next heartbeat.
    const handled = this.running.handledOn(hostName);
    if (!handled.length) return;
    // Not stored (the controller is stopping): not acknowledged; the worker resends it to the next controller.
    if (
      !(await this.deps.writer.drain().then(
        () => true,
        () => false,
      ))
    )
      return;
    for (const a of handled) socket.emit(WorkerEvent.jobAck, a);
  }

  /** Where the worker's jobs resume their output, once what was handled is stored. */
  private async resumePoints(hostName: string, hello: Hello): Promise<Record<string, number>> {
    await this.deps.writer.drain();
    return this.reports.resumePoints(hostName, hello);
  }

  /** A job's exit: every chunk before it is stored first, so `rc logs` is whole, and a terminal's last output is told before its end. */
  private async onExit(hostName: string, exit: JobExit): Promise<boolean> {
    // Said once per job, so that a job that shows running meanwhile is explained.
    if (this.deps.writer.outOfSpaceSince && this.running.fenceOk(hostName, exit.jobId, exit.fence) && !this.endWaits.has(exit.jobId)) {
      this.endWaits.add(exit.jobId);
      this.deps.log(`job ${exit.jobId} ended; its end is stored once its output is (the database is out of disk space)`);
    }
    // A drain that gives up (the controller stopping) throws: the end is not stored before its output, and the worker reports it again.
    await Promise.all([this.deps.writer.drain(), this.tty?.flushed(exit.jobId)]);
    this.endWaits.delete(exit.jobId);
    return this.reports.exit(hostName, exit);
  }
}

/** Answers a report, if the worker asked for an answer. */
function reply(ack: unknown, ok: boolean, code?: string): void {
  if (typeof ack === 'function') (ack as (r: ReportReply) => void)(code ? { ok, code } : { ok });
}
