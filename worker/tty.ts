// A job under a pseudo-terminal (rc run --tty, the dashboard's terminal),
// through node-pty. The runtime says what to spawn and how to signal the
// job's processes; this file does the terminal: output, input, resizes, flow
// control (pause stops reading, so the program blocks) and kill with grace.
import { constants } from 'node:os';
import { constants as fsConstants, readdirSync, readFileSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { spawn as ptySpawn, type IPty } from 'node-pty';
import type { RunningTty, TtyCallbacks } from './runtime';

export interface PtySpec {
  file: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** Signals every process of the job (the program's pid is given). */
  signal(sig: 'TERM' | 'KILL', pid: number): Promise<void> | void;
  /** After the program exits: nothing it started may outlive it. */
  afterExit(pid: number): Promise<void> | void;
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

export class PtyJob implements RunningTty {
  private pty: IPty | null = null;
  private done = false;
  private killTimers: NodeJS.Timeout[] = [];
  private killedEarly = false;
  private paused = false;
  /** The terminal's stream is ending: it is read to the end, flow control or not (guardLastOutput). */
  private gone = false;

  constructor(private readonly cb: TtyCallbacks) {}

  /** Ends the job at once with a message on the terminal (the program never ran). */
  failAtOnce(code: number, message: string): void {
    setImmediate(() => {
      if (this.done) return;
      this.cb.output(Buffer.from(message.replace(/\r?\n/g, '\r\n')));
      this.finish(code, null);
    });
  }

  start(spec: PtySpec): void {
    if (this.killedEarly) { this.finish(null, 'SIGTERM'); return; }
    let pty: IPty;
    try {
      pty = ptySpawn(spec.file, spec.args, {
        name: 'xterm-256color', cols: spec.cols, rows: spec.rows, cwd: spec.cwd, env: { ...spec.env, TERM: 'xterm-256color' },
        // Bytes, not strings: output reaches the client exactly as the program wrote it.
        encoding: null,
      } as Parameters<typeof ptySpawn>[2]);
    } catch (err) {
      this.failAtOnce(126, `rc: cannot start ${spec.file}: ${err instanceof Error ? err.message : String(err)}\n`);
      return;
    }
    this.pty = pty;
    guardLastOutput(pty, () => { this.gone = true; });
    if (this.paused) pty.pause();
    pty.onData((d: string | Buffer) => { if (!this.done) this.cb.output(typeof d === 'string' ? Buffer.from(d) : d); });
    pty.onExit(({ exitCode, signal }) => {
      const sig = signal ? SIGNAL_NAMES.get(signal) ?? 'SIGKILL' : null;
      void Promise.resolve(spec.afterExit(pty.pid)).catch(() => {}).finally(() => this.finish(sig ? null : exitCode, sig));
    });
    this.signal = (sig) => spec.signal(sig, pty.pid);
  }

  private signal: (sig: 'TERM' | 'KILL') => Promise<void> | void = () => {};

  write(data: string | Buffer): void {
    if (!this.done) this.pty?.write(typeof data === 'string' ? data : data.toString('utf8'));
  }

  resize(cols: number, rows: number): void {
    if (this.done || !this.pty) return;
    try { this.pty.resize(cols, rows); } catch { /* the terminal is closing */ }
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    if (this.done || this.gone || !this.pty) return;
    this.pty.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.done) this.pty?.resume();
  }

  kill(graceS: number): void {
    if (this.done) return;
    if (!this.pty) { this.killedEarly = true; return; }
    if (this.killTimers.length) return;
    void Promise.resolve(this.signal('TERM')).catch(() => {});
    this.killTimers.push(setTimeout(() => {
      if (this.done) return;
      void Promise.resolve(this.signal('KILL')).catch(() => {});
    }, graceS * 1000));
  }

  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.done) return;
    this.done = true;
    for (const t of this.killTimers) clearTimeout(t);
    this.cb.exit(code, signal);
  }
}

