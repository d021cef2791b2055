// Runs a job's command directly on the host: its own process group,
// CUDA_VISIBLE_DEVICES set, stdout and stderr piped back. When the command
// exits, whatever it left behind in its group is killed.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { accessSync, constants as fsConstants, existsSync, statSync } from 'node:fs';
import type { StartJob } from '../protocol/worker';
import { LOGIN_SHELL } from '../protocol/tty';
import type { JobCallbacks, RunningJob, RunningTty, Runtime, TtyCallbacks } from './runtime';
import { findOnPath, PtyJob, signalHostTty } from './tty';

/** Jobs run directly on the host, for hosts without Docker (and `npm start`'s local worker). */
export class HostRuntime implements Runtime {
  readonly name = 'host' as const;
  readonly labels = [{ key: 'runtime', value: 'host' }];
  constructor(private readonly workspace: string) {}
  prepare(): Promise<[]> { return Promise.resolve([]); }
  run(order: StartJob, cb: JobCallbacks): RunningJob { return runOnHost(order, this.workspace, cb); }
  runTty(order: StartJob, cb: TtyCallbacks): RunningTty { return runTtyOnHost(order, this.workspace, cb); }
}

const PASS_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

export function jobEnv(order: StartJob, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASS_ENV) { const v = base[k]; if (v !== undefined) env[k] = v; }
  // UUIDs name the same card whatever order CUDA enumerates them in.
  env.CUDA_VISIBLE_DEVICES = order.devices.map((d) => d.uuid ?? String(d.index)).join(',');
  env.CUDA_DEVICE_ORDER = 'PCI_BUS_ID';
  env.RC_JOB_ID = order.jobId;
  env.RC_DEVICES = order.devices.map((d) => d.name).join(',');
  return env;
}

export function runOnHost(order: StartJob, workspace: string, cb: JobCallbacks): RunningJob {
  const cwd = order.cwd ?? workspace;
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    return failAtOnce(cb, 126, `rc: the working directory ${cwd} does not exist on this host\n`);
  }
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(order.argv[0]!, order.argv.slice(1), {
    cwd, env: jobEnv(order) as NodeJS.ProcessEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let done = false;
  let killTimer: NodeJS.Timeout | null = null;
  const finish = (code: number | null, signal: NodeJS.Signals | null) => {
    if (done) return;
    done = true;
    if (killTimer) clearTimeout(killTimer);
    cb.exit(code, signal);
  };
  child.stdout.on('data', (d: Buffer) => cb.output(1, d));
  child.stderr.on('data', (d: Buffer) => cb.output(2, d));
  child.on('error', (err: NodeJS.ErrnoException) => {
    // Only a failed spawn matters here; later errors end in 'exit' anyway.
    if (child.pid !== undefined) return;
    const [code, why] = err.code === 'ENOENT' ? [127, 'command not found'] : err.code === 'EACCES' ? [126, 'permission denied'] : [126, err.message];
    cb.output(2, Buffer.from(`rc: ${order.argv[0]}: ${why}\n`));
    finish(code, null);
  });
  child.on('exit', (code, signal) => {
    // The command is over: nothing it started may outlive it.
    signalGroup(child.pid!, 'SIGKILL');
    // Give the pipes a moment to drain what was written before the exit.
    const t = setTimeout(() => { child.stdout.destroy(); child.stderr.destroy(); finish(code, signal); }, 2000);
    child.once('close', () => { clearTimeout(t); finish(code, signal); });
  });
  return {
    kill(graceS: number) {
      if (done || child.pid === undefined) return;
      signalGroup(child.pid, 'SIGTERM');
      if (!killTimer) killTimer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceS * 1000);
    },
  };
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

function failAtOnce(cb: JobCallbacks, code: number, message: string): RunningJob {
  setImmediate(() => { cb.output(2, Buffer.from(message)); cb.exit(code, null); });
  return { kill() {} };
}

/** A job under a pseudo-terminal on the host: same cwd and environment as runOnHost, TERM=xterm-256color. */
export function runTtyOnHost(order: StartJob, workspace: string, cb: TtyCallbacks): RunningTty {
  const job = new PtyJob(cb);
  const cwd = order.cwd ?? workspace;
  const argv = order.argv.length ? order.argv : LOGIN_SHELL;
  const env = jobEnv(order);
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    job.failAtOnce(126, `rc: the working directory ${cwd} does not exist on this host\n`);
    return job;
  }
  const file = findOnPath(argv[0]!, env.PATH, isExecutableFile);
  if (!file) {
    job.failAtOnce(127, `rc: ${argv[0]}: command not found\n`);
    return job;
  }
  job.start({
    file, args: argv.slice(1), cwd, env, cols: order.tty?.cols ?? 80, rows: order.tty?.rows ?? 24,
    signal: (sig, pid) => { signalHostTty(pid, order.jobId, sig === 'TERM' ? 'SIGTERM' : 'SIGKILL'); },
    afterExit: (pid) => { signalHostTty(pid, order.jobId, 'SIGKILL'); },
  });
  return job;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
