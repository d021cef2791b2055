// rc run --tty: an interactive terminal under a lease, through the controller's
// /tty socket. Built apart (dist/rc-tty.cjs, with socket.io-client) and loaded
// only for --tty, so the CLI's usual path stays lean.
//
// With a terminal on stdin it goes raw: every key, Ctrl-C and Ctrl-D included,
// reaches the program, and window resizes follow. Without one (a pipe), stdin
// is sent as it comes, its end as one Ctrl-D, and Ctrl-C kills the job as rc
// run's does. rc exits with the program's exit code.
// What to send and when (open, re-attach after the bytes received, acks, the
// end) is protocol/tty-client.ts, shared with the dashboard's terminal; this
// file is its adapter: the socket, stdin and stdout, stderr notices, and how
// long a lost connection may take to come back.
import { spawnSync } from 'node:child_process';
import { io, type Socket } from 'socket.io-client';
import { EXIT, exitCodeForError } from '../core/exit-codes';
import { TTY_NAMESPACE, type TtyClientToController, type TtyControllerToClient } from '../protocol/events';
import { listenOnSocket, sendOnSocket, type TtyClientAction, TtyClient } from '../protocol/tty-client';
import type { TtyExit, TtyOpenMessage } from '../protocol/wire';
import { rotateControllers } from '../protocol/controllers';
import { errLine, stdout as stdoutStream } from './output';

export interface TtyRun {
  /** The controller to dial first, and the list it is in (RC_CONTROLLER): a lost one is passed over for the next. */
  controller: string;
  controllers: string[];
  token: string;
  /** The submit fields (argv, selector, device, cwd, gpus, priority, wait, time limits, submitter); the size is added here. */
  open: Omit<TtyOpenMessage, 'cols' | 'rows'>;
  /** Re-attach to this running terminal (rc attach) instead of opening one. */
  jobId?: string;
  /** Kills the job through the REST API (Ctrl-C without a terminal). */
  kill(jobId: string): Promise<void>;
  exitCodeOf(event: TtyExit, interrupted: boolean): number;
}

/** How long a dropped connection may take to come back before rc gives up (the job then ends after the controller's grace period). */
const RECONNECT_MS = 120_000;

