// The controller's parts, wired once: database, scheduler, worker hub, API.
import { randomBytes } from 'node:crypto';
import { RcError } from '../core/errors';
import type { RuntimeLimits } from '../core/runtime-limit';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'socket.io';
import { connect, type Database, type Db, type Sql } from './db';
import type { DbHealth } from './db-health';
import { JobEvents } from './job-events';
import { OutputWriter } from './output-writer';
import { formatSize } from '../core/size';
import { markHostsAway, reapSilentHosts } from './reaper';
import { beginTermination, type MachineDeps, reconcileMachines, terminateMachine } from './machines/lifecycle';
import { machineView } from './machines/list';
import type { ApiDeps } from './http/route-deps';
import { sweep } from './machines/sweeper';
import { MachinePass } from './machines/machine-pass';
import { McpEndpoint } from './mcp/endpoint';
import { FailedOffers } from '../core/cheapest-fit';
import type { Provider } from './providers/provider';
import { PauseWatch } from './pause-watch';
import { heartbeatAckMs, heartbeatMs as heartbeatEvery } from './heartbeat-timing';
import { Scheduler } from './scheduler';
import { enforceLimits } from './watchdogs';
import { WorkerHub } from './worker-hub';
import { WorkerQuarantines } from './worker-quarantine';
import { JobEngine } from './jobs/engine';
import { anyPreemptibleRunning, preemptibleRunning, queueHead } from './jobs/sql/queue-head';
import { Router } from './http/router';
import { registerApi } from './http/api';
import { TtyHub } from './tty';
import type { Viewer } from './tty-viewers';
import { forgetToken } from './auth';
import { removedHostOf, removedMessage } from './host-admin';
import { hashSecret } from './tokens';
import { boundBacklog } from './socket-backlog';
import { LIVE_NAMESPACE, TTY_NAMESPACE, WORKER_NAMESPACE } from '../protocol/events';
import type { JobEvent, JobKind, Notice } from '../protocol/wire';
import type { Target } from './jobs/claim';
import { Bus, type BusMessage } from './bus';
import { socketAuth } from './socket-auth';
import { AuthLimit, type AuthLimitOptions } from './auth-limit';
import { LiveFeed } from './live';
import { Inventory } from './inventory';
import { Reservations } from './reservations';
import { Quotas } from './jobs/quota';
import { FAIR_SHARE_CHARGE_MS, FairShare } from './jobs/fair-share';
import { RemoteCalls } from './remote-calls';
import { DEFAULT_RESERVE_AFTER_S } from '../core/schedule';
import { storedOutput } from './stored-output';
import { TtyRelay } from './tty-relay';
import { Metrics } from './metrics';
import { pruneGpuSamples, type SampleRetention } from './sample-retention';

/** Spans of stored output per bus message: a job id and two numbers each, well within a NOTIFY's 8000 bytes. */
const OUT_SPANS_PER_MESSAGE = 80;

/** The build's version (scripts/build.mjs defines it; `dev` where it is not built). */
declare const RC_VERSION: string;

/** How often the pages followed here are told of devices newly held back for a queued job, or no longer. */
const RESERVATIONS_WATCH_MS = 2000;

