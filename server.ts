// rc's controller: one process that serves the REST API, the socket.io
// endpoints for workers and browsers, and the Next.js dashboard on one port.
// With no DATABASE_URL it runs an embedded Postgres; by default it also
// starts one local worker, so a fresh checkout can run a job at once.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from 'socket.io';
import { MAX_MESSAGE_BYTES } from './protocol/worker';
import { loadConfig } from './server/config';
import { Controller } from './server/controller';
import { Dashboard } from './server/dashboard';
import { connect, runMigrations } from './server/db';
import { startEmbeddedPostgres, type EmbeddedDb } from './server/embedded-pg';
import { ensureLocalCredentials, ensureLocalWorker } from './server/local-credentials';
import { takeOverSignals } from './server/signals';
import { DbHealth } from './server/db-health';
import { setSecurityHeaders } from './server/http/security-headers';

const log = (msg: string) => console.log(`[rc] ${msg}`);

async function main(): Promise<void> {
  const config = loadConfig();
  let embedded: EmbeddedDb | null = null;
  if (!config.DATABASE_URL) {
    embedded = await startEmbeddedPostgres(config.RC_DATA_DIR, config.RC_PG_PORT, { notice: log });
    log(`embedded Postgres on port ${config.RC_PG_PORT}, data in ${relative(process.cwd(), join(config.RC_DATA_DIR, 'pgdata')) || '.'}`);
  }
  // Kept in the environment for what this process starts (the DbHealth probe's own connection).
  process.env.DATABASE_URL = config.DATABASE_URL ?? embedded!.url;
  const database = connect(process.env.DATABASE_URL);
  await runMigrations(database);
  const health = new DbHealth({ url: process.env.DATABASE_URL, log });
  health.start();
  const publicUrl = config.RC_PUBLIC_URL ?? null;

  const controller = new Controller({
    database,
    databaseUrl: process.env.DATABASE_URL,
    health,
    publicUrl,
    hostTimeoutS: config.RC_HOST_TIMEOUT_S,
    watchdogGraceS: config.RC_WATCHDOG_GRACE_S,
    outputLimitBytes: config.RC_OUTPUT_LIMIT_BYTES,
    outputWaitingBytes: config.RC_OUTPUT_WAITING_BYTES,
    reserveAfterS: config.RC_RESERVE_AFTER_S,
    preemptNoticeS: config.RC_PREEMPT_NOTICE_S,
    runtimeLimits: { defaultS: config.RC_MAX_RUNTIME_DEFAULT_S || null, maxS: config.RC_MAX_RUNTIME_LIMIT_S || null },
    ttyGraceS: config.RC_TTY_GRACE_S,
    idleHoldWarnS: config.RC_IDLE_HOLD_WARN,
    idleHoldReleaseS: config.RC_IDLE_HOLD_RELEASE,
    ttyReplayBytes: config.RC_TTY_REPLAY_BYTES,
    sampleRetention: { rawDays: config.RC_SAMPLES_RAW_DAYS, coarseDays: config.RC_SAMPLES_COARSE_DAYS },
    log,
  });
  const dashboard = config.RC_DASHBOARD ? new Dashboard(log) : null;
  const http = createServer((req, res) => {
    setSecurityHeaders(res);
    controller.handle(req, res).then(
      (handled) => {
        if (handled) return;
        if (dashboard) dashboard.handle(req, res);
        else {
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('the dashboard is disabled (RC_DASHBOARD=0)\n');
        }
      },
      (err: unknown) => {
        log(`internal error: ${err instanceof Error ? err.stack : String(err)}`);
        if (!res.headersSent) {
          res.writeHead(500);
          res.end();
        }
      },
    );
  });
  const io = new Server(http, { serveClient: false, maxHttpBufferSize: MAX_MESSAGE_BYTES });
  await controller.start(io);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(config.PORT, config.RC_BIND, resolve);
  });
  const address = http.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.RC_BIND === '0.0.0.0' ? '127.0.0.1' : config.RC_BIND}:${port}`;
  await ensureLocalCredentials(database.db, config.RC_DATA_DIR, url);
  log(`controller on ${url}; tokens for this checkout in ${relative(process.cwd(), join(config.RC_DATA_DIR, 'local.json'))}`);

  let worker: LocalWorker | null = null;
  if (config.RC_LOCAL_WORKER) {
    const host = process.env.RC_HOST_NAME ?? hostname();
    const workerCreds = await ensureLocalWorker(database.db, config.RC_DATA_DIR, host);
    worker = new LocalWorker(url, workerCreds.credential, host, join(config.RC_DATA_DIR, 'workspace'), join(config.RC_DATA_DIR, 'worker-state'));
    worker.start();
  }
  if (dashboard) void dashboard.start().then(() => log(`dashboard on ${url}/ (sign in with the adminToken or clientToken from local.json)`));
  // Ready means a first `rc devices` lists something: with the local worker, once it is connected and its devices are in.
  void (async () => {
    const host = worker?.host;
    const deadline = Date.now() + 60_000;
    while (host && Date.now() < deadline && !(controller.hub.holds(host) && (await controller.inventory.rows()).some((d) => d.hostName === host))) {
      await new Promise((r) => setTimeout(r, 50));
    }
    if (host && Date.now() >= deadline)
      log(`the local worker (host ${host}) has not connected after 60 s; rc devices is empty until it does (its log is above)`);
    else log(`ready${host ? `: the local worker is connected (host ${host})` : ''}; try: npx rc devices    npx rc run -- echo hello`);
  })();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await worker?.stop();
    await controller.stop();
    await health.stop();
    await io.close();
    http.closeAllConnections();
    await database.close();
    await embedded?.stop();
    process.exit(0);
  };
  takeOverSignals();
  // A promise nobody awaited must not take the controller (and every stream through it) down.
  process.on('unhandledRejection', (reason) =>
    log(`unhandled rejection (the controller carries on): ${reason instanceof Error ? reason.stack : String(reason)}`),
  );
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** The worker for this host, supervised: restarted if it dies. */
class LocalWorker {
  private child: ChildProcess | null = null;
  private stopping = false;

  constructor(
    private readonly controller: string,
    private readonly credential: string,
    readonly host: string,
    private readonly workspace: string,
    private readonly stateDir: string,
  ) {}

  start(): void {
    const entry = join(dirname(fileURLToPath(import.meta.url)), 'worker.js');
    this.child = spawn(process.execPath, [entry], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        RC_CONTROLLER: this.controller,
        RC_HOST_TOKEN: this.credential,
        RC_HOST_NAME: this.host,
        RC_WORKSPACE: process.env.RC_WORKSPACE ?? this.workspace,
        RC_STATE_DIR: process.env.RC_STATE_DIR ?? this.stateDir,
      },
    });
    this.child.on('exit', (code, signal) => {
      if (this.stopping) return;
      log(`local worker exited (${signal ?? code}); restarting in 1s`);
      setTimeout(() => this.start(), 1000);
    });
  }

  stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}

main().catch((err: unknown) => {
  console.error(`[rc] could not start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
