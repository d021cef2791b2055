// Running probes: the command runner (timeout, output cap, process group),
// the built-in probes and the site probes folder. Every function here turns
// failures into results; none throws.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants, readdirSync, statSync, statfsSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { ProbeResult } from '../labels';
import { firstLine, parseCudaVersion, parseNvidiaSmiCsv, parseSiteProbeOutput, MAX_KEY_LENGTH, type Pair } from './parse';

export const PROBE_TIMEOUT_MS = 10_000;
export const PROBE_MAX_OUTPUT = 64 * 1024;

export interface CommandOptions {
  /** The command's environment; its PATH is where a bare command name is looked up. */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
  /** Stdout beyond this many bytes fails the run; stderr beyond it is dropped. */
  maxBytes: number;
}

export type CommandResult =
  | { kind: 'exited'; code: number; stdout: string; stderr: string }
  | { kind: 'signalled'; signal: string; stdout: string; stderr: string }
  | { kind: 'timed-out'; timeoutMs: number }
  | { kind: 'too-much-output'; maxBytes: number }
  | { kind: 'not-started'; code: string | undefined; message: string };

/**
 * Runs a command with no stdin, in a process group of its own. On a timeout
 * or too much output the whole group is killed; when the command exits,
 * whatever it left running in its group is killed too.
 */
export function runCommand(file: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
  return new Promise((resolve) => {
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(file, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ kind: 'not-started', code: (err as NodeJS.ErrnoException).code, message: (err as Error).message });
      return;
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let ending: 'timeout' | 'overflow' | null = null;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = (result: CommandResult) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      resolve(result);
    };
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    // If something outside the group still holds the pipes, stop waiting for them.
    const giveUpOnPipesSoon = () =>
      timers.push(
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          close(null, 'SIGKILL');
        }, 1000),
      );
    const close = (code: number | null, signal: NodeJS.Signals | null) => {
      if (ending === 'timeout') return finish({ kind: 'timed-out', timeoutMs: opts.timeoutMs });
      if (ending === 'overflow') return finish({ kind: 'too-much-output', maxBytes: opts.maxBytes });
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== null) finish({ kind: 'exited', code, stdout, stderr });
      else finish({ kind: 'signalled', signal: signal ?? 'an unknown signal', stdout, stderr });
    };
    timers.push(
      setTimeout(() => {
        ending ??= 'timeout';
        killGroup();
        giveUpOnPipesSoon();
      }, opts.timeoutMs),
    );
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes <= opts.maxBytes) {
        out.push(d);
        return;
      }
      if (!ending) {
        ending = 'overflow';
        killGroup();
        giveUpOnPipesSoon();
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      if (errBytes < opts.maxBytes) err.push(d.subarray(0, opts.maxBytes - errBytes));
      errBytes += d.length;
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      if (child.pid === undefined) finish({ kind: 'not-started', code: e.code, message: e.message });
    });
    child.on('exit', (code, signal) => {
      killGroup();
      const t = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        close(code, signal);
      }, 1000);
      timers.push(t);
    });
    child.on('close', (code, signal) => close(code, signal));
  });
}

/** Why a command run is not a success, or null when it exited 0. `name` prefixes the reason when given. */
export function commandFailure(result: CommandResult, name?: string, fallbackToStdout = false): string | null {
  const prefix = name ? `${name} ` : '';
  switch (result.kind) {
    case 'exited': {
      if (result.code === 0) return null;
      const line = firstLine(result.stderr) || (fallbackToStdout ? firstLine(result.stdout) : '');
      return `${prefix}exited ${result.code}${line ? `: ${line}` : ''}`;
    }
    case 'signalled':
      return `${prefix}was killed by ${result.signal}`;
    case 'timed-out':
      return `${prefix}timed out after ${result.timeoutMs / 1000}s`;
    case 'too-much-output':
      return `${prefix}printed more than ${Math.round(result.maxBytes / 1024)} KiB`;
    case 'not-started': {
      const why = result.code === 'EACCES' ? 'permission denied' : result.code === 'ENOENT' ? 'not found (or its #! interpreter is missing)' : result.message;
      return `${prefix}could not start: ${why}`;
    }
  }
}

export const NVIDIA_SMI_QUERY = ['--query-gpu=index,uuid,name,memory.total,driver_version', '--format=csv,noheader,nounits'];

export interface NvidiaSmiOptions {
  /** `nvidia-smi` (looked up on env.PATH) or a path to it. */
  command: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
}

/**
 * The nvidia-smi probe: the GPU query plus the banner of a plain call for
 * cuda_version. 'absent' when there is no nvidia-smi at all (a CPU host).
 * Either call failing fails the whole run.
 */
