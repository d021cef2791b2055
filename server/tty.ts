// Interactive terminals: the socket.io namespace /tty. A client (rc run --tty,
// the dashboard's terminal page) opens a tty job or re-attaches to one, on
// any controller; keystrokes and resizes reach the job's worker wherever it
// is connected (orders through the bus), and the terminal's output comes back
// through Postgres (server/tty-relay.ts), which also keeps the last
// RC_TTY_REPLAY_BYTES for a re-attach. The job ends when nobody was attached,
// on any controller, for RC_TTY_GRACE_S (jobs.tty_seen_at).
//
// Several clients of one token share a terminal, as tmux shares a session:
// each gets the output, any may type, and the latest to open it, resize it or
// type into it (on this controller) sets its size. Another token's client is
// refused while they are attached (server/tty-viewers.ts has the rule).
//
// Flow control, end to end: the client acknowledges the bytes it has written
// (xterm's write callback, or stdout's); past HIGH_WATER unacknowledged bytes
// the controller pauses the worker's terminal (pty.pause(): the program blocks
// on its writes) and resumes it below LOW_WATER: the slowest client sets the
// pace. The worker itself sends at
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
import { admitViewer, busyMessage, type Holder, pruneViewers, recordViewers, ruleFor, type Viewer, viewerOf, viewersLeft, viewersSeen } from './tty-viewers';

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

type Size = { cols: number; rows: number };

/** A client attached to a terminal here. */
interface Client {
  socket: TtySocket;
  /** Its screen's size, as it last said. */
  size: Size;
  /** Bytes of the terminal's stream passed on to it. */
  cursor: number;
  /** Bytes sent to it that it has not acknowledged. */
  unacked: number;
  /** Reads from the relay for it, one at a time. */
  reading: Promise<void>;
  /** A read from the relay is queued and has not begun: another would find nothing more. */
  readQueued: boolean;
}

interface Session {
  jobId: string;
  fence: number | null;
  host: string | null;
  /** The terminal's size: the latest client's here to open, resize or type (a queued terminal starts with it). */
  size: Size;
  /** Whose size that is. */
  sizedBy: Client | null;
  /** The clients attached here, in the order they came; all of one token, `holder`'s. */
  clients: Map<TtySocket, Client>;
  holder: Holder | null;
  /** The worker's terminal is paused: a client is too far behind. */
  paused: boolean;
  /** Bytes from the worker not yet acknowledged to it because a client is behind: told once it catches up. */
  heldAck: { fence: number; bytes: number } | null;
  /**
   * The stream's end as far as this controller has seen it stored. A client
   * is behind while its cursor is short of it, and reads on from the relay at
   * its acknowledgements. Only ever raised: a read that was slower than a
   * store cannot make a client look caught up.
   */
  storedTo: number;
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
  /** Tells the other controllers that a client of `viewer` attached to the terminal here: their clients of another token are detached. */
  attached: (jobId: string, viewer: Viewer) => void;
  /** This controller, as the others know it (its bus id): whose tty_viewers rows are whose. */
  controllerId: string;
}

export class TtyHub {
  private readonly sessions = new Map<string, Session>();
  private timers: NodeJS.Timeout[] = [];
  /** How often this controller says its terminals' clients are still attached. */
  private readonly seenEveryMs: number;
  /** A tty_viewers row not refreshed for this long is no one's (its controller died holding it). */
  private readonly staleS: number;
  /** This controller's tty_viewers writes by terminal, one after another: a client leaving and the next joining land in order. */
  private readonly rowWrites = new Map<string, Promise<void>>();

  constructor(
    private readonly c: TtyDeps,
    private readonly opts: TtyOptions,
  ) {
    this.seenEveryMs = Math.min(5000, (opts.graceS * 1000) / 3);
    this.staleS = (3 * this.seenEveryMs) / 1000;
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
    for (const client of s.clients.values()) this.catchUp(s, client);
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
    // Attached here: said in the database, so a controller where the client is not does not end the terminal, nor lets another token in.
    this.timers.push(setInterval(() => void this.seen([...this.sessions.values()].filter((s) => s.clients.size)), this.seenEveryMs));
    this.timers.push(
      setInterval(() => {
        this.c.relay.pruneEnded().catch((err: unknown) => this.opts.log(`pruning terminal output: ${String(err)}`));
        pruneViewers(this.c.sql, this.staleS).catch((err: unknown) => this.opts.log(`pruning terminal clients: ${String(err)}`));
      }, 60_000),
    );
  }

