// The controller's metrics, as GET /metrics serves them (Prometheus text
// format). One registry per controller, never prom-client's global one, so
// several controllers in one process do not clash. docs/operators.md's "Metrics"
// section lists every family and what it means.
//
// What costs a database query is read at scrape time, and only through
// partial indexes that hold live jobs (jobs_queued_idx, jobs_running_host_idx):
// a scrape never scans the jobs table, which grows forever. Ended jobs are
// therefore not counted in the database but by a counter, rc_jobs_ended_total,
// that this controller increments when it ends a job (each controller counts
// its own; sum them across controllers).
//
// The hooks the other parts call (granted, heartbeat, heartbeatStored, output)
// only bump an instrument, with its label child bound once here.
import { performance } from 'node:perf_hooks';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { FINAL_STATES } from '../core/job-state';
import type { Sql } from './db';

/** How many devices are in each state (free, busy, off, unhealthy, offline). */
export type DevicesByState = () => Record<string, number> | Promise<Record<string, number>>;

export interface MetricsOptions {
  sql: Sql;
  devicesByState: DevicesByState;
  /** Leased devices whose GPU has been idle since its previous sample (core/idle.ts gpuIdle), from the fleet in memory; absent: 0. */
  idleLeased?: () => number;
  /** The heartbeat interval the controller asks workers for: lateness is measured against it. */
  heartbeatMs: number;
  /** The output writer now: its database out of disk space, the bytes waiting for it (read at scrape time). */
  outputStore?: () => { outOfSpace: boolean; waitingBytes: number };
}

/** The device states that always have a series, 0 or not (alerts on `unhealthy` need one). */
const DEVICE_STATES = ['free', 'busy', 'off', 'unhealthy', 'offline'] as const;
/** The job states counted in the database at scrape time: those of live jobs only. */
const LIVE_STATES = ['queued', 'running'] as const;

/** Seconds, from a few milliseconds to an hour: how long a job waits for its devices. */
const GRANT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
/** Seconds a database round trip takes, from a millisecond to ten seconds. */
const STORE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds a heartbeat is late, from 10 ms to a minute (past RC_HOST_TIMEOUT_S the host is offline anyway). */
const LATENESS_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];
/** Seconds a query waits for the pool, from 100 µs to ten seconds. */
const WAIT_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type GrantPath = 'submit' | 'pass';

/**
 * A scrape's count of live jobs: running ones, and queued ones by priority, those in line and those waiting on something
 * besides a device (jobs.waits) apart. Each part reads a partial index of live jobs only, never the table of every job
 * that ever ran (EXPLAIN: test/e2e/metrics.test.ts).
 */
export const LIVE_JOBS_STATEMENT = `
  select 'running' as state, null::int as priority, count(*)::int as n from jobs where state = 'running'
  union all
  select 'queued', priority, count(*)::int from jobs where state = 'queued' and waits is null group by priority
  union all
  select 'queued', priority, count(*)::int from jobs where state = 'queued' and waits is not null group by priority`;

export class Metrics {
  readonly registry = new Registry();
  private readonly queueJobs: Gauge<'priority'>;
  private readonly jobs: Gauge<'state'>;
  private readonly jobsEnded: Counter<'state'>;
  private readonly devices: Gauge<'state'>;
  private readonly idleLeased: Gauge;
  private readonly grant: Record<GrantPath, { observe(v: number): void }>;
  private readonly heartbeatHandling: Histogram;
  private readonly heartbeatLateness: Histogram;
  private readonly outputBytes: Counter;
  private readonly outputChunks: Counter;
  private readonly poolWait: Histogram;
  private readonly heartbeatS: number;

  constructor(private readonly opts: MetricsOptions) {
    const registers = [this.registry];
    this.heartbeatS = opts.heartbeatMs / 1000;
    collectDefaultMetrics({ register: this.registry });
    this.queueJobs = new Gauge({
      name: 'rc_queue_jobs',
      help: 'Jobs waiting in the queue, by priority (from the database at scrape time).',
      labelNames: ['priority'],
      registers,
    });
    this.jobs = new Gauge({
      name: 'rc_jobs',
      help: 'Live jobs by state, queued or running, across all controllers (from the database at scrape time); ended jobs: rc_jobs_ended_total.',
      labelNames: ['state'],
      registers,
    });
    this.jobsEnded = new Counter({
      name: 'rc_jobs_ended_total',
      help: 'Jobs this controller ended, by final state (succeeded, failed, killed, lost, cancelled), since it started.',
      labelNames: ['state'],
      registers,
    });
    for (const state of FINAL_STATES) this.jobsEnded.labels(state).inc(0);
    this.devices = new Gauge({
      name: 'rc_devices',
      help: 'Devices by state: free, busy, off (a host turned off), unhealthy, offline.',
      labelNames: ['state'],
      registers,
    });
    this.idleLeased = new Gauge({
      name: 'rc_devices_idle_leased',
      help: 'Leased devices whose GPU has been idle since at least its previous sample (no process, low use: the idle rule of rc\'s watchdogs and usage); over rc_devices{state="busy"}, the idle share of what is held.',
      registers,
    });
    const grant = new Histogram({
      name: 'rc_job_grant_latency_seconds',
      help: "Seconds from a job's submit to its lease grant (database clock), by who granted it: the submit itself (submit) or a scheduling pass (pass).",
      labelNames: ['path'],
      buckets: GRANT_BUCKETS,
      registers,
    });
    this.grant = { submit: grant.labels('submit'), pass: grant.labels('pass') };
    this.heartbeatHandling = new Histogram({
      name: 'rc_heartbeat_handling_seconds',
      help: "Seconds from a heartbeat's receipt to its row stored.",
      buckets: STORE_BUCKETS,
      registers,
    });
    this.heartbeatLateness = new Histogram({
      name: 'rc_heartbeat_lateness_seconds',
      help: 'Seconds a heartbeat came later than the interval the controller asked for (the gap since the previous heartbeat on the same connection, less rc_heartbeat_interval_seconds; 0 when on time).',
      buckets: LATENESS_BUCKETS,
      registers,
    });
    new Gauge({ name: 'rc_heartbeat_interval_seconds', help: 'The heartbeat interval this controller asks workers for.', registers }).set(this.heartbeatS);
    this.outputBytes = new Counter({
      name: 'rc_job_output_bytes_total',
      help: "Bytes of jobs' output received from workers (resent chunks included).",
      registers,
    });
    this.outputChunks = new Counter({
      name: 'rc_job_output_chunks_total',
      help: "Chunks of jobs' output received from workers (resent chunks included).",
      registers,
    });
    const store = opts.outputStore ?? (() => ({ outOfSpace: false, waitingBytes: 0 }));
    new Gauge({
      name: 'rc_output_store_out_of_space',
      help: "1 while this controller's database refuses job output for lack of disk space (output is held, and acknowledged to workers only once stored), else 0.",
      registers,
      collect() {
        this.set(store().outOfSpace ? 1 : 0);
      },
    });
    new Gauge({
      name: 'rc_job_output_waiting_bytes',
      help: 'Bytes of job output this controller received and has not stored yet (past RC_OUTPUT_WAITING_BYTES, workers are cut off and keep it).',
      registers,
      collect() {
        this.set(store().waitingBytes);
      },
    });
    this.poolWait = new Histogram({
      name: 'rc_db_pool_wait_seconds',
      help: 'Sampled every 2 s: how much longer a trivial query took on the main database pool than on a connection of its own at the same moment (its wait for the pool: queued, or pipelined behind other queries).',
      buckets: WAIT_BUCKETS,
      registers,
    });
  }

