// rc run --tty: an interactive terminal under a lease, through the controller's
// /tty socket. Built apart (dist/rc-tty.cjs, with socket.io-client) and loaded
// only for --tty, so the CLI's usual path stays lean.
//
// With a terminal on stdin it goes raw: every key, Ctrl-C and Ctrl-D included,
// reaches the program, and window resizes follow. Without one (a pipe), stdin
// is sent as it comes, its end as one Ctrl-D, and Ctrl-C kills the job as rc
// run's does. rc exits with the program's exit code.
import { spawnSync } from 'node:child_process';
import { io, type Socket } from 'socket.io-client';
import { EXIT, exitCodeForError } from '../core/exit-codes';
import { TTY_NAMESPACE, type TtyClientToController, type TtyControllerToClient, TtyEvent } from '../protocol/events';
import type { TtyExit, TtyOpenMessage } from '../protocol/wire';
import { errLine, stdout as stdoutStream } from './output';

export interface TtyRun {
  controller: string;
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
  const size = () => ({ cols: stdout.isTTY ? stdout.columns : 80, rows: stdout.isTTY ? stdout.rows : 24 });
  const socket: Socket<TtyControllerToClient, TtyClientToController> = io(o.controller + TTY_NAMESPACE, {
    auth: { token: o.token },
    transports: ['websocket'],
    reconnectionDelay: 300,
    reconnectionDelayMax: 2000,
  });

  return new Promise<number>((resolve) => {
    let jobId: string | null = o.jobId ?? null;
    let opened = false;
    let connected = false;
    let started = false;
    let interrupted = false;
    /** Bytes of the terminal's output written so far: a re-attach resumes after them. */
    let received = 0;
    let queuedNotice: NodeJS.Timeout | null = null;
    let lostSince: number | null = null;
    let giveUp: NodeJS.Timeout | null = null;
    let done = false;
    let terminal: RawTerminal | null = null;

    const say = (line: string) => errLine(`rc: ${line}`, raw && started);
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
    const onResize = () => {
      if (started) socket.emit(TtyEvent.resize, size());
    };
    const onSigint = () => {
      // Only without a terminal: in raw mode Ctrl-C is a byte for the program.
      if (interrupted) return finish(EXIT.interrupted);
      interrupted = true;
      say(`stopping job ${jobId ?? ''} (Ctrl-C again to leave without waiting)`);
      if (jobId) void o.kill(jobId).catch(() => {});
    };
    process.on('SIGINT', onSigint);

    socket.on('connect', () => {
      connected = true;
      lostSince = null;
      if (giveUp) {
        clearTimeout(giveUp);
        giveUp = null;
      }
      if (jobId) socket.emit(TtyEvent.open, { jobId, after: received, ...size() });
      else if (!opened) {
        opened = true;
        socket.emit(TtyEvent.open, { ...o.open, ...size() });
      } else {
        say('unreachable: lost the connection to the controller before it said which job it queued');
        finish(EXIT.unreachable);
      }
    });
    socket.on('connect_error', (err: Error) => {
      if (/^unauthorized|^forbidden/.test(err.message)) {
        say(err.message.replace(/^(\w+): /, '$1: '));
        return finish(EXIT.unauthorized);
      }
      if (!connected) {
        say(`unreachable: cannot reach the controller at ${o.controller} (${err.message}); is it running? Check RC_CONTROLLER`);
        finish(EXIT.unreachable);
      }
    });
    socket.on('disconnect', () => {
      if (done) return;
      if (lostSince === null) {
        lostSince = Date.now();
        say(`lost the connection to the controller; reconnecting${jobId ? ` to job ${jobId}` : ''}...`);
        giveUp = setTimeout(() => {
          say(`unreachable: lost the connection to the controller${jobId ? `; job ${jobId} ends unless it is re-attached soon` : ''}`);
          finish(EXIT.unreachable);
        }, RECONNECT_MS);
      }
    });
    socket.on(TtyEvent.queued, (e) => {
      const first = jobId === null;
      jobId = e.jobId;
      if (interrupted) void o.kill(e.jobId).catch(() => {});
      if (first) queuedNotice = setTimeout(() => say(`waiting for a device: job ${e.jobId} is queued (${e.position ?? 0} ahead of it)`), 1000);
    });
    socket.on(TtyEvent.started, (e) => {
      jobId = e.jobId;
      received = e.offset;
      if (queuedNotice) {
        clearTimeout(queuedNotice);
        queuedNotice = null;
      }
      if (started) return;
      started = true;
      if (raw) terminal = rawTerminal(stdin, stdout);
      stdin.on('data', (d: Buffer) => socket.emit(TtyEvent.input, d));
      // A pipe's end is one Ctrl-D: a shell reading it then exits.
      stdin.on('end', () => socket.emit(TtyEvent.input, '\x04'));
      stdin.resume();
      process.on('SIGWINCH', onResize);
    });
    socket.on(TtyEvent.output, (data) => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data);
      received += buf.length;
      // Acknowledged once written: a slow stdout holds the program back, not rc's memory.
      stdout.write(buf, () => socket.emit(TtyEvent.ack, buf.length));
    });
    socket.on(TtyEvent.exit, (e) => {
      terminal?.leave();
      stdout.write('', () => finish(o.exitCodeOf(e, interrupted)));
    });
    socket.on(TtyEvent.error, (e) => {
      if (e.code === 'detached') {
        say(`${e.message}; detaching`);
        return finish(EXIT.interrupted);
      }
      say(`${e.code}: ${e.message}`);
      finish(exitCodeForError(e.code));
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

/** stty on stdout's terminal (stty works on its stdin); its output, or null when it failed or is missing. */
function stty(args: string[]): string | null {
  const r = spawnSync('stty', args, { stdio: [1, 'pipe', 'ignore'], encoding: 'utf8', timeout: 2000 });
  return r.status === 0 ? r.stdout.trim() : null;
}
