// The worker `npm start` runs for this host, supervised: restarted if it dies,
// stopped with its controller. It holds an IPC channel to the controller and
// stops when that closes, so a controller killed with -9 takes it along; its
// pid is recorded in the data folder, so one that could not notice (stopped,
// stuck) is found and stopped at the next start, as a leftover Postgres is.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT_HOST_CONNECTED, EXIT_HOST_REMOVED } from '../protocol/worker';
import { restartDelayMs } from '../core/restart-delay';
import { controllerOnly } from './config';
import { isAlive, parentIsLiveRc, readProc } from './postmaster';

/** Where the running local worker's pid and start time are kept. */
export const PID_FILE = 'local-worker.pid';

/** What the pid file says: the process and when it started (clock ticks after boot), so a reused pid is told apart. */
export interface WorkerRecord {
  pid: number;
  startTicks: number;
}

/** The start time in /proc/<pid>/stat (field 22); null for a text that has none. */
export function startTicksOf(stat: string): number | null {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[19]);
  return fields[19] && Number.isInteger(ticks) ? ticks : null;
}

export function parseRecord(text: string): WorkerRecord | null {
  try {
    const r = JSON.parse(text) as Partial<WorkerRecord>;
    return Number.isInteger(r.pid) && (r.pid as number) > 0 && Number.isInteger(r.startTicks) ? (r as WorkerRecord) : null;
  } catch {
    return null;
  }
}

export type LeftoverWorker =
  | { kind: 'none' }
  /** The recorded worker, its controller gone: to be stopped. */
  | { kind: 'orphan'; pid: number }
  /** The recorded worker under a live rc: a second start must leave it be. */
  | { kind: 'in-use'; pid: number; parent: number };

/** What the pid file names, if it is still that worker: the same start time and the worker program (`entry`) in its command line. */
export function findLeftoverWorker(dataDir: string, entry: string): LeftoverWorker {
  const rec = parseRecord(readOr(() => readFileSync(join(dataDir, PID_FILE), 'utf8'), ''));
  if (!rec || !isWorker(rec, entry)) return { kind: 'none' };
  const proc = readProc(rec.pid);
  if (!proc) return { kind: 'none' };
  return parentIsLiveRc(readProc(proc.ppid)) ? { kind: 'in-use', pid: rec.pid, parent: proc.ppid } : { kind: 'orphan', pid: rec.pid };
}

function isWorker(rec: WorkerRecord, entry: string): boolean {
  const proc = readProc(rec.pid);
  const ticks = startTicksOf(readOr(() => readFileSync(`/proc/${rec.pid}/stat`, 'utf8'), ''));
  return proc !== null && isAlive(proc) && ticks === rec.startTicks && proc.argv.includes(entry);
}

/**
 * Stops a leftover worker: SIGTERM (and SIGCONT, for one that was stopped) lets
 * it end its jobs as at any stop; SIGKILL if it has not gone in 5 s. Before each
 * signal it is checked to be that worker still, so a reused pid is never signalled.
 */
export async function stopLeftoverWorker(dataDir: string, entry: string, pid: number): Promise<void> {
  const rec = parseRecord(readOr(() => readFileSync(join(dataDir, PID_FILE), 'utf8'), ''));
  if (!rec || rec.pid !== pid) return;
  for (const [signals, waitMs] of [
    [['SIGTERM', 'SIGCONT'], 5000],
    [['SIGKILL'], 5000],
  ] as const) {
    if (!isWorker(rec, entry)) return;
    for (const s of signals) process.kill(pid, s);
    const end = Date.now() + waitMs;
    while (Date.now() < end) {
      if (!isWorker(rec, entry)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`the local worker left by an earlier rc (pid ${pid}) did not stop, even after SIGKILL`);
}

export interface LocalWorkerOptions {
  /** dist/worker.js. */
  entry: string;
  dataDir: string;
  controller: string;
  credential: string;
  host: string;
  log: (msg: string) => void;
  /** RC_JOB_USER and RC_SCRATCH_DIR when its jobs run as a user of their own (server/local-job-user.ts). */
  jobEnv?: Record<string, string>;
}

/** The worker for this host, supervised: restarted if it dies, with the embedded Postgres's back-off; not after its host was removed. */
export class LocalWorker {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private delayMs: number | null = null;

  constructor(private readonly o: LocalWorkerOptions) {}

  get host(): string {
    return this.o.host;
  }

  start(): void {
    const startedAt = Date.now();
    const child = spawn(process.execPath, [this.o.entry], {
      // The IPC channel is the worker's tie to this process: it closes when this process ends, however it ends.
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        // The worker has no use for the database's password or a provider's key (config.ts controllerOnly).
        ...withoutControllerSettings(process.env),
        ...this.o.jobEnv,
        RC_CONTROLLER: this.o.controller,
        RC_HOST_TOKEN: this.o.credential,
        RC_HOST_NAME: this.o.host,
        RC_WORKSPACE: process.env.RC_WORKSPACE ?? join(this.o.dataDir, 'workspace'),
        RC_STATE_DIR: process.env.RC_STATE_DIR ?? join(this.o.dataDir, 'worker-state'),
      },
    });
    this.child = child;
    // Nothing is sent on the channel: it must not keep this process running.
    child.channel?.unref();
    const ticks = child.pid ? startTicksOf(readOr(() => readFileSync(`/proc/${child.pid}/stat`, 'utf8'), '')) : null;
    if (child.pid && ticks !== null) writeFileSync(join(this.o.dataDir, PID_FILE), JSON.stringify({ pid: child.pid, startTicks: ticks }), { mode: 0o600 });
    child.on('exit', (code, signal) => {
      if (this.stopping) return;
      if (code === EXIT_HOST_REMOVED) {
        this.o.log(
          `the local worker stopped for good: its host ${this.o.host} was removed (rc admin host rm), so it is not started again; to run jobs here, start npm start with RC_HOST_NAME set to another name`,
        );
        return;
      }
      if (code === EXIT_HOST_CONNECTED) {
        this.o.log(
          `the local worker stopped: another worker holds its host ${this.o.host} (its credential is used twice), so it is not started again; stop the other worker and restart npm start, or give this one another RC_HOST_NAME`,
        );
        return;
      }
      const delay = restartDelayMs(this.delayMs, Date.now() - startedAt);
      this.delayMs = delay;
      this.o.log(`local worker exited (${signal ?? code}); restarting in ${delay / 1000} s`);
      this.restartTimer = setTimeout(() => this.start(), delay);
    });
  }

  /** SIGTERM: the worker ends its jobs and reports them while the controller still listens; SIGKILL past `ms`. */
  stop(ms = 4000): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    const done = () => rmSync(join(this.o.dataDir, PID_FILE), { force: true });
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      done();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), ms);
      child.once('exit', () => {
        clearTimeout(t);
        done();
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}

function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function withoutControllerSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !controllerOnly(name))) as NodeJS.ProcessEnv;
}