export interface ControllerOptions {
  database: Database;
  /** The database's URL: the bus between controllers listens on a connection of its own. */
  databaseUrl: string;
  hostTimeoutS: number;
  /** RC_PAUSE_GAP_MS: an event-loop gap this long is a pause of this process (server/pause-watch.ts). */
  pauseGapMs?: number;
  /** Seconds past a time limit before the controller ends a job its worker did not kill. */
  watchdogGraceS?: number;
  outputLimitBytes?: number;
  /** Output waiting for the database past which workers are cut off (RC_OUTPUT_WAITING_BYTES). */
  outputWaitingBytes?: number;
  /** Seconds a multi-GPU job waits before devices are held back for it. */
  reserveAfterS?: number;
  /** Seconds of notice a preempted job gets between SIGTERM and SIGKILL (RC_PREEMPT_NOTICE_S). */
  preemptNoticeS?: number;
  /** Fair share's half-life of use, seconds (RC_FAIRSHARE_HALF_LIFE). */
  fairShareHalfLifeS?: number;
  /** The fleet's default and maximum --max-runtime (RC_MAX_RUNTIME_DEFAULT_S, RC_MAX_RUNTIME_LIMIT_S); none when absent. */
  runtimeLimits?: RuntimeLimits;
  log?: (msg: string) => void;
  /** Seconds a terminal may have nobody attached before its job ends (RC_TTY_GRACE_S). */
  ttyGraceS?: number;
  /** RC_IDLE_HOLD_WARN, RC_IDLE_HOLD_RELEASE in seconds; null: off. */
  idleHoldWarnS?: number | null;
  idleHoldReleaseS?: number | null;
  /** Bytes of recent output kept per terminal for a re-attach (RC_TTY_REPLAY_BYTES). */
  ttyReplayBytes?: number;
  /** RC_PUBLIC_URL: the dashboard's own address behind a proxy (origin checks, Secure cookies). */
  publicUrl?: string | null;
  /** Whether the database answers (server/db-health.ts); null: assume it does. */
  health?: DbHealth | null;
  /** Refused tokens per client address and window (RC_AUTH_FAILURES, RC_AUTH_FAILURE_WINDOW_S): server/auth-limit.ts; 20 a minute when absent. */
  authLimit?: AuthLimitOptions;
  /** How long GPU samples are kept, raw and coarse (RC_SAMPLES_RAW_DAYS, RC_SAMPLES_COARSE_DAYS); server/sample-retention.ts's defaults when absent. */
  sampleRetention?: SampleRetention;
  /** Machines from providers (server/machines/): the configured accounts, RC_SWEEP_S and RC_LOCAL_PROVIDER's launch timeout; none when absent. */
  machines?: { providers: readonly Provider[]; sweepS: number; launchTimeoutS: number; maxMachines: number };
}

/** How often live machines are described and moved on (server/machines/lifecycle.ts reconcileMachines). */
const RECONCILE_MS = 2000;

/** How often the sweep of waiting jobs runs (JobEngine.settleWaits): a missed release waits at most this long. */
const WAITS_SWEEP_MS = 2000;

