// The embedded Postgres as a supervised child of the controller: started again
// when it dies (a crash, the OOM killer, someone's kill -9) with a back-off and
// a line saying so, as any child a service manager runs. It runs in a process
// group of its own, so a terminal's Ctrl-C (sent to the whole foreground
// group) does not shut it down under the controller's orderly stop: the
// controller stops it last, once nothing writes to it.
import { spawn, type ChildProcess } from 'node:child_process';
import { restartDelayMs } from '../core/restart-delay';

/** Postgres's line once it takes connections (its messages are English: LC_MESSAGES=C). */
const READY = 'database system is ready to accept connections';

export interface PostgresProcess {
  /** The postgres program and its arguments (-D, -p, flags). */
  bin: string;
  args: string[];
  /** As root, Postgres runs as the postgres user. */
  uid?: number;
  gid?: number;
  /** Postgres's own output. */
  log: (text: string) => void;
  /** A line for the person running rc: it died, it is started again. */
  notice: (line: string) => void;
}

export class SupervisedPostgres {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private supervising = false;
  private delayMs: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastLines: string[] = [];

  constructor(private readonly p: PostgresProcess) {}

  /** Starts it; resolves once it takes connections, rejects with its last lines if it exits before. Supervised from then on. */
  async start(): Promise<void> {
    // Out of the terminal's process group, it no longer gets Ctrl-C: a process that exits without stop() (a script's
    // Ctrl-C, an uncaught error) asks for its fast shutdown on the way out. Only a SIGKILL leaves it running.
    process.on('exit', this.onOwnerExit);
    try {
      await this.spawnOnce();
    } catch (err) {
      process.off('exit', this.onOwnerExit);
      throw err;
    }
    this.supervising = true;
  }

  private readonly onOwnerExit = (): void => {
    this.stopping = true;
    this.child?.kill('SIGINT');
  };

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Fast shutdown (SIGINT: sessions ended, a checkpoint); SIGQUIT, then SIGKILL, only if it hangs. No restart after. */
  async stop(): Promise<void> {
    this.stopping = true;
    process.off('exit', this.onOwnerExit);
    if (this.timer) clearTimeout(this.timer);
    const child = this.child;
    if (!child) return;
    for (const [signal, ms] of [
      ['SIGINT', 5000],
      ['SIGQUIT', 3000],
      ['SIGKILL', 3000],
    ] as const) {
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), ms);
      });
      const gone = await Promise.race([this.exited.then(() => true), late]);
      clearTimeout(timer);
      if (gone) return;
    }
  }

  private spawnOnce(): Promise<void> {
    const startedAt = Date.now();
    const child = spawn(this.p.bin, this.p.args, {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(this.p.uid === undefined ? {} : { uid: this.p.uid, gid: this.p.gid }),
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    this.child = child;
    let onExit: () => void = () => {};
    this.exited = new Promise((r) => {
      onExit = r;
    });
    return new Promise((resolve, reject) => {
      let ready = false;
      // The last bytes seen, so a ready line split across two reads is still found.
      let tail = '';
      // Read for as long as it runs: a pipe nobody empties would block Postgres at its next log line.
      child.stderr!.on('data', (c: Buffer) => {
        const text = c.toString();
        this.lastLines = [...this.lastLines, text].slice(-20);
        this.p.log(text);
        tail = (tail + text).slice(-200);
        if (!ready && tail.includes(READY)) {
          ready = true;
          resolve();
        }
      });
      child.on('error', (err) => {
        if (!ready) reject(new Error(`postgres could not be run: ${err.message}`));
      });
      child.on('exit', (code, signal) => {
        if (this.child === child) this.child = null;
        onExit();
        if (!ready) reject(new Error(this.lastLines.join('').trim() || `postgres exited (${signal ?? `code ${code}`})`));
        if (this.stopping || !this.supervising) return;
        const delay = restartDelayMs(this.delayMs, Date.now() - startedAt);
        this.delayMs = delay;
        this.p.notice(`the embedded Postgres exited (${signal ?? `code ${code}`}); starting it again in ${delay / 1000} s`);
        this.timer = setTimeout(() => this.restart(), delay);
      });
    });
  }

  private restart(): void {
    if (this.stopping) return;
    this.spawnOnce().then(
      () => this.p.notice(`the embedded Postgres runs again (pid ${this.child?.pid ?? '?'})`),
      // Its exit already set the next try.
      () => {},
    );
  }
}