  /** Resolves once this controller's tty_viewers rows are gone (within a second: a row left behind goes stale). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const s of this.sessions.values()) this.drop(s);
    await Promise.race([Promise.all(this.rowWrites.values()), new Promise((r) => setTimeout(r, 1000).unref())]);
  }

  /** These sessions' clients are attached now (or were until now). */
  private seen(sessions: Session[]): Promise<void> {
    if (!sessions.length) return Promise.resolve();
    const ids = sessions.map((s) => s.jobId);
    const held = sessions.flatMap((s) => (s.holder && s.clients.size ? [{ jobId: s.jobId, viewer: s.holder }] : []));
    return Promise.all([this.c.engine.ttySeen(ids), viewersSeen(this.c.sql, this.c.controllerId, held)]).then(
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
      const [s, client] = this.mine(socket);
      if (!s?.host || s.fence === null || !client) return;
      if (!(typeof data === 'string' || Buffer.isBuffer(data)) || data.length > TTY_MAX_INPUT) return;
      // The one typing has the terminal at its size.
      if (s.sizedBy !== client) this.resize(s, client);
      // In pieces a bus message can carry, should the worker be connected to another controller.
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      for (let at = 0; at < bytes.length; at += INPUT_PIECE) {
        this.c.hub.order(s.host, WorkerEvent.ttyInput, { jobId: s.jobId, fence: s.fence, data: bytes.subarray(at, at + INPUT_PIECE) });
      }
    });
    socket.on(TtyEvent.resize, (raw) => {
      const [s, client] = this.mine(socket);
      const size = TtySize.safeParse(raw);
      if (!s || !client || !size.success) return;
      client.size = size.data;
      this.resize(s, client);
    });
    socket.on(TtyEvent.ack, (bytes) => {
      const [s, client] = this.mine(socket);
      if (!s || !client || typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return;
      client.unacked = Math.max(0, client.unacked - bytes);
      this.flow(s);
      this.catchUp(s, client);
    });
    socket.on('disconnect', () => {
      const [s, client] = this.mine(socket);
      if (s && client) this.leave(s, client);
    });
  }

  /** The terminal takes this client's size (the latest to open, resize or type). */
  private resize(s: Session, client: Client): void {
    s.size = client.size;
    s.sizedBy = client;
    if (s.host && s.fence !== null) this.c.hub.order(s.host, WorkerEvent.ttyResize, { jobId: s.jobId, fence: s.fence, ...s.size });
  }

  /** A client leaves the terminal here (it disconnected, or was detached); with the last one, the grace period starts. */
  private leave(s: Session, client: Client): void {
    s.clients.delete(client.socket);
    if (client.socket.data.jobId === s.jobId) client.socket.data.jobId = null;
    if (s.sizedBy === client) s.sizedBy = null;
    // The one behind has gone: the others may set the pace again.
    this.flow(s);
    if (s.clients.size) return;
    void this.seen([s]);
    s.holder = null;
    this.nobodyHere(s.jobId);
    this.graceStart(s);
  }

  /** No client of the terminal is attached here (any more): this controller's row goes, after the writes before it. */
  private nobodyHere(jobId: string): void {
    this.writeRow(jobId, () => viewersLeft(this.c.sql, jobId, this.c.controllerId));
  }