export function runTty(o: TtyRun): Promise<number> {
  const stdin = process.stdin;
  const stdout = stdoutStream();
  const raw = stdin.isTTY === true;
  const size = () => terminalSize(stdout.isTTY ? stdout.columns : 0, stdout.isTTY ? stdout.rows : 0);
  const client = new TtyClient({ open: o.open, jobId: o.jobId, size });
  const socket: Socket<TtyControllerToClient, TtyClientToController> = io(o.controller + TTY_NAMESPACE, {
    auth: { token: o.token },
    transports: ['websocket'],
    reconnectionDelay: 300,
    reconnectionDelayMax: 2000,
  });
  const list = o.controllers.length ? o.controllers : [o.controller];
  rotateControllers(socket as unknown as Socket, list, TTY_NAMESPACE, () => {}, Math.max(0, list.indexOf(o.controller)));

  return new Promise<number>((resolve) => {
    let interrupted = false;
    let queuedNotice: NodeJS.Timeout | null = null;
    let lostSince: number | null = null;
    let giveUp: NodeJS.Timeout | null = null;
    let done = false;
    let terminal: RawTerminal | null = null;

    const say = (line: string) => errLine(`rc: ${line}`, raw && client.everStarted);
    const finish = (code: number) => {
      if (done) return;
      done = true;
      if (queuedNotice) clearTimeout(queuedNotice);
      if (giveUp) clearTimeout(giveUp);
      terminal?.leave();
      stdin.pause();
      process.off('SIGWINCH', onResize);
      process.off('SIGINT', onSigint);
      socket.close();
      resolve(code);
    };
    const act = (actions: TtyClientAction[]) => {
      for (const a of actions) perform(a);
    };
    const perform = (a: TtyClientAction) => {
      if (sendOnSocket(socket, a)) return;
      switch (a.type) {
        case 'write': {
          const n = a.bytes.length;
          // Acknowledged once written: a slow stdout holds the program back, not rc's memory.
          stdout.write(a.bytes, () => act(client.written(n)));
          return;
        }
        case 'queued':
          if (interrupted) void o.kill(a.jobId).catch(() => {});
          if (a.first) queuedNotice = setTimeout(() => say(`waiting for a device: job ${a.jobId} is queued (${a.position ?? 0} ahead of it)`), 1000);
          return;
        case 'started':
          if (queuedNotice) {
            clearTimeout(queuedNotice);
            queuedNotice = null;
          }
          if (!a.first) return;
          if (raw) terminal = rawTerminal(stdin, stdout);
          // stdin is read from now on: what was typed before waits in it.
          stdin.on('data', (d: Buffer) => act(client.input(d)));
          // A pipe's end is one Ctrl-D: a shell reading it then exits.
          stdin.on('end', () => act(client.input('\x04')));
          stdin.resume();
          process.on('SIGWINCH', onResize);
          return;
        case 'exit':
          terminal?.leave();
          stdout.write('', () => finish(o.exitCodeOf(a.exit, interrupted)));
          return;
        case 'detached':
          say(`${a.message}; detaching`);
          return finish(EXIT.interrupted);
        case 'refused':
          say(`${a.code}: ${a.message}`);
          return finish(exitCodeForError(a.code));
        case 'lost':
          if (lostSince !== null) return;
          lostSince = Date.now();
          say(`lost the connection to the controller; reconnecting${a.jobId ? ` to job ${a.jobId}` : ''}...`);
          giveUp = setTimeout(() => {
            const id = client.jobId;
            say(`unreachable: lost the connection to the controller${id ? `; job ${id} ends unless it is re-attached soon` : ''}`);
            finish(EXIT.unreachable);
          }, RECONNECT_MS);
          return;
        case 'stranded':
          say('unreachable: lost the connection to the controller before it said which job it queued');
          return finish(EXIT.unreachable);
        case 'unreachable':
          if (/^unauthorized|^forbidden/.test(a.message)) {
            say(a.message.replace(/^(\w+): /, '$1: '));
            return finish(EXIT.unauthorized);
          }
          // Too many refused tokens from this address (server/auth-limit.ts): retrying would not help for a while.
          if (a.message.startsWith('rate_limited:')) {
            say(a.message);
            return finish(EXIT.error);
          }
          if (!a.everConnected) {
            say(`unreachable: cannot reach the controller at ${o.controller} (${a.message}); is it running? Check RC_CONTROLLER`);
            finish(EXIT.unreachable);
          }
          return;
      }
    };
    const onResize = () => act(client.resize(size()));
    const onSigint = () => {
      // Only without a terminal: in raw mode Ctrl-C is a byte for the program.
      if (interrupted) return finish(EXIT.interrupted);
      interrupted = true;
      const id = client.jobId;
      say(`stopping job ${id ?? ''} (Ctrl-C again to leave without waiting)`);
      if (id) void o.kill(id).catch(() => {});
    };
    process.on('SIGINT', onSigint);

    listenOnSocket(socket, client, act, {
      connected: () => {
        lostSince = null;
        if (giveUp) {
          clearTimeout(giveUp);
          giveUp = null;
        }
      },
      // After finish (its socket.close() is a disconnect too) nothing is said or retried.
      disconnected: () => !done,
    });
  });
}

interface RawTerminal {
  leave(): void;
}

/**
 * The local terminal made raw as ssh makes it (cfmakeraw). Node's raw mode
 * keeps output processing (ONLCR), so the remote terminal's "\r\n" would
 * print as "\r\r\n": stty turns it off on stdout's terminal, and leave()
 * puts the saved settings back.
 */
function rawTerminal(stdin: NodeJS.ReadStream, stdout: NodeJS.WriteStream): RawTerminal {
  stdin.setRawMode(true);
  const saved = stdout.isTTY ? stty(['-g']) : null;
  if (saved) stty(['-opost']);
  let left = false;
  return {
    leave() {
      if (left) return;
      left = true;
      stdin.setRawMode(false);
      if (saved) stty([saved]);
    },
  };
}

/**
 * stty on stdout's terminal; its output, or null when it failed or is missing.
 * stty works on its stdin: a shell makes that stdout, passed as fd 3 (Bun, which
 * compiles the standalone rc, refuses stdout itself as a child's stdin).
 */
function stty(args: string[]): string | null {
  const r = spawnSync('/bin/sh', ['-c', 'exec stty "$@" <&3', 'stty', ...args], { stdio: ['ignore', 'pipe', 'ignore', 1], encoding: 'utf8', timeout: 2000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** The size a terminal starts at: its own, or 80×24 where it reports none (0×0 under `script`, some CI and editor shells). */
export function terminalSize(cols: number | undefined, rows: number | undefined): { cols: number; rows: number } {
  const ok = (n: number | undefined, max: number) => Number.isInteger(n) && n! >= 1 && n! <= max;
  return ok(cols, 1000) && ok(rows, 1000) ? { cols: cols!, rows: rows! } : { cols: 80, rows: 24 };
}
