// Interactive terminals: the socket.io namespace /tty. A client (rc run --tty,
// the dashboard's terminal page) opens a tty job or re-attaches to one; the
// controller relays keystrokes and resizes to the job's worker and the
// terminal's output back, keeps the last RC_TTY_REPLAY_BYTES of it for a
// re-attach, and ends the job when nobody was attached for RC_TTY_GRACE_S.
//
// Flow control, end to end: the client acknowledges the bytes it has written
// (xterm's write callback, or stdout's); past HIGH_WATER unacknowledged bytes
// the controller pauses the worker's terminal (pty.pause(): the program blocks
// on its writes) and resumes it below LOW_WATER. The worker itself sends at
// most TTY_WORKER_WINDOW bytes before the controller's tty:ack. The client's
// acknowledgements are its word only: one that acknowledges without reading
// is cut once SOCKET_BACKLOG_BYTES wait for it (server/socket-backlog.ts).
import { eq } from 'drizzle-orm';
import type { Namespace, Server, Socket } from 'socket.io';
import { RcError } from '../core/errors';
import { jobs } from '../db/schema';
import { SubmitJob } from '../protocol/api';
import { TTY_NAMESPACE, type TtyClientToController, type TtyControllerToClient, TtyEvent, type Unchecked, WorkerEvent } from '../protocol/events';
import { TTY_MAX_INPUT, TtyOpen, TtySize, type TtyOutput } from '../protocol/tty';
import type { TtyError } from '../protocol/wire';
import { identify, webSubmitter, type Identity } from './auth';
import type { Db, Sql } from './db';
import type { JobEvents } from './job-events';
import type { Scheduler } from './scheduler';
import type { WorkerHub } from './worker-hub';
import { socketCredential } from './socket-auth';
import { stopJob } from './jobs/kill';
import { startJob } from './jobs/start';
import { FINAL_STATES } from '../core/job-state';
import type { JobRow } from './jobs/job-view';
import { boundBacklog } from './socket-backlog';
import { zodCode, zodMessage } from '../protocol/zod-message';

/** Unacknowledged bytes at which a client is too far behind: the terminal is paused. */
export const HIGH_WATER = 512 * 1024;
/** ...and below which it reads again. */
export const LOW_WATER = 128 * 1024;

export interface TtyOptions {
  /** Seconds a terminal may have nobody attached before its job is ended. */
  graceS: number;
  /** Bytes of recent output kept per terminal, replayed on re-attach. */
  replayBytes: number;
  log: (msg: string) => void;
  /** RC_PUBLIC_URL, for the origin check of cookie-authenticated sockets. */
  publicUrl: string | null;
}

/** The last `cap` bytes of a stream, and how many bytes the stream has had in all. */
export class Ring {
  private chunks: Buffer[] = [];
  bytes = 0;
  total = 0;
  constructor(readonly cap: number) {}

  append(data: Buffer): void {
    if (data.length >= this.cap) {
      this.chunks = [Buffer.from(data.subarray(data.length - this.cap))];
      this.bytes = this.cap;
    } else {
      this.chunks.push(data);
      this.bytes += data.length;
      while (this.bytes > this.cap) {
        const first = this.chunks[0]!;
        const over = this.bytes - this.cap;
        if (first.length <= over) {
          this.chunks.shift();
          this.bytes -= first.length;
        } else {
          this.chunks[0] = Buffer.from(first.subarray(over));
          this.bytes -= over;
        }
      }
    }
    this.total += data.length;
  }

  /** Where the kept bytes start in the stream. */
  get start(): number {
    return this.total - this.bytes;
  }

  /** The kept bytes from stream offset `after` (or from the oldest kept one). */
  since(after: number): { offset: number; data: Buffer } {
    const offset = Math.min(this.total, Math.max(after, this.start));
    return { offset, data: Buffer.concat(this.chunks).subarray(offset - this.start) };
  }
}