  /** This controller's tty_viewers row of the terminal, written after the writes before it. */
  private writeRow(jobId: string, change: () => Promise<void>): void {
    const write = (this.rowWrites.get(jobId) ?? Promise.resolve())
      .then(change)
      .catch((err: unknown) => this.opts.log(`terminal ${jobId}: noting its clients: ${String(err)}`));
    this.rowWrites.set(jobId, write);
    void write.finally(() => {
      if (this.rowWrites.get(jobId) === write) this.rowWrites.delete(jobId);
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
    const viewer = viewerOf(identity, socket.data.web);
    let jobId = '';
    await this.c.engine.submit(identity, body.data, (job, position) => {
      // Bound before the job is sent to its worker: the start carries the client's size.
      const s = this.session(job);
      this.join(s, socket, viewer, { cols: open.cols, rows: open.rows });
      jobId = job.id;
      socket.emit(TtyEvent.queued, { jobId: job.id, position });
    });
    // Its first client holds it: another token's is refused on any controller.
    if (jobId)
      await recordViewers(this.c.sql, jobId, this.c.controllerId, viewer).catch((err: unknown) =>
        this.opts.log(`terminal ${jobId}: noting its client: ${String(err)}`),
      );
  }

  /**
   * Back to a terminal after a reload or a dropped connection, or a second client of it (server/tty-viewers.ts
   * says who may be): the recent screen is replayed.
   */
  private async attach(socket: TtySocket, identity: Identity, jobId: string, open: TtyOpen): Promise<void> {
    const [row] = await this.c.db.select().from(jobs).where(eq(jobs.id, jobId));
    if (row?.kind !== 'tty') throw new RcError('not_found', `no terminal job ${jobId}`);
    const owner = row.tokenId === identity.tokenId;
    if (!owner && identity.kind !== 'admin') throw new RcError('not_job_owner', `the terminal ${jobId} was opened with another token`);
    const viewer = viewerOf(identity, socket.data.web);
    // Clients here first (no round trip to refuse), then those on every controller, in the database.
    const here = () => this.sessions.get(jobId)?.holder ?? null;
    if (ruleFor(viewer, here(), owner) === 'refuse') throw new RcError('terminal_busy', busyMessage(jobId, here()!));
    await this.rowWrites.get(jobId);
    const admitted = await admitViewer(this.c.sql, jobId, this.c.controllerId, viewer, owner, this.staleS);
    if (!admitted.ok) throw new RcError('terminal_busy', busyMessage(jobId, admitted.holder));
    const job = admitted.job;
    const gone = FINAL_STATES.has(job.state) || !socket.connected;
    // Its row says it is attached here: not so after all, unless others are.
    if (gone && !this.sessions.get(jobId)?.clients.size) this.nobodyHere(jobId);
    if (FINAL_STATES.has(job.state)) {
      socket.emit(TtyEvent.exit, { jobId, state: job.state, exitCode: job.exitCode, reason: job.reason, cause: job.endCause });
      return;
    }
    if (gone) return;
    const s = this.session(job);
    // Another token's client came here while the database was asked.
    const rule = ruleFor(viewer, s.holder, owner);
    if (rule === 'refuse') {
      await recordViewers(this.c.sql, jobId, this.c.controllerId, s.holder!);
      throw new RcError('terminal_busy', busyMessage(jobId, s.holder!));
    }
    const took = rule === 'take' ? s.holder : admitted.took;
    if (took) this.opts.log(`terminal ${jobId}: taken back by its owner (${viewer.who}) from ${took.who}`);
    if (rule === 'take') this.detachAll(s, `the terminal ${jobId} was taken back by its owner (${viewer.who})`);
    // On other controllers, clients of another token are detached.
    this.c.attached(jobId, viewer);
    const client = this.join(s, socket, viewer, { cols: open.cols, rows: open.rows });
    // The clients it took the terminal from left this controller's row behind them: it is this one's again.
    if (rule === 'take') this.writeRow(jobId, () => recordViewers(this.c.sql, jobId, this.c.controllerId, viewer));
    if (s.host === null) {
      socket.emit(TtyEvent.queued, { jobId, position: null });
      return;
    }
    // The replay, and whatever is stored while it is read, in order after it.
    client.cursor = open.after ?? 0;
    client.reading = client.reading.then(async () => {
      const replay = await this.c.relay.since(jobId, client.cursor);
      if (s.clients.get(socket) !== client) return;
      socket.emit(TtyEvent.started, { jobId, host: s.host!, devices: job.devices ?? [], offset: replay.offset });
      if (s.fence !== null && s.sizedBy === client) this.c.hub.order(s.host!, WorkerEvent.ttyResize, { jobId, fence: s.fence, ...s.size });
      client.cursor = replay.offset + replay.data.length;
      s.storedTo = Math.max(s.storedTo, client.cursor);
      if (replay.data.length) this.send(s, client, replay.data);
    });
    await client.reading;
  }

  /** A client behind the stored stream that may be sent more reads on from the relay. */
  private catchUp(s: Session, client: Client): void {
    if (s.clients.get(client.socket) === client && client.unacked < HIGH_WATER && !client.readQueued && client.cursor < s.storedTo) this.readFor(s, client);
  }

  /** Passes on to the client what the relay has after its cursor. */
  private readFor(s: Session, client: Client): void {
    client.readQueued = true;
    client.reading = client.reading
      .then(async () => {
        client.readQueued = false;
        if (s.clients.get(client.socket) !== client) return;
        const more = await this.c.relay.since(s.jobId, client.cursor);
        s.storedTo = Math.max(s.storedTo, more.offset + more.data.length);
        if (s.clients.get(client.socket) !== client) return;
        // Output passed on directly while this read was on its way is not sent twice.
        const fresh = client.cursor > more.offset ? more.data.subarray(client.cursor - more.offset) : more.data;
        const from = Math.max(client.cursor, more.offset);
        // No further than the high-water mark: a client that fell behind catches up at its own pace, as the program's output would reach it.
        const room = Math.max(0, HIGH_WATER - client.unacked);
        const data = fresh.length > room ? fresh.subarray(0, room) : fresh;
        if (!data.length) return;
        client.cursor = from + data.length;
        this.send(s, client, data);
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
      sizedBy: null,
      clients: new Map(),
      holder: null,
      paused: false,
      heldAck: null,
      storedTo: 0,
      grace: null,
      unsubscribe: () => {},
    };
    const session = s;
    s.unsubscribe = this.c.events.subscribe(job.id, (item) => {
      if (item.kind !== 'event') return;
      const e = item.event;
      if (e.type === 'started') void this.startedElsewhere(session, e.host, e.devices);
      if (e.type === 'exit') {
        // After the output read before it: the program's last words come before its end, to every client.
        void Promise.all([...session.clients.values()].map((c) => c.reading)).then(() => {
          for (const c of session.clients.values())
            c.socket.emit(TtyEvent.exit, { jobId: e.jobId, state: e.state, exitCode: e.exitCode, reason: e.reason, cause: e.cause });
          this.drop(session);
        });
      }
    });
    this.sessions.set(job.id, s);
    return s;
  }

  /** A client joins the terminal here, beside any others (of its token): it has the terminal at its size. */
  private join(s: Session, socket: TtySocket, viewer: Viewer, size: Size): Client {
    const client: Client = { socket, size, cursor: 0, unacked: 0, reading: Promise.resolve(), readQueued: false };
    s.clients.set(socket, client);
    if (s.holder?.tokenId !== viewer.tokenId) s.holder = { ...viewer, since: new Date() };
    socket.data.jobId = s.jobId;
    s.size = size;
    s.sizedBy = client;
    if (s.grace) {
      clearTimeout(s.grace);
      s.grace = null;
    }
    this.flow(s);
    return client;
  }

  /**
   * A client of the terminal attached on another controller: those here of another token are detached (its owner took
   * it back). `viewer` unknown (a controller of an earlier version): all of them, as it would have done itself.
   */
  attachedElsewhere(jobId: string, viewer?: Viewer): void {
    const s = this.sessions.get(jobId);
    if (!s?.clients.size || (viewer && s.holder?.tokenId === viewer.tokenId)) return;
    this.detachAll(s, viewer ? `the terminal ${jobId} was taken back by its owner (${viewer.who})` : `the terminal ${jobId} was opened elsewhere`);
  }

  /** Every client here is detached (another token took the terminal). */
  private detachAll(s: Session, message: string): void {
    for (const client of [...s.clients.values()]) {
      client.socket.emit(TtyEvent.error, { code: 'detached', message });
      this.leave(s, client);
    }
  }

  /** The session and client of a socket attached here. */
  private mine(socket: TtySocket): [Session | null, Client | null] {
    const s = socket.data.jobId ? this.sessions.get(socket.data.jobId) : undefined;
    const client = s?.clients.get(socket);
    return s && client ? [s, client] : [null, null];
  }

  private onStarted(job: JobRow): void {
    const s = this.session(job);
    s.fence = job.fence;
    s.host = job.hostName;
    if (!s.clients.size) this.graceStart(s);
  }

  /** The terminal started, here or on another controller: the client learns it, and its size reaches the worker. */
  private async startedElsewhere(s: Session, host: string, devices: string[]): Promise<void> {
    if (s.fence === null) {
      const [row] = await this.c.db.select({ fence: jobs.fence, host: jobs.hostName }).from(jobs).where(eq(jobs.id, s.jobId));
      s.fence = row?.fence ?? null;
      s.host = row?.host ?? host;
    }
    // Started by the controller that holds the worker, which did not know the client's size.
    if (s.clients.size && s.fence !== null && !this.c.holds(host)) this.c.hub.order(host, WorkerEvent.ttyResize, { jobId: s.jobId, fence: s.fence, ...s.size });
    for (const c of s.clients.values()) c.socket.emit(TtyEvent.started, { jobId: s.jobId, host, devices, offset: c.cursor });
    if (!s.clients.size) this.graceStart(s);
  }

  /**
   * Output from a worker connected here: stored (the relay, which holds at
   * most about the replay's worth of it), passed on to the clients here at
   * once when their place in the stream is known, and acknowledged to the
   * worker at once while they keep up: only the clients' pace holds the
   * program back. While one is behind, the acknowledgement waits too, so the
   * worker stops at its window even before the pause order reaches it (a fast
   * program otherwise pours out megabytes in that time on a loaded machine).
   */
  private onOutput(host: string, out: TtyOutput): void {
    const ack = () => {
      const held = this.sessions.get(out.jobId);
      if (held?.paused && held.clients.size) {
        held.heldAck = { fence: out.fence, bytes: (held.heldAck?.fence === out.fence ? held.heldAck.bytes : 0) + out.data.length };
        return;
      }
      this.c.hub.emitTo(host, WorkerEvent.ttyAck, { jobId: out.jobId, fence: out.fence, bytes: out.data.length });
    };
    const at = this.c.relay.expected(out.jobId);
    const stored = this.c.relay.append(out.jobId, out.data);
    const s = this.sessions.get(out.jobId);
    // Passed on at once to each client that keeps up; one behind reads it from the relay at its own pace.
    const waiting: Client[] = [];
    for (const client of s?.clients.values() ?? []) {
      if (at !== null && !s!.paused && client.cursor === at) {
        client.cursor = at + out.data.length;
        this.send(s!, client, out.data);
      } else waiting.push(client);
    }
    // A client here waiting for this output: the worker hears of it once the clients have had it (or, behind, later still).
    const ackLater = waiting.length > 0;
    if (!ackLater) ack();
    const after = (st: Awaited<typeof stored>) => {
      if (!st) return;
      // Once per row: chunks stored together are told together.
      if (st.to === st.row.to) this.c.publish(out.jobId, st.row.from, st.row.to);
      const later = this.sessions.get(out.jobId);
      if (!later) return;
      later.storedTo = Math.max(later.storedTo, st.to);
      for (const client of waiting) {
        if (later.clients.get(client.socket) !== client) continue;
        if (!later.paused && client.cursor === st.from) {
          client.cursor = st.to;
          this.send(later, client, out.data);
        } else this.catchUp(later, client);
      }
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

  private send(s: Session, client: Client, data: Buffer): void {
    if (!data.length) return;
    client.unacked += data.length;
    client.socket.emit(TtyEvent.output, data);
    this.flow(s);
  }

  /** Pauses the worker's terminal while a client is too far behind; resumes it when all have caught up (or left). */
  private flow(s: Session): void {
    if (!s.host || s.fence === null) return;
    const limit = s.paused ? LOW_WATER : HIGH_WATER;
    const behind = [...s.clients.values()].some((c) => c.unacked > limit);
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
    if (s.grace || s.clients.size) return;
    s.grace = setTimeout(() => {
      s.grace = null;
      if (s.clients.size) return;
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
          if (!s.clients.size) void this.endUnattended(jobId).catch((err: unknown) => this.opts.log(`ending the unattended terminal ${jobId}: ${String(err)}`));
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
    for (const c of s.clients.values()) if (c.socket.data.jobId === s.jobId) c.socket.data.jobId = null;
    if (s.clients.size) this.nobodyHere(s.jobId);
    s.clients.clear();
    this.sessions.delete(s.jobId);
  }
}
