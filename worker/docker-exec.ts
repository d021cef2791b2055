// One `docker exec`/`docker run` client running a job: its streams, with
// docker's own errors told as rc's (docker-exec-errors.ts); its life (kill
// with grace, the end once, after the job's processes are gone) is a JobLife.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { quietPipe } from './host-runtime';
import { DOCKER_FAILED } from './docker-exec-errors';
import type { JobCallbacks, ProcessTree } from './runtime';
import { JobLife } from './supervise';

// How long to wait for a finished job's pipes once its processes are gone.
const PIPE_GRACE_MS = 1000;

export interface StartOptions {
  /** Docker's own error (held back from the job's stderr) as the line to show instead. */
  translate(held: string, code: number | null): string | { line: string; code: number };
  /** The job's processes: signalled on a kill, reaped after the client exits and before cb.exit. */
  tree: ProcessTree;
  /** The client's environment (docker-env.ts clientEnv: the values of the job's `-e KEY` arguments); the worker's own by default. */
  env?: Record<string, string>;
  /** The job's standard input is piped (docker exec -i, StartJob.stdin). */
  stdin?: boolean;
}

// Docker's own errors, as opposed to the job's output: held back so they can
// be shown as one readable line.
const HOLD_MAX = 4096;
const DOCKER_ERROR = /^(OCI runtime exec failed|Error response from daemon|docker: Error response from daemon|\[FATAL tini)/;

/** One `docker exec`/`docker run` client: its streams, with docker's own errors told as rc's; its life (kill with grace, the end once) is a JobLife. */
export class JobProcess {
  private readonly life: JobLife;
  /** Output that looks like docker's own error, held until the exit code says whose it was. */
  private held: { stream: 1 | 2; data: Buffer }[] = [];
  private translate: StartOptions['translate'] | null = null;
  /** The command's standard input once the client runs, when it was asked for. */
  stdin: Writable | null = null;

  constructor(private readonly cb: JobCallbacks) {
    this.life = new JobLife({ say: (message) => cb.output(2, Buffer.from(message)), end: (code, signal) => this.end(code, signal) });
  }

  failAtOnce(code: number, message: string): void {
    this.life.failAtOnce(code, message);
  }

  kill(graceS: number): void {
    this.life.kill(graceS);
  }

  start(docker: string, args: string[], opts: StartOptions): void {
    const cut = () => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    // Something outside the sweep may still hold the pipes: the end does not wait long for them.
    // If docker itself hangs after the KILL, at least the client is let go.
    const started = this.life.start({ tree: opts.tree, drain: { ms: PIPE_GRACE_MS, cut }, hung: { ms: 10_000, fn: () => child.kill('SIGKILL') } });
    // Killed while its container was being made: it never runs.
    if (!started) return;
    this.translate = opts.translate;
    const child = spawn(docker, args, {
      stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: (opts.env ?? process.env) as NodeJS.ProcessEnv,
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    this.stdin = quietPipe(child.stdin);
    let anyOutput = false;
    let heldBytes = 0;
    // docker prints its own exec failures on stdout (OCI errors) or stderr.
    const onData = (stream: 1 | 2, d: Buffer) => {
      if (this.held.length > 0 || (!anyOutput && DOCKER_ERROR.test(d.toString('utf8')))) {
        this.held.push({ stream, data: d });
        heldBytes += d.length;
        // Docker's errors are short: this much is the job's own output after all.
        if (heldBytes <= HOLD_MAX) return;
        this.release();
      }
      anyOutput = true;
      this.cb.output(stream, d);
    };
    child.stdout.on('data', (d: Buffer) => onData(1, d));
    child.stderr.on('data', (d: Buffer) => onData(2, d));
    child.on('close', () => this.life.closed());
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return;
      const why = err.code === 'ENOENT' ? `the docker CLI (${docker}) is not installed or not on PATH` : err.message;
      this.life.spawnFailed(DOCKER_FAILED, `rc: cannot run the job: ${why}\n`);
    });
    child.on('exit', (code, signal) => this.life.exited(code, signal));
  }

  private release(): void {
    for (const h of this.held) this.cb.output(h.stream, h.data);
    this.held = [];
  }

  /** The client and the job's processes are gone: docker's own error, if it held one, becomes rc's line. */
  private end(code: number | null, signal: NodeJS.Signals | null): void {
    let finalCode = code;
    const text = Buffer.concat(this.held.map((h) => h.data)).toString('utf8');
    // docker's failures end in 125 (docker), 126/127 (the command), or 1 (a daemon error).
    if (this.translate && this.held.length > 0 && code !== null && (code >= 125 || (code === 1 && /Error response from daemon/.test(text)))) {
      const t = this.translate(text, code);
      const line = typeof t === 'string' ? t : t.line;
      if (typeof t !== 'string') finalCode = t.code;
      this.held = [];
      this.cb.output(2, Buffer.from(line));
    } else {
      this.release();
    }
    this.cb.exit(finalCode, signal);
  }
}