/**
 * A program's last output can be lost between its terminal and node-pty
 * (1.1.0, pinned), in two ways:
 * - libuv takes "hung up" after a short read as the end of the stream, and a
 *   pty master says "hung up" as soon as the program closes its side, while
 *   the program's last writes may still be on their way to the master (the
 *   kernel moves them in a work item that a busy machine runs late);
 * - node-pty destroys the stream 200 ms after the program's exit when it has
 *   not ended by itself (a paused terminal, a busy event loop).
 * Whichever ends the stream (its end, its EIO, node-pty's timer) first lets
 * what the stream holds flow, then reads the master itself to its end before
 * the stream goes: with the program's side closed, a read waits for the
 * kernel's pending work and then says EIO. `exited` is told at that moment.
 */
export function guardLastOutput(pty: IPty, exited: () => void = () => {}): void {
  type Sock = { destroy(...args: unknown[]): unknown; resume(): unknown; emit(event: string, data: unknown): unknown; readableEncoding?: BufferEncoding | null };
  const sock = (pty as unknown as { _socket?: Sock })._socket;
  const fd = (pty as unknown as { _fd?: number })._fd;
  if (!sock || typeof sock.destroy !== 'function' || typeof sock.resume !== 'function' || typeof fd !== 'number') return;
  const destroy = sock.destroy.bind(sock);
  let pending = false;
  sock.destroy = (...args: unknown[]) => {
    if (pending) return sock;
    pending = true;
    exited();
    // What the stream already holds goes first: resume() hands it out on the next tick.
    sock.resume();
    setImmediate(() => {
      const decoder = sock.readableEncoding ? new StringDecoder(sock.readableEncoding) : null;
      for (const chunk of readRest(fd)) sock.emit('data', decoder ? decoder.write(chunk) : chunk);
      destroy(...args);
    });
    return sock;
  };
}

/** At most this much is read from a finished program's terminal (a child it left behind may still be writing). */
const REST_LIMIT = 1024 * 1024;

/**
 * What is left in a pty master: until EIO (the terminal is empty and nobody
 * holds its other side) or EAGAIN (a process the program left behind still
 * holds it, and it has nothing more now). Only on a non-blocking descriptor
 * (node-pty makes the master one), so this never waits.
 */
function readRest(fd: number): Buffer[] {
  if (!isNonBlocking(fd)) return [];
  const chunks: Buffer[] = [];
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let total = 0; total < REST_LIMIT;) {
    let n: number;
    try { n = readSync(fd, buf, 0, buf.length, null); } catch { break; }
    if (n <= 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    total += n;
  }
  return chunks;
}

function isNonBlocking(fd: number): boolean {
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    return flags !== null && (parseInt(flags[1]!, 8) & fsConstants.O_NONBLOCK) !== 0;
  } catch {
    return false;
  }
}

/**
 * Signals, on this host, the terminal's session (the pty's process is a
 * session leader, and an interactive shell puts each background job in a
 * process group of its own, so the group alone is not enough) and every
 * process whose environment carries RC_JOB_ID=<jobId> (whatever left the session).
 */
export function signalHostTty(pid: number, jobId: string, sig: NodeJS.Signals): number {
  const hits = new Set<number>();
  try { process.kill(-pid, sig); hits.add(pid); } catch { /* the group is gone */ }
  const tag = `RC_JOB_ID=${jobId}`;
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = Number(entry);
    if (p === process.pid || hits.has(p)) continue;
    let match = false;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      match = Number(fields[3]) === pid;
      if (!match) match = readFileSync(`/proc/${p}/environ`, 'latin1').split('\0').includes(tag);
    } catch { /* gone, or not ours to read */ }
    if (!match) continue;
    try { process.kill(p, sig); hits.add(p); } catch { /* gone */ }
  }
  return hits.size;
}

function safeReaddir(dir: string): string[] {
  try { return readdirSync(dir); } catch { return []; }
}

/** Where a command would be found on PATH (or the path itself); null when nowhere. */
export function findOnPath(command: string, path: string | undefined, isExecutable: (p: string) => boolean): string | null {
  if (command.includes('/')) return isExecutable(command) ? command : null;
  for (const dir of (path ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const full = `${dir}/${command}`;
    if (isExecutable(full)) return full;
  }
  return null;
}
