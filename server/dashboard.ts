// The Next.js side of the custom server: pages are served by Next, built on
// first start when no build exists (the API answers meanwhile).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { ROOT } from './paths';
import { withoutTheirSignalHandlers } from './signals';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export class Dashboard {
  private handler: Handler | null = null;
  private failed: string | null = null;

  constructor(private readonly log: (msg: string) => void) {}

  /** Builds (if needed) and prepares Next in the background. */
  async start(): Promise<void> {
    try {
      await buildIfChanged(ROOT, runNextBuild, () => this.log('building the dashboard (first start or changed pages); the API and CLI work meanwhile'));
      const { default: next } = await import('next');
      const app = next({ dev: false, dir: ROOT });
      await withoutTheirSignalHandlers(() => app.prepare());
      this.handler = app.getRequestHandler() as Handler;
    } catch (err) {
      this.failed = err instanceof Error ? err.message : String(err);
      this.log(`dashboard unavailable: ${this.failed}`);
    }
  }

  /**
   * The controller's own address, for the pages' server side: a page for one
   * job, device, host or array asks the API whether it exists, to answer 404
   * (app/(signed-in)/exists.ts). Next renders in this process, so it reads it here.
   */
  listening(url: string): void {
    process.env.RC_DASHBOARD_API_URL = url;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.handler) {
      this.handler(req, res).catch(() => {
        if (!res.headersSent) {
          res.statusCode = 500;
          res.end('dashboard error');
        }
      });
      return;
    }
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '10' });
    res.end(
      this.failed
        ? `The dashboard failed to start: ${this.failed}\n`
        : 'The dashboard is still being built; reload in a minute. The API and the rc CLI already work.\n',
    );
  }
}

/**
 * Runs `build` when a source of the pages is newer than the last build
 * (`root`/.next/BUILD_ID). The build is stamped with the time it started: it
 * is as new as the sources it read, so a page changed while it ran is newer,
 * and builds again next time.
 */
export async function buildIfChanged(root: string, build: () => Promise<void>, building: () => void = () => {}): Promise<boolean> {
  if (!needsBuild(root)) return false;
  const release = await buildLock(root);
  try {
    // Another controller on this checkout (two test files, or two replicas started together) may have built it meanwhile.
    if (!needsBuild(root)) return false;
    building();
    const started = new Date();
    await build();
    utimesSync(join(root, '.next', 'BUILD_ID'), started, started);
    return true;
  } finally {
    release();
  }
}

/** How often a controller waiting for another's build looks again. */
const BUILD_LOCK_POLL_MS = 250;

/**
 * One `next build` at a time per checkout: two at once write the same .next
 * and break each other (seen: two test files starting dashboards together
 * hung the suite). The lock is a file created exclusively, naming its
 * holder's pid; one whose holder is gone (a controller killed mid-build) is
 * taken over.
 */
async function buildLock(root: string): Promise<() => void> {
  const path = join(root, '.next-build.lock');
  for (;;) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(readText(path));
    if (!Number.isInteger(holder) || holder <= 0 || !running(holder)) {
      rmSync(path, { force: true });
      continue;
    }
    await new Promise((r) => setTimeout(r, BUILD_LOCK_POLL_MS));
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Whether a process of this pid runs (signal 0 checks without sending; EPERM: it runs, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function needsBuild(root: string): boolean {
  const id = join(root, '.next', 'BUILD_ID');
  if (!existsSync(id)) return true;
  const built = statSync(id).mtimeMs;
  // The pages import the contract and core's logic too.
  return ['app', 'components', 'protocol', 'core', 'next.config.mjs', 'proxy.ts', 'postcss.config.mjs'].some((p) => newestMtime(join(root, p)) > built);
}

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((f) => newestMtime(join(path, f))));
}

function runNextBuild(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out = (out + c.toString()).slice(-4000);
    });
    child.stderr.on('data', (c: Buffer) => {
      out = (out + c.toString()).slice(-4000);
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`next build exited ${code}:\n${out}`))));
  });
}
