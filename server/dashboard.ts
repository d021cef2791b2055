// The Next.js side of the custom server: pages are served by Next, built on
// first start when no build exists (the API answers meanwhile).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
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
  building();
  const started = new Date();
  await build();
  utimesSync(join(root, '.next', 'BUILD_ID'), started, started);
  return true;
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