  /** The registry's answer, with the database's and the fleet's gauges read now. */
  async text(): Promise<string> {
    await Promise.all([this.readJobs(), this.readDevices()]);
    return this.registry.metrics();
  }

  /**
   * Every series name this controller serves, as a query names it: a histogram's as `_bucket`, `_sum` and
   * `_count`. deploy/grafana/rc.json's queries name only these (test/unit/grafana-dashboard.test.ts).
   */
  seriesNames(): string[] {
    return this.registry
      .getMetricsAsArray()
      .flatMap((m) => (String(m.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((end) => m.name + end) : [m.name]));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** A job was granted its devices (its row as the claim returned it). */
  granted(path: GrantPath, job: { createdAt: Date; startedAt: Date | null }): void {
    if (job.startedAt) this.grant[path].observe(Math.max(0, job.startedAt.getTime() - job.createdAt.getTime()) / 1000);
  }

  /** The controller ended a job. */
  ended(state: string): void {
    this.jobsEnded.labels(state).inc();
  }

  /**
   * A heartbeat arrived; `previous` is when the last one arrived on the same connection (null: the first).
   * Returns when this one did (performance.now()), for heartbeatStored and the next call.
   */
  heartbeat(previous: number | null): number {
    const now = performance.now();
    if (previous !== null) this.heartbeatLateness.observe(Math.max(0, (now - previous) / 1000 - this.heartbeatS));
    return now;
  }

  /** The heartbeat that arrived at `receivedAt` (what heartbeat() returned) is stored. */
  heartbeatStored(receivedAt: number): void {
    this.heartbeatHandling.observe((performance.now() - receivedAt) / 1000);
  }

  /** A chunk of a job's output came from its worker. */
  output(bytes: number): void {
    this.outputBytes.inc(bytes);
    this.outputChunks.inc();
  }

  /**
   * One sample of the pool's wait: `select 1` on the main pool and, at the same moment,
   * `own` (the same query on a connection of its own); the difference is the time the
   * first waited for the pool. postgres.js has no queue metric: this is the wait a query
   * sent at that moment saw.
   */
  async samplePoolWait(own: () => Promise<unknown>): Promise<void> {
    const timed = async (query: () => Promise<unknown>) => {
      const t = performance.now();
      await query();
      return performance.now() - t;
    };
    const [pool, alone] = await Promise.all([timed(() => this.opts.sql`select 1`), timed(own)]);
    this.poolWait.observe(Math.max(0, pool - alone) / 1000);
  }

  private async readJobs(): Promise<void> {
    const rows = await this.opts.sql.unsafe<{ state: string; priority: number | null; n: number }[]>(LIVE_JOBS_STATEMENT);
    const byState: Record<string, number> = Object.fromEntries(LIVE_STATES.map((s) => [s, 0]));
    const byPriority = new Map<number, number>();
    for (const r of rows) {
      byState[r.state] = (byState[r.state] ?? 0) + r.n;
      if (r.state === 'queued') byPriority.set(r.priority!, (byPriority.get(r.priority!) ?? 0) + r.n);
    }
    this.queueJobs.reset();
    for (const [priority, n] of byPriority) this.queueJobs.labels(String(priority)).set(n);
    for (const [state, n] of Object.entries(byState)) this.jobs.labels(state).set(n);
  }

  private async readDevices(): Promise<void> {
    const counts = await this.opts.devicesByState();
    this.devices.reset();
    for (const state of DEVICE_STATES) this.devices.labels(state).set(0);
    for (const [state, n] of Object.entries(counts)) this.devices.labels(state).set(n);
    this.idleLeased.set(this.opts.idleLeased?.() ?? 0);
  }
}