export class Controller {
  readonly db: Db;
  readonly sql: Sql;
  readonly bus: Bus;
  readonly events: JobEvents;
  readonly writer: OutputWriter;
  readonly relay: TtyRelay;
  readonly hub: WorkerHub;
  /** The job engine (server/jobs/engine.ts): every change of a job's state goes through it. */
  readonly engine: JobEngine;
  readonly scheduler: Scheduler;
  readonly router: Router;
  readonly tty: TtyHub;
  readonly live: LiveFeed;
  /** The fleet kept in memory (server/inventory.ts): submits, passes and listings read it. */
  readonly inventory: Inventory;
  /** The free devices held back for a queued job (server/reservations.ts): the listings show them as reserved. */
  readonly reservations: Reservations;
  /** What the --gpus limits leave, for the queue's readers (server/jobs/quota.ts). */
  readonly quotas: Quotas;
  /** The tokens' fair-share ranks the queue's readers order by (server/jobs/fair-share.ts). */
  readonly fairShare: FairShare;
  /** Tells the pages what a job's event changed (jobLive). */
  /** What a job's event (here or elsewhere) changes: the fleet in memory and the pages. */
  private readonly jobChanged: (event: JobEvent & { jobId: string }) => void;
  readonly calls: RemoteCalls;
  /** What GET /metrics serves (server/metrics.ts). */
  readonly metrics: Metrics;
  readonly outputLimitBytes: number;
  readonly reserveAfterS: number;
  readonly runtimeLimits: RuntimeLimits;
  /** Token guesses, limited per client address: the API, the sign-in and every socket's handshake share it. */
  readonly authLimit: AuthLimit;
  /** Machines from providers, as the routes use them (GET /api/offers, DELETE /api/machines/:id). */
  readonly machines: ApiDeps['machines'];
  /** POST /mcp: rc's tools for agents (server/mcp/). */
  private readonly mcp: McpEndpoint;
  /** This controller as it reaches itself, once it listens (listening()): MCP tools make their API requests there. */
  private selfUrl: string | null = null;
  /** Gives provider machines their jobs and takes them away (server/machines/machine-pass.ts): once startMachines ran, with a provider account. */
  private machinePass: MachinePass | null = null;
  /** Where machines' workers join: known once the controller listens (startMachines); terminating needs none of it. */
  private machinesUrl = '';
  private timers: NodeJS.Timeout[] = [];
  /** Set by quiesce(): no timer is armed after it. */
  private quiesced = false;
  /** The periodic passes running now (reaper, watchdogs, catch-up): a stop waits for them before the database closes. */
  private readonly passes = new Set<Promise<unknown>>();
  private io: Server | null = null;
  private readonly beatsDb: Database;
  /** This process's own pauses: hosts are not judged by clocks it could not read (server/pause-watch.ts). */
  private readonly pauses: PauseWatch;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: ControllerOptions) {
    const log = opts.log ?? ((m: string) => console.error(`[rc] ${m}`));
    this.log = log;
    this.db = opts.database.db;
    this.outputLimitBytes = opts.outputLimitBytes ?? 16 * 1024 * 1024;
    this.reserveAfterS = opts.reserveAfterS ?? DEFAULT_RESERVE_AFTER_S;
    this.runtimeLimits = opts.runtimeLimits ?? { defaultS: null, maxS: null };
    this.authLimit = new AuthLimit(opts.authLimit ?? { failures: 20, windowMs: 60_000 });
    this.sql = opts.database.client;
    const heartbeatMs = heartbeatEvery(opts.hostTimeoutS);
    this.pauses = new PauseWatch(opts.pauseGapMs, (gap) =>
      log(
        `this controller did not run for ${(gap / 1000).toFixed(1)} s (stopped, or starved of CPU): every host gets ${opts.hostTimeoutS} s before any is timed out`,
      ),
    );
    this.metrics = new Metrics({
      sql: this.sql,
      heartbeatMs,
      devicesByState: () => this.inventory.byState(),
      idleLeased: () => this.inventory.idleLeased(),
      outputStore: () => ({ outOfSpace: this.writer.outOfSpaceSince !== null, waitingBytes: this.writer.waitingBytes }),
    });
    const metrics = this.metrics;
    this.bus = new Bus({ url: opts.databaseUrl, log });
    const bus = this.bus;
    const live = new LiveFeed((change) => bus.publish({ t: 'live', change }));
    this.live = live;
    const liveOfJob = jobLive(live);
    const inventory = new Inventory(this.sql, (err) => log(`loading the fleet: ${String(err)}`));
    this.inventory = inventory;
    this.fairShare = new FairShare(this.sql, opts.fairShareHalfLifeS, (err) => log(`charging fair share's use: ${String(err)}`));
    this.quotas = new Quotas(this.sql);
    const fairShare = this.fairShare;
    this.reservations = new Reservations(this.sql, this.reserveAfterS, () => inventory.rows(), fairShare);
    this.jobChanged = (event) => {
      inventoryOfJob(inventory, event);
      liveOfJob(event);
      // An attempt ended and the job waits for its next one: every controller's pass looks (each hears the event).
      if (event.type === 'requeued') void this.scheduler.poke();
    };
    // Every change but a lease's (those come with job events, applied as they are): the host is loaded again.
    live.onChange((c, known) => {
      if (c.what === 'devices' && !known) inventory.changed(c.host);
      // A job queued, started or ended, or a host's devices changed (here or elsewhere): reservations are worked out again.
      if (c.what === 'jobs' || c.what === 'devices') this.reservations.changed();
    });
    this.events = new JobEvents(
      storedOutput(this.sql),
      {
        event: (event, told) => {
          if (!told) bus.publish({ t: 'job', jobId: event.jobId, event });
          if (event.type === 'exit') metrics.ended(event.state);
          this.jobChanged(event);
        },
      },
      (err) => log(`following output stored elsewhere: ${String(err)}`),
    );
    this.writer = new OutputWriter(
      this.sql,
      {
        error: (err) => log(`storing output failed: ${String(err)}`),
        // One message per INSERT, whatever the number of jobs in it (in pieces that fit a NOTIFY).
        stored: (spans) => {
          for (let i = 0; i < spans.length; i += OUT_SPANS_PER_MESSAGE) bus.publish({ t: 'out', spans: spans.slice(i, i + OUT_SPANS_PER_MESSAGE) });
        },
        // Once when it starts and once when it ends, never per chunk; the pages show it while it lasts (GET /api/notices).
        space: (full) => {
          log(
            full
              ? `the database is out of disk space: job output is held (here, then by the workers) and acknowledged only once stored; free space where Postgres keeps its data (${formatSize(this.writer.waitingBytes)} waiting now)`
              : 'disk space is back: the database stores job output again, and the workers resend what was held',
          );
          live.here({ what: 'notices' });
        },
      },
      opts.outputWaitingBytes,
    );
    this.calls = new RemoteCalls({
      sql: this.sql,
      publish: (m) => bus.publish(m),
      local: (host, event, op, timeoutMs) => this.hub.fileCallHere(host, event, op, timeoutMs),
      log,
    });
    this.relay = new TtyRelay(this.sql, opts.ttyReplayBytes ?? 256 * 1024, (err) => log(`storing terminal output failed: ${String(err)}`));
    // Heartbeats are many and each is sent again seconds later: their commits need not wait for the disk.
    this.beatsDb = connect(opts.databaseUrl, 2, { application_name: 'rc-heartbeats', synchronous_commit: 'off' });
    // Quarantines a worker reports or implies: the hub's messages and the engine's exits both make them.
    const quarantines = new WorkerQuarantines({
      sql: this.sql,
      log,
      changed: (host) => live.changed({ what: 'devices', host }),
      audited: () => live.changed({ what: 'audit' }),
    });
    // The hub and the scheduler are built below: the engine reaches them only when it is called.
    this.engine = new JobEngine({
      db: this.db,
      sql: this.sql,
      events: this.events,
      hub: {
        killJob: (host, order) => this.hub.killJob(host, order),
        holds: (host) => this.hub.holds(host),
        stdinCall: (host, op) => this.hub.stdinCall(host, op),
      },
      start: () => ({
        scheduler: this.scheduler,
        announce: this.announce,
        inventory,
        runtimeLimits: this.runtimeLimits,
        live,
        metrics,
      }),
      changed: (host) => live.changed({ what: 'devices', host }),
      freed: () => this.scheduler.pokeIfQueued(),
      quarantine: quarantines.quarantine,
      released: () => void this.scheduler.pokeAll(),
    });
    this.hub = new WorkerHub({
      engine: this.engine,
      quarantines,
      db: this.db,
      sql: this.sql,
      beatSql: this.beatsDb.client,
      events: this.events,
      writer: this.writer,
      log,
      poke: () => {
        void this.scheduler.poke();
      },
      heartbeatMs,
      heartbeatAckMs: heartbeatAckMs(opts.hostTimeoutS),
      metrics,
      outputLimitBytes: this.outputLimitBytes,
      elsewhere: (host, event, payload) => bus.publish({ t: 'order', host, event, payload }),
      changed: (host) => live.changed({ what: 'devices', host }),
      sampled: (host, gpus) => {
        inventory.sampled(host, gpus, new Date());
        live.sampled();
      },
      fileElsewhere: (host, event, op, timeoutMs) => this.calls.call(host, event, op, timeoutMs),
      controllerId: bus.id,
      hostTimeoutS: opts.hostTimeoutS,
      admitted: (host, instance) => bus.publish({ t: 'worker', host, instance }),
    });
    const sql = this.sql;
    this.scheduler = new Scheduler({
      queue: {
        ranks: () => fairShare.ranks(),
        head: (limit, ranks, skip) => queueHead(sql, limit, ranks, skip),
        quota: () => this.quotas.view(),
        anyPreemptibleRunning: () => anyPreemptibleRunning(sql),
        preemptibleRunning: () => preemptibleRunning(sql),
      },
      planner: this.engine,
      inventory,
      events: this.events,
      dispatcher: this.hub,
      onError: (err) => log(`scheduling pass failed: ${String(err)}`),
      reserveAfterS: this.reserveAfterS,
      spread: () => bus.publish({ t: 'poke' }),
      startElsewhere: (job, targets) =>
        bus.publish({ t: 'start', host: job.hostName!, jobId: job.id, fence: job.fence!, targets, kind: job.kind, submitter: job.submitter }),
      startedPayload: (event) => bus.envelope({ t: 'job', jobId: event.jobId, event }),
      requeued: (host) => live.changed({ what: 'devices', host }),
      metrics,
      preemptNoticeS: opts.preemptNoticeS,
      leftQueued: () => this.machinePass?.nudge(),
    });
    const mcpNonce = randomBytes(16).toString('hex');
    this.router = new Router(this.db, log, {
      publicUrl: opts.publicUrl ?? null,
      health: opts.health ?? null,
      audited: () => live.changed({ what: 'audit' }),
      authLimit: this.authLimit,
      mcpNonce,
    });
    this.mcp = new McpEndpoint({
      db: this.db,
      sql: this.sql,
      authLimit: this.authLimit,
      publicUrl: opts.publicUrl ?? null,
      version: typeof RC_VERSION === 'string' ? RC_VERSION : 'dev',
      log,
      selfUrl: () => this.selfUrl,
      nonce: mcpNonce,
      audited: () => live.changed({ what: 'audit' }),
    });
    this.machines = {
      providers: opts.machines?.providers ?? [],
      maxMachines: opts.machines?.maxMachines ?? 0,
      terminate: async (id, why, actor) => {
        const machine = await machineView(this.sql, id);
        if (!machine) return null;
        // Only its own account's provider can delete the instance: without it nothing is changed (the row stays, for when it is configured again).
        if (machine.state !== 'terminated' && !(opts.machines?.providers ?? []).some((p) => p.account === machine.account))
          throw new RcError(
            'conflict',
            `machine ${id} is on the account ${machine.account}, which this controller has no settings for: configure that account again and delete it then (nothing was changed)`,
          );
        // Terminating first (its devices go to nobody), then a job running on it ends lost (restarted per its
        // --restarts, elsewhere), then the instance goes.
        if (machine.state !== 'terminated' && (await beginTermination(this.machineDeps(), id, why)))
          await this.engine.machineGone(machine.hostName, id, 'deleted');
        await terminateMachine(this.machineDeps(), id, why, actor);
        return machineView(this.sql, id);
      },
    };
    registerApi(this.router, this);
    this.tty = new TtyHub(
      {
        db: this.db,
        sql: this.sql,
        events: this.events,
        hub: this.hub,
        engine: this.engine,
        relay: this.relay,
        holds: (h: string) => this.hub.holds(h),
        publish: (jobId: string, from: number, to: number) => bus.publish({ t: 'tty', jobId, from, to }),
        attached: (jobId: string, viewer: Viewer) => bus.publish({ t: 'tty-attach', jobId, tokenId: viewer.tokenId, who: viewer.who }),
        controllerId: bus.id,
      },
      { graceS: opts.ttyGraceS ?? 45, log, publicUrl: opts.publicUrl ?? null },
    );
  }

  /** Whether a host's worker is connected here (bound: the API's deps take it alone). */
  readonly holds = (hostName: string): boolean => this.hub.holds(hostName);

  /** A job claimed here for a worker connected elsewhere: the start message its claim sends (its fence filled in by the statement). */
  readonly announce = (jobId: string, host: string, targets: Target[], who: { kind: JobKind; submitter: string }): string | null =>
    this.hub.holds(host) ? null : this.bus.envelope({ t: 'start', host, jobId, fence: 0, targets, ...who });

  /** Another controller's message. */
  private onBus(m: BusMessage): void {
    if (m.t === 'job') {
      this.events.remoteEvent(m.jobId, m.event);
      this.jobChanged({ ...m.event, jobId: m.jobId } as JobEvent & { jobId: string });
    } else if (m.t === 'live') this.live.here(m.change);
    else if (m.t === 'out') this.events.storedMany(m.spans ?? []);
    else if (m.t === 'tty') this.tty.stored(m.jobId, m.to);
    else if (m.t === 'tty-attach')
      this.tty.attachedElsewhere(m.jobId, typeof m.tokenId === 'number' ? { tokenId: m.tokenId, who: String(m.who ?? '') } : undefined);
    else if (m.t === 'order') this.hub.orderFromBus(m.host, m.event, m.payload);
    else if (m.t === 'worker') this.hub.admittedElsewhere(m.host, m.instance);
    else if (m.t === 'start')
      this.scheduler
        .startFromElsewhere(m.host, m.jobId, m.fence, m.targets, { kind: m.kind, submitter: m.submitter })
        .catch((err: unknown) => this.log(`starting ${m.jobId}: ${String(err)}`));
    else if (m.t === 'call') this.calls.serve(m.id, m.host, this.holds).catch((err: unknown) => this.log(`a file step for ${m.host}: ${String(err)}`));
    else if (m.t === 'reply') this.calls.replied(m.id);
    else if (m.t === 'poke') void this.scheduler.poke();
    else if (m.t === 'cut') this.cutHere(m.tokenId);
    else if (m.t === 'cut-session') this.cutSessionHere(m.sessionId);
  }

  /** Messages missed while the bus was away (or lost): the periodic backstop. */
  private catchUp(): void {
    // Changes told by other controllers while the listen connection was down are lost: what the fleet page was kept as may be wrong.
    this.inventory.changed();
    this.events.catchUp().catch((err: unknown) => this.log(`catching up on jobs followed here: ${String(err)}`));
    void this.scheduler.poke();
  }

  /** A revoked token: out of the auth cache, and its live sockets (a worker, terminals, the live view) cut now. */
  /** A token was revoked: its connections are cut here and, told on the bus, on every other controller. */
  /** What the pages show on every page while it lasts (GET /api/notices): this controller's database out of disk space. */
  notices(): Notice[] {
    const since = this.writer.outOfSpaceSince;
    if (!since) return [];
    return [
      {
        code: 'disk_full',
        message: `The database is out of disk space: job output (${formatSize(this.writer.waitingBytes)} waiting here) is held until it can be stored; output held longer than the controller and the workers can keep is lost, and its jobs say so. Free space where Postgres keeps its data.`,
        since: since.toISOString(),
      },
    ];
  }

  cutToken(tokenId: number): void {
    this.cutHere(tokenId);
    this.bus.publish({ t: 'cut', tokenId });
  }

  private cutHere(tokenId: number): void {
    forgetToken(tokenId);
    if (!this.io) return;
    for (const ns of [this.io.of(LIVE_NAMESPACE), this.io.of(TTY_NAMESPACE), this.io.of(WORKER_NAMESPACE)]) {
      for (const socket of ns.sockets.values()) if (socket.data.tokenId === tokenId) socket.disconnect(true);
    }
  }

  cutSession(sessionId: number): void {
    this.cutSessionHere(sessionId);
    this.bus.publish({ t: 'cut-session', sessionId });
  }

  private cutSessionHere(sessionId: number): void {
    if (!this.io) return;
    for (const ns of [this.io.of(LIVE_NAMESPACE), this.io.of(TTY_NAMESPACE)])
      for (const socket of ns.sockets.values()) if (socket.data.sessionId === sessionId) socket.disconnect(true);
  }

  async start(io: Server): Promise<void> {
    this.io = io;
    await markHostsAway(this.db, this.opts.hostTimeoutS);
    this.pauses.start();
    const log = this.log;
    await this.bus.start(
      (m) => this.onBus(m),
      () => this.catchUp(),
    );
    // One sign-in for the three namespaces: workers with their host credential; the live view and terminals with a token or the cookie.
    const people = socketAuth(this.db, this.authLimit, 'people', this.opts.publicUrl ?? null);
    // The dashboard's live view: whatever it is sent waits for it within the same bound as a terminal.
    io.of(LIVE_NAMESPACE).use(people);
    io.of(LIVE_NAMESPACE).on('connection', (socket) => boundBacklog(socket, log));
    this.live.attach(io.of(LIVE_NAMESPACE));
    this.hub.attach(
      io,
      socketAuth(this.db, this.authLimit, 'worker', null, async (secret) => {
        const gone = await removedHostOf(this.sql, hashSecret(secret));
        return gone && removedMessage(gone);
      }),
    );
    await this.tty.start(io, people);
    const reapEvery = Math.min(1000, (this.opts.hostTimeoutS * 1000) / 4);
    // One pass of each loop at a time: passes queued behind a stalled database would judge stale time when it comes back.
    // A host about to fall due gets a pass at its moment, so it is lost at the timeout, not up to a tick later.
    this.every(reapEvery, async () => {
      const pass = await reapSilentHosts(
        {
          db: this.db,
          sql: this.sql,
          engine: this.engine,
          timeoutS: this.opts.hostTimeoutS,
          dbUpForMs: () => this.opts.health?.upForMs() ?? Number.POSITIVE_INFINITY,
          awakeForMs: () => this.pauses.awakeForMs(),
          heldHere: (host) => this.hub.holds(host),
          heardFrom: (ms) => this.hub.heardFrom(ms),
          changed: (host) => this.live.changed({ what: 'devices', host }),
        },
        reapEvery,
      ).catch((err: unknown) => {
        log(`reaper failed: ${String(err)}`);
        return null;
      });
      return pass?.nextDueMs ?? null;
    });
    this.every(1000, () =>
      enforceLimits({
        sql: this.sql,
        events: this.events,
        engine: this.engine,
        idleSeconds: (jobId) => this.hub.idleSeconds(jobId),
        graceS: this.opts.watchdogGraceS ?? 30,
        idleHoldWarnS: this.opts.idleHoldWarnS === undefined ? 1800 : this.opts.idleHoldWarnS,
        idleHoldReleaseS: this.opts.idleHoldReleaseS ?? null,
      })
        .then((ended) => {
          if (ended) void this.scheduler.poke();
        })
        .catch((err: unknown) => log(`watchdogs failed: ${String(err)}`)),
    );
    this.timers.push(
      setInterval(() => {
        pruneGpuSamples(this.sql, this.opts.sampleRetention).catch((err: unknown) => log(`pruning GPU samples failed: ${String(err)}`));
        this.calls.prune().catch((err: unknown) => log(`pruning file steps: ${String(err)}`));
      }, 600_000),
    );
    // Waiting jobs (server/jobs/waits.ts): the sweep that repairs a release an end's controller missed, and wakes
    // at the next --retry-delay's end (rather than a fast poll) when that comes before its next tick.
    this.every(WAITS_SWEEP_MS, () =>
      this.engine
        .settleWaits()
        .then((nextMs) => (nextMs === null ? null : Math.max(nextMs, 20)))
        .catch((err: unknown) => {
          log(`settling waiting jobs failed: ${String(err)}`);
          return null;
        }),
    );
    // Fair share's ended leases into token_use, whether or not a read asked (a read asks when many wait): the reads stay small.
    this.every(FAIR_SHARE_CHARGE_MS, () => this.fairShare.charge());
    // Safety nets only: every change pokes at once, here and (through the bus) on the other controllers.
    this.every(2000, () => this.events.catchUp().catch((err: unknown) => log(`catching up on jobs followed here: ${String(err)}`)));
    this.timers.push(
      setInterval(() => {
        void this.scheduler.poke();
      }, 5000),
    );
    // A device becomes reserved when its job has waited long enough, which no event tells: the pages followed here hear it from this.
    this.every(RESERVATIONS_WATCH_MS, async () => {
      if (!this.live.watched) return;
      try {
        for (const host of await this.reservations.changedHosts()) this.live.derived({ what: 'devices', host });
      } catch (err) {
        log(`working out reserved devices: ${String(err)}`);
      }
    });
    const health = this.opts.health;
    // The pool's wait, against the same query on the health check's own connection (none without it).
    if (health) this.every(2000, () => this.metrics.samplePoolWait(() => health.ping()).catch(() => {}));
    void this.scheduler.poke();
  }

  /** Runs `pass` every `ms`, skipping a tick while the previous pass has not finished. */
  /** Runs `pass` every `ms`, one at a time; a pass that returns a number of milliseconds under `ms` gets the next one that much sooner. */
  private every(ms: number, pass: () => Promise<unknown>): void {
    let running = false;
    let sooner: NodeJS.Timeout | null = null;
    const run = () => {
      if (running) return;
      running = true;
      const p = pass()
        .then((soonerMs) => {
          if (typeof soonerMs !== 'number' || soonerMs >= ms || this.quiesced) return;
          if (sooner) {
            clearTimeout(sooner);
            this.timers = this.timers.filter((t) => t !== sooner);
          }
          sooner = setTimeout(run, Math.ceil(soonerMs) + 1);
          this.timers.push(sooner);
        })
        .finally(() => {
          running = false;
          this.passes.delete(p);
        });
      this.passes.add(p);
    };
    this.timers.push(setInterval(run, ms));
  }

  /**
   * Once the controller listens at `controllerUrl` (where machines' workers join): live
   * machines are reconciled every 2 s and the sweeper runs every RC_SWEEP_S, when any
   * provider account is configured.
   */
  listening(controllerUrl: string): void {
    this.selfUrl = controllerUrl;
    this.startMachines(controllerUrl);
  }

  private startMachines(controllerUrl: string): void {
    const m = this.opts.machines;
    if (!m?.providers.length || this.quiesced) return;
    this.machinesUrl = controllerUrl;
    const deps = this.machineDeps();
    const pass = new MachinePass({
      ...deps,
      maxMachines: m.maxMachines,
      failed: new FailedOffers(),
      inventory: this.inventory,
      changed: (host) => this.live.changed({ what: 'devices', host }),
      poke: () => void this.scheduler.pokeAll(),
    });
    this.machinePass = pass;
    this.every(RECONCILE_MS, async () => {
      await reconcileMachines(deps).catch((err: unknown) => this.log(`reconciling machines failed: ${String(err)}`));
      await pass.poke();
    });
    this.every(m.sweepS * 1000, () => sweep(this.sql, m.providers, this.log).catch((err: unknown) => this.log(`sweeper failed: ${String(err)}`)));
  }

  private machineDeps(): MachineDeps {
    const m = this.opts.machines;
    return {
      db: this.db,
      sql: this.sql,
      providers: new Map((m?.providers ?? []).map((p) => [p.account, p])),
      controllerUrl: this.machinesUrl,
      launchTimeoutS: m?.launchTimeoutS ?? 600,
      log: this.log,
      takenBack: (host, machine) => this.engine.machineGone(host, machine, 'taken back'),
      changed: (host) => this.live.changed({ what: 'devices', host }),
    };
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    return (await this.mcp.handle(req, res)) || this.router.handle(req, res);
  }

  /** The first step of a stop: no timer fires, no pass starts; resolves once those running are done. */
  async quiesce(): Promise<void> {
    this.quiesced = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.pauses.stop();
    await Promise.all([this.scheduler.stop(), this.fairShare.stop(), this.machinePass?.stop(), ...this.passes]);
  }

  /** After quiesce(): every socket told and closed (terminals, the live view, workers, their hosts marked away), stored output drained, the bus closed. */
  async stop(): Promise<void> {
    await this.quiesce();
    await this.tty.stop();
    this.live.stop();
    await this.hub.close();
    // What is not stored within a second stays with the workers, which resend it to the next controller.
    await Promise.race([this.writer.drain().catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    this.writer.stop();
    await this.bus.stop();
    await this.beatsDb.close().catch(() => {});
  }
}

/** What a job's event changes in the fleet kept in memory: a start takes its devices' leases, an exit lets them go (unless it kept them: their release, later, loads the host again). */
function inventoryOfJob(inventory: Inventory, event: JobEvent & { jobId: string }): void {
  if (event.type === 'started')
    inventory.leased(event.host, event.devices, {
      jobId: event.jobId,
      kind: event.kind ?? 'run',
      submitter: event.submitter ?? '',
      since: new Date().toISOString(),
    });
  else if ((event.type === 'exit' || event.type === 'requeued') && !event.leasesKept) inventory.released(event.jobId);
  else if (event.type === 'requeued') inventory.keptApart(event.jobId);
}

/**
 * What a job's event changes on the pages: its jobs, and (started, ended) the
 * devices it holds, on its host. Every controller sees the events, so each
 * tells its own browsers. An exit names no host: the host its start named is
 * kept until then, so a page fetches that host again, not the whole fleet.
 */
function jobLive(live: LiveFeed): (event: JobEvent & { jobId: string }) => void {
  const hostOf = new Map<string, string>();
  return (event) => {
    if (event.type !== 'started' && event.type !== 'exit' && event.type !== 'queued' && event.type !== 'requeued') return;
    live.ofJob({ what: 'jobs', jobId: event.jobId });
    if (event.type === 'queued') return;
    let host: string | undefined;
    if (event.type === 'started') {
      host = event.host;
      // Bounded: a start whose exit this controller never hears (it started later) is forgotten with the rest.
      if (hostOf.size >= 100_000) hostOf.clear();
      hostOf.set(event.jobId, host);
    } else {
      host = hostOf.get(event.jobId);
      hostOf.delete(event.jobId);
    }
    live.ofJob({ what: 'devices', ...(host ? { host } : {}) });
  };
}
