// Interactive terminals: the socket.io namespace /tty. A client (rc run --tty,
// the dashboard's terminal page) opens a tty job or re-attaches to one, on
// any controller; keystrokes and resizes reach the job's worker wherever it
// is connected (orders through the bus), and the terminal's output comes back
// through Postgres (server/tty-relay.ts), which also keeps the last
// RC_TTY_REPLAY_BYTES for a re-attach. The job ends when nobody was attached,
// on any controller, for RC_TTY_GRACE_S (jobs.tty_seen_at).
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
import type { TtyRelay } from './tty-relay';
import type { TtyError } from '../protocol/wire';
import { webSubmitter, type Identity } from './auth';
import type { Db, Sql } from './db';
import type { JobEvents } from './job-events';
import type { WorkerHub } from './worker-hub';
import type { SocketIdentity } from './socket-auth';
import type { JobEngine } from './jobs/engine';
import { FINAL_STATES } from '../core/job-state';
import type { JobRow } from './jobs/job-view';
import { boundBacklog } from './socket-backlog';
import { zodCode, zodMessage } from '../protocol/zod-message';

/** Input is relayed in pieces of at most this many bytes: a bus message carries one (server/bus.ts). */
const INPUT_PIECE = 4096;

/** Unacknowledged bytes at which a client is too far behind: the terminal is paused. */
export const HIGH_WATER = 512 * 1024;
/** ...and below which it reads again. */
export const LOW_WATER = 128 * 1024;

export interface TtyOptions {
  /** Seconds a terminal may have nobody attached before its job is ended. */
  graceS: number;
  log: (msg: string) => void;
  /** RC_PUBLIC_URL, for the origin check of cookie-authenticated sockets. */
  publicUrl: string | null;
}

/** What the controller knows of a terminal client's socket. */
interface TtySocketData extends SocketIdentity {
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
  /** Bytes of the terminal's stream passed on to the client. */
  cursor: number;
  /** Reads from the relay for the client, one at a time. */
  reading: Promise<void>;
  client: TtySocket | null;
  /** Bytes sent to the client that it has not acknowledged. */
  unacked: number;
  paused: boolean;
  /** Bytes from the worker not yet acknowledged to it because the client is behind: told once it catches up. */
  heldAck: { fence: number; bytes: number } | null;
  /**
   * The stream's end as far as this controller has seen it stored. The client
   * is behind while its cursor is short of it, and reads on from the relay at
   * its acknowledgements. Only ever raised: a read that was slower than a
   * store cannot make the client look caught up.
   */
  storedTo: number;
  /** A read from the relay is queued and has not begun: another would find nothing more. */
  readQueued: boolean;
  grace: NodeJS.Timeout | null;
  unsubscribe: () => void;
}

/** What terminals need of the controller. */
export interface TtyDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  hub: WorkerHub;
  /** The job engine: a terminal is submitted, seen and stopped through it. */
  engine: Pick<JobEngine, 'submit' | 'stop' | 'ttySeen'>;
  relay: TtyRelay;
  /** Whether a host's worker is connected to this controller. */
  holds: (hostName: string) => boolean;
  /** Tells the other controllers that output of a terminal was stored. */
  publish: (jobId: string, from: number, to: number) => void;
  /** Tells the other controllers that a client attached to the terminal here. */
  attached: (jobId: string) => void;
}

