// A real rc stack for end-to-end tests: the built controller and worker as
// separate processes on a fresh database, driven through the built CLI.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io, type Socket } from 'socket.io-client';
import { freshDatabase } from './db';

const ROOT = join(import.meta.dirname, '..', '..');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export class Stack {
  controllerUrl = '';
  clientToken = '';
  adminToken = '';
  private controller: ChildProcess | null = null;
  readonly workers = new Map<string, ChildProcess>();
  /** What each worker printed (its log), for tests that watch it move between controllers. */
  readonly workerLogs = new Map<string, string>();
  readonly dataDir = mkdtempSync(join(tmpdir(), 'rc-stack-'));
  private dropDb: (() => Promise<void>) | null = null;
  dbUrl = '';
  controllerLog = '';

  /** The controller's environment beyond the stack's own; a test may change it between a stopController and a startController. */
  controllerEnv: Record<string, string> = {};

  /**
   * `dashboard`: serve the Next.js pages (RC_DASHBOARD=1) and wait until they answer; the
   * first start after a change to app/ runs `next build` (minutes on a small machine), so
   * only the browser tests ask for it.
   */
  static async start(
    opts: {
      hostTimeoutS?: number;
      workers?: { name: string; devices?: number }[];
      controllerEnv?: Record<string, string>;
      dashboard?: boolean /** A migrated database of the test's own (e.g. on a Postgres it stops); default: a fresh clone of the template. */;
      databaseUrl?: string;
    } = {},
  ): Promise<Stack> {
    const stack = new Stack();
    if (opts.databaseUrl) {
      stack.dbUrl = opts.databaseUrl;
    } else {
      const db = await freshDatabase();
      await db.database.close();
      stack.dropDb = db.drop;
      stack.dbUrl = db.url;
    }
    // No default --max-runtime unless a test sets one: its notice would be in every first job's stderr.
    stack.controllerEnv = { RC_MAX_RUNTIME_DEFAULT_S: '0', ...(opts.dashboard ? { RC_DASHBOARD: '1' } : {}), ...opts.controllerEnv };
    await stack.startController(opts.hostTimeoutS ?? 15);
    if (opts.dashboard) {
      await stack.waitFor(
        async () => (await fetch(`${stack.controllerUrl}/login`).catch(() => null))?.status === 200,
        'the dashboard to be built and ready',
        600_000,
      );
    }
    for (const w of opts.workers ?? [{ name: 'alpha', devices: 2 }]) await stack.startWorker(w.name, w.devices ?? 2);
    return stack;
  }

  async startController(hostTimeoutS = 15): Promise<void> {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], {
      env: {
        ...process.env,
        DATABASE_URL: this.dbUrl,
        RC_DATA_DIR: this.dataDir,
        PORT: this.controllerUrl ? new URL(this.controllerUrl).port : '0',
        RC_LOCAL_WORKER: '0',
        RC_DASHBOARD: '0',
        RC_HOST_TIMEOUT_S: String(hostTimeoutS),
        ...this.controllerEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.controller = child;
    // This start's own line: the log before it holds the last start's.
    const from = this.controllerLog.length;
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (c: Buffer) => {
        this.controllerLog += c.toString();
        const m = /controller on (http:\/\/[^;\s]+)/.exec(this.controllerLog.slice(from));
        if (m) resolve(m[1]!);
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => {
        this.controllerLog += c.toString();
      });
      child.on('exit', (code) => reject(new Error(`controller exited ${code}:\n${this.controllerLog}`)));
    });
    this.controllerUrl = url;
    const creds = JSON.parse(readFileSync(join(this.dataDir, 'local.json'), 'utf8')) as { clientToken: string; adminToken: string };
    this.clientToken = creds.clientToken;
    this.adminToken = creds.adminToken;
  }

  /** The controller's process id (e.g. to read its memory use). */
  get controllerPid(): number | null {
    return this.controller?.pid ?? null;
  }

  async stopController(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await stopProcess(this.controller, signal);
    this.controller = null;
  }

  async startWorker(name: string, devices = 2, extraEnv: Record<string, string> = {}): Promise<void> {
    let credential = this.hostCredentials.get(name);
    if (!credential) {
      const r = await this.api('POST', '/api/admin/hosts', { name }, this.adminToken);
      credential = (r.body as { credential: string }).credential;
      this.hostCredentials.set(name, credential);
    }
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'worker.js')], {
      env: {
        ...process.env,
        RC_CONTROLLER: this.controllerUrl,
        RC_HOST_TOKEN: credential,
        RC_HOST_NAME: name,
        RC_FAKE_DEVICES: String(devices),
        RC_WORKSPACE: join(this.dataDir, `ws-${name}`),
        RC_STATE_DIR: join(this.dataDir, `state-${name}`),
        RC_KILL_GRACE_S: '2',
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.workerLogs.set(name, '');
    child.stdout!.on('data', (c: Buffer) => {
      this.workerLogs.set(name, (this.workerLogs.get(name) ?? '') + c.toString());
    });
    child.stderr!.on('data', () => {});
    this.workers.set(name, child);
    await this.waitFor(async () => {
      const r = await this.api('GET', '/api/devices');
      const mine = (r.body as { devices: { hostName: string; state: string }[] }).devices.filter((d) => d.hostName === name);
      return mine.length === devices && mine.every((d) => d.state !== 'offline');
    }, `worker ${name} to come online`);
  }

  private readonly hostCredentials = new Map<string, string>();

  async stopWorker(name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await stopProcess(this.workers.get(name) ?? null, signal);
    this.workers.delete(name);
  }

  async api(method: string, path: string, body?: unknown, token: string | null = this.clientToken): Promise<{ status: number; body: unknown }> {
    const res = await fetch(this.controllerUrl + path, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed };
  }

  /** Signs in as the dashboard does (POST /api/session): the session cookie, as a Cookie header's `rc_session=…`. */
  async signIn(token: string): Promise<string> {
    const res = await fetch(`${this.controllerUrl}/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    if (res.status !== 200) throw new Error(`signing in: ${res.status} ${await res.text()}`);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  }

  /**
   * Registers a host and connects to /worker as it, speaking the worker
   * protocol from the test itself (a forged or unusual worker): the socket
   * once connected, before any hello.
   */
  async hostSocket(name: string): Promise<Socket> {
    const reg = await this.api('POST', '/api/admin/hosts', { name }, this.adminToken);
    if (reg.status !== 201) throw new Error(`registering ${name}: ${JSON.stringify(reg.body)}`);
    const socket = io(`${this.controllerUrl}/worker`, {
      auth: { token: (reg.body as { credential: string }).credential },
      transports: ['websocket'],
      reconnection: false,
    });
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', resolve);
      socket.on('connect_error', reject);
    });
    return socket;
  }

  /** A started worker's workspace (RC_WORKSPACE) on this machine. */
  workspaceOf(name: string): string {
    return join(this.dataDir, `ws-${name}`);
  }

  /** The host credential a started worker connects with. */
  hostCredential(name: string): string {
    const c = this.hostCredentials.get(name);
    if (!c) throw new Error(`no worker ${name} was started`);
    return c;
  }

  /** Runs the built CLI as a subprocess; `rc`: another rc executable instead (the standalone one). */
  cli(
    args: string[],
    opts: { env?: Record<string, string>; onSpawn?: (child: ChildProcess) => void; timeoutMs?: number; stdinFile?: string; rc?: string } = {},
  ): Promise<CliResult> {
    const [file, ...prefix] = opts.rc ? [opts.rc] : [process.execPath, join(ROOT, 'dist', 'rc.cjs')];
    const child = spawn(file!, [...prefix, ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        RC_CONTROLLER: this.controllerUrl,
        RC_TOKEN: this.clientToken,
        RC_SUBMITTER: 'tester',
        ...opts.env,
      } as unknown as NodeJS.ProcessEnv,
      stdio: [opts.stdinFile ? openSync(opts.stdinFile, 'r') : 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    opts.onSpawn?.(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    return new Promise((resolve) =>
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      }),
    );
  }

  /**
   * Starts `rc run <args> -- sh -c 'echo "$RC_JOB_ID"; <script>'` and resolves
   * the job id as soon as the job has printed it; `done` is the CLI's result.
   */
  runJob(args: string[], script: string, opts: { timeoutMs?: number } = {}): { id: Promise<string>; done: Promise<CliResult>; child: () => ChildProcess } {
    let child: ChildProcess | null = null;
    let resolveId: (id: string) => void = () => {};
    const id = new Promise<string>((r) => {
      resolveId = r;
    });
    let buf = '';
    const done = this.cli(['run', ...args, '--', 'sh', '-c', `echo "$RC_JOB_ID"; ${script}`], {
      onSpawn: (c) => {
        child = c;
        c.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          const i = buf.indexOf('\n');
          if (i > 0) resolveId(buf.slice(0, i).trim());
        });
      },
      timeoutMs: opts.timeoutMs ?? 60_000,
    });
    return { id, done, child: () => child! };
  }

  async job(id: string): Promise<{ state: string; exitCode: number | null; reason: string | null; devices: string[] | null }> {
    const r = await this.api('GET', `/api/jobs/${id}`);
    return (r.body as { job: { state: string; exitCode: number | null; reason: string | null; devices: string[] | null } }).job;
  }

  async devices(): Promise<{ name: string; state: string; holder: { jobId: string } | null }[]> {
    return ((await this.api('GET', '/api/devices')).body as { devices: { name: string; state: string; holder: { jobId: string } | null }[] }).devices;
  }

  async waitFor(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async stop(): Promise<void> {
    for (const name of [...this.workers.keys()]) await this.stopWorker(name);
    await this.stopController();
    await this.dropDb?.();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

function stopProcess(child: ChildProcess | null, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 8000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill(signal);
  });
}

/**
 * Processes whose command line is `marker` or starts with `marker ` (so the shell
 * that started them does not count), or, with `anywhere`, contains it.
 */
export function processesMatching(marker: string, anywhere = false): number[] {
  const out: number[] = [];
  for (const pid of readdirSafe('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const hit = anywhere ? cmd.includes(marker) : cmd.trimEnd() === marker || cmd.startsWith(`${marker} `);
      if (hit && Number(pid) !== process.pid) out.push(Number(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The processes below `root` (children, their children …), by their parent ids in /proc. */
export function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const pid of readdirSafe('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      // The parent id is the 4th field, after the command's name in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(pid)]);
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** Whether a process is still there (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