/** What the controller knows of a terminal client's socket. */
interface TtySocketData {
  identity: Identity;
  /** The token it signed in with (cut when revoked). */
  tokenId: number;
  /** Signed in with the browser's session cookie (the dashboard). */
  web: boolean;
  /** The terminal it is attached to. */
  jobId: string | null;
}
type TtyNamespace = Namespace<Unchecked<TtyClientToController>, TtyControllerToClient, Record<string, never>, TtySocketData>;
type TtySocket = Socket<Unchecked<TtyClientToController>, TtyControllerToClient, Record<string, never>, TtySocketData>;

interface Session {
  jobId: string;
  fence: number | null;
  host: string | null;
  size: { cols: number; rows: number };
  ring: Ring;
  client: TtySocket | null;
  /** Bytes sent to the client that it has not acknowledged. */
  unacked: number;
  paused: boolean;
  grace: NodeJS.Timeout | null;
  unsubscribe: () => void;
}

/** What terminals need of the controller. */
export interface TtyDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  hub: WorkerHub;
  scheduler: Scheduler;
}

export class TtyHub {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly c: TtyDeps,
    private readonly opts: TtyOptions,
  ) {
    c.hub.tty = {
      sizeOf: (jobId) => this.sessions.get(jobId)?.size ?? null,
      started: (job) => this.onStarted(job),
      output: (host, out) => this.onOutput(host, out),
    };
  }

  /** Bytes of output each terminal keeps for a re-attach (for tests and the docs). */
  get replayBytes(): number {
    return this.opts.replayBytes;
  }

  /** Sessions and the bytes they hold now. */
  stats(): { sessions: number; ringBytes: number; unacked: number } {
    let ringBytes = 0;
    let unacked = 0;
    for (const s of this.sessions.values()) {
      ringBytes += s.ring.bytes;
      unacked += s.unacked;
    }
    return { sessions: this.sessions.size, ringBytes, unacked };
  }

  async start(io: Server): Promise<void> {
    // socket.io types all of a Server's namespaces alike; this one's events are protocol/events.ts's.
    const ns = io.of(TTY_NAMESPACE) as unknown as TtyNamespace;
    ns.use((socket, next) => {
      const cred = socketCredential(socket.handshake, this.opts.publicUrl);
      if (!cred.ok) return next(new Error(cred.message));
      identify(this.c.db, cred.secret).then(
        (id) => {
          if (!id || id.kind === 'host') return next(new Error('unauthorized: a client or admin token is required'));
          socket.data.identity = id;
          socket.data.tokenId = id.tokenId;
          socket.data.web = cred.web;
          next();
        },
        () => next(new Error('unavailable')),
      );
    });
    ns.on('connection', (socket) => this.onConnection(socket));
    // Terminals running from before a controller restart: whoever opened them has this long to come back.
    const rows = await this.c.db.select().from(jobs).where(eq(jobs.kind, 'tty'));
    for (const job of rows) if (!FINAL_STATES.has(job.state)) this.graceStart(this.session(job));
  }

  stop(): void {
    for (const s of this.sessions.values()) this.drop(s);
  }

  private onConnection(socket: TtySocket): void {
    boundBacklog(socket, this.opts.log);
    const identity = socket.data.identity;
    const fail = (err: unknown) => {
      if (!(err instanceof RcError)) this.opts.log(`terminal: ${err instanceof Error ? err.stack : String(err)}`);
      const body: TtyError =
        err instanceof RcError
          ? { code: err.code, message: err.message }
          : { code: 'internal', message: 'the controller hit an internal error; its log has the details' };
      socket.emit(TtyEvent.error, body);
    };
    socket.on(TtyEvent.open, (raw) => {
      if (socket.data.jobId) return fail(new RcError('bad_request', 'this socket already has a terminal; open another socket'));
      const parsed = TtyOpen.safeParse(raw);
      if (!parsed.success) return fail(new RcError(zodCode(parsed.error), zodMessage(parsed.error)));
      const open = parsed.data;
      (open.jobId ? this.attach(socket, identity, open.jobId, open) : this.submit(socket, identity, open)).catch(fail);
    });
    socket.on(TtyEvent.input, (data) => {
      const s = this.mine(socket);
      if (!s?.host || s.fence === null) return;
      if (!(typeof data === 'string' || Buffer.isBuffer(data)) || data.length > TTY_MAX_INPUT) return;
      this.c.hub.emitTo(s.host, WorkerEvent.ttyInput, { jobId: s.jobId, fence: s.fence, data });
    });
    socket.on(TtyEvent.resize, (raw) => {
      const s = this.mine(socket);
      const size = TtySize.safeParse(raw);
      if (!s || !size.success) return;
      s.size = size.data;
      if (s.host && s.fence !== null) this.c.hub.emitTo(s.host, WorkerEvent.ttyResize, { jobId: s.jobId, fence: s.fence, ...size.data });
    });
    socket.on(TtyEvent.ack, (bytes) => {
      const s = this.mine(socket);
      if (!s || typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return;
      s.unacked = Math.max(0, s.unacked - bytes);
      this.flow(s);
    });
    socket.on('disconnect', () => {
      const s = this.mine(socket);
      if (!s) return;
      s.client = null;
      s.unacked = 0;
      this.flow(s);
      this.graceStart(s);
    });
  }

  /**
   * A new terminal: a tty job through the same submit as POST /api/jobs (selector, device and
   * quarantine checks, and the token's binding). The dashboard's submitter is webSubmitter's.
   */
  private async submit(socket: TtySocket, identity: Identity, open: TtyOpen): Promise<void> {
    const submitter = socket.data.web ? webSubmitter(identity) : open.submitter;
    if (!submitter) throw new RcError('bad_request', 'submitter: required (RC_SUBMITTER)');
    const body = SubmitJob.safeParse({
      kind: 'tty',
      argv: open.argv,
      name: open.name ?? null,
      env: open.env ?? null,
      selector: open.selector,
      device: open.device ?? null,
      cwd: open.cwd ?? null,
      submitter,
      gpus: open.gpus,
      priority: open.priority,
      wait: open.wait,
      waitTimeoutS: open.waitTimeoutS ?? null,
      maxRuntimeS: open.maxRuntimeS ?? null,
      idleTimeoutS: open.idleTimeoutS ?? null,
    });
    if (!body.success) throw new RcError(zodCode(body.error), zodMessage(body.error));
    await startJob(this.c, identity, body.data, (job, position) => {
      // Bound before the job is sent to its worker: the start carries the client's size.
      const s = this.session(job);
      s.size = { cols: open.cols, rows: open.rows };
      this.bind(s, socket);
      socket.emit(TtyEvent.queued, { jobId: job.id, position });
    });
  }

  /** Back to a terminal after a reload or a dropped connection: the recent screen is replayed. */
  private async attach(socket: TtySocket, identity: Identity, jobId: string, open: TtyOpen): Promise<void> {
    const [job] = await this.c.db.select().from(jobs).where(eq(jobs.id, jobId));
    if (job?.kind !== 'tty') throw new RcError('not_found', `no terminal job ${jobId}`);
    if (job.tokenId !== identity.tokenId && identity.kind !== 'admin')
      throw new RcError('not_job_owner', `the terminal ${jobId} was opened with another token`);
    if (FINAL_STATES.has(job.state)) {
      socket.emit(TtyEvent.exit, { jobId, state: job.state, exitCode: job.exitCode, reason: job.reason, cause: job.endCause });
      return;
    }
    const s = this.session(job);
    this.bind(s, socket);
    s.size = { cols: open.cols, rows: open.rows };
    if (s.host === null) {
      socket.emit(TtyEvent.queued, { jobId, position: null });
      return;
    }
    const replay = s.ring.since(open.after ?? 0);
    socket.emit(TtyEvent.started, { jobId, host: s.host, devices: job.devices ?? [], offset: replay.offset });
    if (s.fence !== null) this.c.hub.emitTo(s.host, WorkerEvent.ttyResize, { jobId, fence: s.fence, ...s.size });
    if (replay.data.length) this.send(s, replay.data);
  }

  private session(job: JobRow): Session {
    let s = this.sessions.get(job.id);
    if (s) return s;
    s = {
      jobId: job.id,
      fence: job.state === 'running' ? job.fence : null,
      host: job.state === 'running' ? job.hostName : null,
      size: { cols: 80, rows: 24 },
      ring: new Ring(this.opts.replayBytes),
      client: null,
      unacked: 0,
      paused: false,
      grace: null,
      unsubscribe: () => {},
    };
    const session = s;
    s.unsubscribe = this.c.events.subscribe(job.id, (item) => {
      if (item.kind !== 'event') return;
      const e = item.event;
      if (e.type === 'started') session.client?.emit(TtyEvent.started, { jobId: e.jobId, host: e.host, devices: e.devices, offset: session.ring.total });
      if (e.type === 'exit') {
        session.client?.emit(TtyEvent.exit, { jobId: e.jobId, state: e.state, exitCode: e.exitCode, reason: e.reason, cause: e.cause });
        this.drop(session);
      }
    });
    this.sessions.set(job.id, s);
    return s;
  }

  private bind(s: Session, socket: TtySocket): void {
    if (s.client && s.client !== socket) {
      const old = s.client;
      old.data.jobId = null;
      old.emit(TtyEvent.error, { code: 'detached', message: `the terminal ${s.jobId} was opened elsewhere` });
    }
    s.client = socket;
    s.unacked = 0;
    socket.data.jobId = s.jobId;
    if (s.grace) {
      clearTimeout(s.grace);
      s.grace = null;
    }
    this.flow(s);
  }

  private mine(socket: TtySocket): Session | null {
    const s = socket.data.jobId ? this.sessions.get(socket.data.jobId) : undefined;
    return s && s.client === socket ? s : null;
  }

  private onStarted(job: JobRow): void {
    const s = this.session(job);
    s.fence = job.fence;
    s.host = job.hostName;
    if (!s.client) this.graceStart(s);
  }

  private onOutput(host: string, out: TtyOutput): void {
    // Taken: the worker may send more (its window). Only the pause below holds it back.
    this.c.hub.emitTo(host, WorkerEvent.ttyAck, { jobId: out.jobId, fence: out.fence, bytes: out.data.length });
    const s = this.sessions.get(out.jobId);
    if (!s) return;
    s.ring.append(out.data);
    if (s.client) this.send(s, out.data);
  }

  private send(s: Session, data: Buffer): void {
    s.unacked += data.length;
    s.client!.emit(TtyEvent.output, data);
    this.flow(s);
  }

  /** Pauses the worker's terminal while the client is too far behind; resumes it when it has caught up (or left). */
  private flow(s: Session): void {
    if (!s.host || s.fence === null) return;
    const behind = s.client !== null && (s.paused ? s.unacked > LOW_WATER : s.unacked > HIGH_WATER);
    if (behind === s.paused) return;
    s.paused = behind;
    this.c.hub.emitTo(s.host, behind ? WorkerEvent.ttyPause : WorkerEvent.ttyResume, { jobId: s.jobId, fence: s.fence });
  }

  private graceStart(s: Session): void {
    if (s.grace || s.client) return;
    s.grace = setTimeout(() => {
      s.grace = null;
      if (s.client) return;
      void this.endUnattended(s.jobId).catch((err: unknown) => this.opts.log(`ending the unattended terminal ${s.jobId}: ${String(err)}`));
    }, this.opts.graceS * 1000);
    s.grace.unref();
  }

  /** Nobody came back within the grace period: the job ends (cancelled if still queued) and frees its device. */
  private async endUnattended(jobId: string): Promise<void> {
    const [job] = await this.c.db.select().from(jobs).where(eq(jobs.id, jobId));
    if (!job || FINAL_STATES.has(job.state)) return;
    // The controller's own decision: no submitter, no token, so no "killed by" (a kill asked for earlier keeps its reason).
    await stopJob(this.c, job, `closed: nobody was attached to the terminal for ${this.opts.graceS}s`, 'unattended');
  }

  private drop(s: Session): void {
    if (s.grace) clearTimeout(s.grace);
    s.unsubscribe();
    if (s.client) s.client.data.jobId = null;
    this.sessions.delete(s.jobId);
  }
}