export class TtyHub {
  private readonly sessions = new Map<string, Session>();
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly c: TtyDeps,
    private readonly opts: TtyOptions,
  ) {
    c.hub.tty = {
      sizeOf: (jobId) => this.sessions.get(jobId)?.size ?? null,
      started: (job) => this.onStarted(job),
      output: (host, out) => this.onOutput(host, out),
      flushed: (jobId) => this.c.relay.flushed(jobId),
    };
  }

  /** Another controller stored output of a terminal: a client attached here gets it. */
  stored(jobId: string, to: number): void {
    const s = this.sessions.get(jobId);
    if (!s) return;
    s.storedTo = Math.max(s.storedTo, to);
    this.catchUp(s);
  }

  /** Takes the /tty namespace, whose sockets `auth` has signed in (server/socket-auth.ts). */
  async start(io: Server, auth: (socket: Socket, next: (err?: Error) => void) => void): Promise<void> {
    // socket.io types all of a Server's namespaces alike; this one's events are protocol/events.ts's.
    const ns = io.of(TTY_NAMESPACE) as unknown as TtyNamespace;
    ns.use(auth as unknown as Parameters<TtyNamespace['use']>[0]);
    ns.on('connection', (socket) => this.onConnection(socket));
    // Terminals running from before a controller restart: whoever opened them has this long to come back.
    const rows = await this.c.db.select().from(jobs).where(eq(jobs.kind, 'tty'));
    for (const job of rows) if (!FINAL_STATES.has(job.state)) this.graceStart(this.session(job));
    // Attached here: said in the database, so a controller where the client is not does not end the terminal.
    const seenEvery = Math.min(5000, (this.opts.graceS * 1000) / 3);
    this.timers.push(setInterval(() => void this.seen([...this.sessions.values()].filter((s) => s.client)), seenEvery));
    this.timers.push(
      setInterval(() => {
        this.c.relay.pruneEnded().catch((err: unknown) => this.opts.log(`pruning terminal output: ${String(err)}`));
      }, 60_000),
    );
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const s of this.sessions.values()) this.drop(s);
  }

  /** These sessions' clients are attached now. */
  private seen(sessions: Session[]): Promise<void> {
    if (!sessions.length) return Promise.resolve();
    const ids = sessions.map((s) => s.jobId);
    return this.c.engine.ttySeen(ids).then(
      () => {},
      (err: unknown) => this.opts.log(`noting attached terminals: ${String(err)}`),
    );
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
      // In pieces a bus message can carry, should the worker be connected to another controller.
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      for (let at = 0; at < bytes.length; at += INPUT_PIECE) {
        this.c.hub.order(s.host, WorkerEvent.ttyInput, { jobId: s.jobId, fence: s.fence, data: bytes.subarray(at, at + INPUT_PIECE) });
      }
    });
    socket.on(TtyEvent.resize, (raw) => {
      const s = this.mine(socket);
      const size = TtySize.safeParse(raw);
      if (!s || !size.success) return;
      s.size = size.data;
      if (s.host && s.fence !== null) this.c.hub.order(s.host, WorkerEvent.ttyResize, { jobId: s.jobId, fence: s.fence, ...size.data });
    });
    socket.on(TtyEvent.ack, (bytes) => {
      const s = this.mine(socket);
      if (!s || typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return;
      s.unacked = Math.max(0, s.unacked - bytes);
      this.flow(s);
      this.catchUp(s);
    });
    socket.on('disconnect', () => {
      const s = this.mine(socket);
      if (!s) return;
      void this.seen([s]);
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
      gpu: open.gpu ?? null,
      priority: open.priority,
      wait: open.wait,
      waitTimeoutS: open.waitTimeoutS ?? null,
      maxRuntimeS: open.maxRuntimeS ?? null,
      idleTimeoutS: open.idleTimeoutS ?? null,
      gpuIdleTimeoutS: open.gpuIdleTimeoutS ?? null,
    });
    if (!body.success) throw new RcError(zodCode(body.error), zodMessage(body.error));
    await this.c.engine.submit(identity, body.data, (job, position) => {
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
    // The replay, and whatever is stored while it is read, in order after it.
    s.cursor = open.after ?? 0;
    s.reading = s.reading.then(async () => {
      const replay = await this.c.relay.since(jobId, s.cursor);
      if (s.client !== socket) return;
      socket.emit(TtyEvent.started, { jobId, host: s.host!, devices: job.devices ?? [], offset: replay.offset });
      if (s.fence !== null) this.c.hub.order(s.host!, WorkerEvent.ttyResize, { jobId, fence: s.fence, ...s.size });
      s.cursor = replay.offset + replay.data.length;
      s.storedTo = Math.max(s.storedTo, s.cursor);
      if (replay.data.length) this.send(s, replay.data);
    });
    await s.reading;
  }

  /** A client behind the stored stream that may be sent more reads on from the relay. */
  private catchUp(s: Session): void {
    if (s.client && !s.paused && !s.readQueued && s.cursor < s.storedTo) this.readFor(s);
  }

  /** Passes on to the client what the relay has after its cursor. */
  private readFor(s: Session): void {
    s.readQueued = true;
    s.reading = s.reading
      .then(async () => {
        s.readQueued = false;
        const client = s.client;
        if (!client) return;
        const more = await this.c.relay.since(s.jobId, s.cursor);
        s.storedTo = Math.max(s.storedTo, more.offset + more.data.length);
        if (s.client !== client) return;
        // Output passed on directly while this read was on its way is not sent twice.
        const fresh = s.cursor > more.offset ? more.data.subarray(s.cursor - more.offset) : more.data;
        const from = Math.max(s.cursor, more.offset);
        // No further than the high-water mark: a client that fell behind catches up at its own pace, as the program's output would reach it.
        const room = Math.max(0, HIGH_WATER - s.unacked);
        const data = fresh.length > room ? fresh.subarray(0, room) : fresh;
        if (!data.length) return;
        s.cursor = from + data.length;
        this.send(s, data);
      })
      .catch((err: unknown) => this.opts.log(`terminal ${s.jobId}: reading its output: ${String(err)}`));
  }

  private session(job: JobRow): Session {
    let s = this.sessions.get(job.id);
    if (s) return s;
    s = {
      jobId: job.id,
      fence: job.state === 'running' ? job.fence : null,
      host: job.state === 'running' ? job.hostName : null,
      size: { cols: 80, rows: 24 },
      cursor: 0,
      reading: Promise.resolve(),
      client: null,
      unacked: 0,
      paused: false,
      heldAck: null,
      storedTo: 0,
      readQueued: false,
      grace: null,
      unsubscribe: () => {},
    };
    const session = s;
    s.unsubscribe = this.c.events.subscribe(job.id, (item) => {
      if (item.kind !== 'event') return;
      const e = item.event;
      if (e.type === 'started') void this.startedElsewhere(session, e.host, e.devices);
      if (e.type === 'exit') {
        // After the output read before it: the program's last words come before its end.
        void session.reading.then(() => {
          session.client?.emit(TtyEvent.exit, { jobId: e.jobId, state: e.state, exitCode: e.exitCode, reason: e.reason, cause: e.cause });
          this.drop(session);
        });
      }
    });
    this.sessions.set(job.id, s);
    return s;
  }

  private bind(s: Session, socket: TtySocket): void {
    if (s.client && s.client !== socket) this.detach(s);
    // A client of it on another controller is detached there.
    this.c.attached(s.jobId);
    s.client = socket;
    s.unacked = 0;
    socket.data.jobId = s.jobId;
    if (s.grace) {
      clearTimeout(s.grace);
      s.grace = null;
    }
    this.flow(s);
  }

  /** A client of the terminal attached on another controller: the one here is detached, as a second one here would detach it. */
  attachedElsewhere(jobId: string): void {
    const s = this.sessions.get(jobId);
    if (!s?.client) return;
    this.detach(s);
    s.client = null;
    s.unacked = 0;
    this.flow(s);
    this.graceStart(s);
  }

  private detach(s: Session): void {
    const old = s.client!;
    old.data.jobId = null;
    old.emit(TtyEvent.error, { code: 'detached', message: `the terminal ${s.jobId} was opened elsewhere` });
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

  /** The terminal started, here or on another controller: the client learns it, and its size reaches the worker. */
  private async startedElsewhere(s: Session, host: string, devices: string[]): Promise<void> {
    if (s.fence === null) {
      const [row] = await this.c.db.select({ fence: jobs.fence, host: jobs.hostName }).from(jobs).where(eq(jobs.id, s.jobId));
      s.fence = row?.fence ?? null;
      s.host = row?.host ?? host;
    }
    // Started by the controller that holds the worker, which did not know the client's size.
    if (s.client && s.fence !== null && !this.c.holds(host)) this.c.hub.order(host, WorkerEvent.ttyResize, { jobId: s.jobId, fence: s.fence, ...s.size });
    s.client?.emit(TtyEvent.started, { jobId: s.jobId, host, devices, offset: s.cursor });
    if (!s.client) this.graceStart(s);
  }

  /**
   * Output from a worker connected here: stored (the relay, which holds at
   * most about the replay's worth of it), passed on to a client here at once
   * when its place in the stream is known, and acknowledged to the worker at
   * once while the client keeps up: only the client's pace holds the program
   * back. While it is behind, the acknowledgement waits too, so the worker
   * stops at its window even before the pause order reaches it (a fast
   * program otherwise pours out megabytes in that time on a loaded machine).
   */
  private onOutput(host: string, out: TtyOutput): void {
    const ack = () => {
      const held = this.sessions.get(out.jobId);
      if (held?.paused && held.client) {
        held.heldAck = { fence: out.fence, bytes: (held.heldAck?.fence === out.fence ? held.heldAck.bytes : 0) + out.data.length };
        return;
      }
      this.c.hub.emitTo(host, WorkerEvent.ttyAck, { jobId: out.jobId, fence: out.fence, bytes: out.data.length });
    };
    const at = this.c.relay.expected(out.jobId);
    const stored = this.c.relay.append(out.jobId, out.data);
    const s = this.sessions.get(out.jobId);
    // Passed on at once only while the client keeps up; a client behind reads it from the relay at its own pace.
    const passed = at !== null && s?.client != null && !s.paused && s.cursor === at;
    if (passed) {
      s!.cursor = at + out.data.length;
      this.send(s!, out.data);
    }
    // A client here waiting for this output: the worker hears of it once the client has had it (or, behind, later still).
    const ackLater = !passed && s?.client != null;
    if (!ackLater) ack();
    const after = (st: Awaited<typeof stored>) => {
      if (!st) return;
      // Once per row: chunks stored together are told together.
      if (st.to === st.row.to) this.c.publish(out.jobId, st.row.from, st.row.to);
      if (passed) return;
      const later = this.sessions.get(out.jobId);
      if (!later) return;
      later.storedTo = Math.max(later.storedTo, st.to);
      if (later.client && !later.paused && later.cursor === st.from) {
        later.cursor = st.to;
        this.send(later, out.data);
      } else this.catchUp(later);
    };
    void stored.then(
      (st) => {
        try {
          after(st);
        } finally {
          if (ackLater) ack();
        }
      },
      () => {
        if (ackLater) ack();
      },
    );
  }

  private send(s: Session, data: Buffer): void {
    if (!data.length) return;
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
    this.c.hub.order(s.host, behind ? WorkerEvent.ttyPause : WorkerEvent.ttyResume, { jobId: s.jobId, fence: s.fence });
    if (!behind && s.heldAck) {
      const { fence, bytes } = s.heldAck;
      s.heldAck = null;
      if (fence === s.fence) this.c.hub.emitTo(s.host, WorkerEvent.ttyAck, { jobId: s.jobId, fence, bytes });
    }
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
    // Attached on another controller meanwhile (or until lately): the grace counts from when it was last seen.
    const seenAgo = job.ttySeenAt ? Date.now() - job.ttySeenAt.getTime() : Number.POSITIVE_INFINITY;
    const s = this.sessions.get(jobId);
    if (seenAgo < this.opts.graceS * 1000 && s) {
      s.grace = setTimeout(
        () => {
          s.grace = null;
          if (!s.client) void this.endUnattended(jobId).catch((err: unknown) => this.opts.log(`ending the unattended terminal ${jobId}: ${String(err)}`));
        },
        this.opts.graceS * 1000 - seenAgo + 50,
      );
      s.grace.unref();
      return;
    }
    // The controller's own decision: no submitter, no token, so no "killed by" (a kill asked for earlier keeps its reason).
    await this.c.engine.stop(job, `closed: nobody was attached to the terminal for ${this.opts.graceS}s`, 'unattended');
  }

  private drop(s: Session): void {
    if (s.grace) clearTimeout(s.grace);
    s.unsubscribe();
    if (s.client) s.client.data.jobId = null;
    this.sessions.delete(s.jobId);
  }
}
