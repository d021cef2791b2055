// What both benchmarks share: a throw-away fleet (build, embedded Postgres,
// controller) and one way to print figures.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = new URL('..', import.meta.url).pathname;

/**
 * Builds rc and starts a controller on a fresh embedded Postgres; `localWorker` also starts its worker, host `bench`.
 * `second`: a second controller on the same database (`controller2`), for the figures with two.
 * `nodeArgs`: flags for the controllers' node (e.g. --cpu-prof, which NODE_OPTIONS refuses).
 * `dashboard`: serve the pages too (built first when they changed) and wait until they answer.
 * `pgFlags`: flags for postgres (e.g. pg_stat_statements loaded); `pgLog`: gets its log's lines.
 */
export async function startFleet({ localWorker, second = false, dashboard = false, env = {}, nodeArgs = [], pgFlags = [], pgLog = null }) {
  const ports = await benchPorts();
  spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
  const { startEmbeddedPostgres } = await import('../dist/test-support.js');
  const dir = mkdtempSync(join(tmpdir(), 'rc-bench-'));
  chmodSync(dir, 0o711); // Postgres runs as its own user and must pass through
  const pg = await startEmbeddedPostgres(join(dir, 'pg'), ports.postgres, { flags: pgFlags, log: pgLog ?? undefined });
  const server = spawn(process.execPath, [...nodeArgs, join(root, 'dist/server.js')], {
    env: {
      ...process.env,
      DATABASE_URL: pg.url,
      RC_DATA_DIR: join(dir, 'data'),
      PORT: String(ports.controller),
      RC_DASHBOARD: dashboard ? '1' : '0',
      RC_HOST_NAME: 'bench',
      RC_LOCAL_WORKER: localWorker ? '1' : '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  server.stdout.on('data', (c) => {
    log += c;
  });
  const ready = localWorker ? /connected to .* as bench/ : /controller on (http:\/\/\S+);/;
  await until(
    () => ready.test(log),
    () => `the controller did not come up:\n${log}`,
  );
  const { controller, clientToken, adminToken } = JSON.parse(readFileSync(join(dir, 'data', 'local.json'), 'utf8'));
  if (dashboard)
    await until(async () => (await fetch(`${controller}/login`).catch(() => null))?.status === 200, 'the dashboard to be built and ready', 600_000);
  let server2 = null;
  let controller2 = null;
  if (second) {
    server2 = spawn(process.execPath, [...nodeArgs, join(root, 'dist/server.js')], {
      env: {
        ...process.env,
        DATABASE_URL: pg.url,
        RC_DATA_DIR: join(dir, 'data2'),
        PORT: String(ports.controller2),
        RC_DASHBOARD: '0',
        RC_LOCAL_WORKER: '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let log2 = '';
    server2.stdout.on('data', (c) => {
      log2 += c;
    });
    await until(
      () => /controller on (http:\/\/\S+);/.test(log2),
      () => `the second controller did not come up:\n${log2}`,
    );
    controller2 = /controller on (http:\/\/\S+);/.exec(log2)[1];
  }
  return {
    dir,
    /** The first controller's process id (its CPU and memory); the second's (null without one). */
    pid: server.pid,
    pid2: server2?.pid ?? null,
    /** The database, and the embedded Postgres's data folder (its postmaster.pid names its processes). */
    databaseUrl: pg.url,
    pgDir: join(dir, 'pg', 'pgdata'),
    controller,
    controller2,
    clientToken,
    adminToken,
    async stop() {
      for (const s of [server2, server].filter(Boolean)) {
        s.kill('SIGTERM');
        await new Promise((r) => s.once('exit', r));
      }
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A job submitted as rc run submits it (one streamed POST /api/jobs with `body`);
 * `onEvent` gets each event frame ({ type: 'queued' | 'started' | 'exit', jobId, … })
 * as it arrives. Resolves when the stream ends; rejects on a refused submit.
 */
export function streamedJob(controller, token, body, onEvent = null) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${controller}/api/jobs`,
      { method: 'POST', headers: { authorization: `Bearer ${token}`, accept: 'application/x-rc-stream', 'content-type': 'application/json' } },
      (res) => {
        if (res.statusCode >= 300) {
          res.resume();
          return reject(new Error(`submit: ${res.statusCode}`));
        }
        let buf = Buffer.alloc(0);
        res.on('data', (c) => {
          if (!onEvent) return;
          // Frames: a kind byte, a 32-bit length, the payload; kind 3 is an event (JSON).
          buf = Buffer.concat([buf, c]);
          while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
            const len = buf.readUInt32BE(1);
            if (buf[0] === 3) onEvent(JSON.parse(buf.subarray(5, 5 + len)));
            buf = buf.subarray(5 + len);
          }
        });
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** A JSON call to the API; resolves to the answer's body. */
export async function api(controller, method, path, body, token) {
  const r = await fetch(controller + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return r.json();
}

export function report(name, xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  console.log(
    `${name.padEnd(46)} n=${s.length}  p50 ${q(0.5).toFixed(1)} ms  p90 ${q(0.9).toFixed(1)} ms  p99 ${q(0.99).toFixed(1)} ms  max ${s[s.length - 1].toFixed(1)} ms`,
  );
}

export async function until(check, what, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(typeof what === 'function' ? what() : `timed out waiting for ${what}`);
}

/**
 * The benchmarks' ports: RC_BENCH_PORT (default 7400) for Postgres, the next
 * for the controller and the one after for a second: fixed, so two runs never
 * take each other's, and a second run at once is refused, saying so, instead
 * of measuring a machine the first one loads.
 */
export async function benchPorts() {
  const base = Number(process.env.RC_BENCH_PORT ?? 7400);
  if (!Number.isInteger(base) || base < 1024 || base > 65533) {
    console.error(`bench: RC_BENCH_PORT must be a port from 1024 to 65533 (three are used from it), not ${process.env.RC_BENCH_PORT}`);
    process.exit(2);
  }
  for (const port of [base, base + 1, base + 2])
    if (!(await portFree(port))) {
      console.error(`bench: port ${port} is in use (another benchmark running?): wait for it, or give this one others with RC_BENCH_PORT=<port>`);
      process.exit(2);
    }
  return { postgres: base, controller: base + 1, controller2: base + 2 };
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