export async function nvidiaSmiProbe(opts: NvidiaSmiOptions): Promise<ProbeResult | 'absent'> {
  const probe = 'nvidia-smi';
  const run = (args: string[]) => runCommand(opts.command, args, { env: opts.env, timeoutMs: opts.timeoutMs, maxBytes: 1024 * 1024 });
  const query = await run(NVIDIA_SMI_QUERY);
  if (query.kind === 'not-started' && query.code === 'ENOENT') return 'absent';
  const queryFailed = commandFailure(query, probe, true);
  if (queryFailed || query.kind !== 'exited') return { probe, ok: false, reason: queryFailed ?? `${probe} failed` };
  const rows = parseNvidiaSmiCsv(query.stdout);
  const banner = await run([]);
  const bannerFailed = commandFailure(banner, probe, true);
  if (bannerFailed || banner.kind !== 'exited') return { probe, ok: false, reason: bannerFailed ?? `${probe} failed` };
  const cuda = parseCudaVersion(banner.stdout);
  const devices = new Map<number, Pair[]>(rows.map((row) => [row.index, cuda ? [...row.labels, { key: 'cuda_version', value: cuda }] : row.labels]));
  return { probe, ok: true, found: { host: [], devices } };
}

export interface HostProbeOptions {
  /** The workspace folder, whose free space is disk_free_bytes. */
  workspace: string;
  /** CPU slots to offer (a host with no nvidia-smi), or null for none. */
  cpuSlots: number | null;
  /** Host labels the worker knows of itself (its runtime, the image). */
  labels?: Pair[];
}

export const CPU_SLOT_NOTE = 'not a GPU: this host has no nvidia-smi, so rc offers CPU slots';

/** The host probe: hostname, cpus, memory, free disk of the workspace, and the CPU slots of a host with no GPUs. */
export function hostProbe(opts: HostProbeOptions): ProbeResult {
  const host: Pair[] = [
    { key: 'hostname', value: hostname() },
    { key: 'cpus', value: String(cpus().length) },
    { key: 'mem_total_bytes', value: String(totalmem()) },
    ...(opts.labels ?? []),
  ];
  const unrefreshed: { key: string; reason: string }[] = [];
  try {
    const fs = statfsSync(opts.workspace, { bigint: true });
    host.push({ key: 'disk_free_bytes', value: String(fs.bavail * fs.bsize) });
  } catch (err) {
    unrefreshed.push({
      key: 'disk_free_bytes',
      reason: `cannot read the free space of ${opts.workspace}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    });
  }
  const devices = new Map<number, Pair[]>();
  for (let index = 0; index < (opts.cpuSlots ?? 0); index++) {
    devices.set(index, [
      { key: 'kind', value: 'cpu-slot' },
      { key: 'gpu_model', value: 'none' },
      { key: 'gpu_family', value: 'none' },
      { key: 'note', value: CPU_SLOT_NOTE },
    ]);
  }
  return { probe: 'host', ok: true, found: { host, devices }, unrefreshed };
}

export type SiteProbeListing = { ok: true; names: string[]; skipped: { name: string; why: string }[] } | { ok: false; reason: string };

/** Names of the executable regular files in the folder, sorted; dotfiles are ignored, other files skipped with why. */
export function listSiteProbes(dir: string, reserved: readonly string[] = []): SiteProbeListing {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'ENOTDIR'
          ? 'is not a folder'
          : code === 'EACCES'
            ? 'cannot be read: permission denied'
            : `cannot be read: ${(err as Error).message}`;
    return { ok: false, reason: `the probes folder ${dir} ${why}` };
  }
  const names: string[] = [];
  const skipped: { name: string; why: string }[] = [];
  for (const name of entries.sort()) {
    if (name.startsWith('.')) continue;
    const why = unusable(join(dir, name), name, reserved);
    if (why) skipped.push({ name, why });
    else names.push(name);
  }
  return { ok: true, names, skipped };
}

function unusable(path: string, name: string, reserved: readonly string[]): string | null {
  if (reserved.includes(name)) return 'its name is taken by a built-in probe';
  if (name.length > MAX_KEY_LENGTH) return `its name is longer than ${MAX_KEY_LENGTH} characters`;
  try {
    if (!statSync(path).isFile()) return 'not a regular file';
    accessSync(path, constants.X_OK);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EACCES' ? 'not executable' : code === 'ENOENT' ? 'a broken link' : (err as Error).message;
  }
}

export interface SiteProbeOptions {
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  maxBytes: number;
}

/** Runs one site probe (no arguments, cwd the probes folder) and parses what it printed. */
export async function runSiteProbe(dir: string, name: string, opts: SiteProbeOptions): Promise<ProbeResult> {
  const folder = resolve(dir); // the command's path must not depend on its cwd
  const result = await runCommand(join(folder, name), [], { cwd: folder, env: opts.env, timeoutMs: opts.timeoutMs, maxBytes: opts.maxBytes });
  const failed = commandFailure(result);
  if (failed || result.kind !== 'exited') return { probe: name, ok: false, reason: failed ?? 'failed' };
  const parsed = parseSiteProbeOutput(result.stdout);
  return parsed.ok ? { probe: name, ok: true, found: parsed.found } : { probe: name, ok: false, reason: parsed.reason };
}
