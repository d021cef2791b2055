// rc's controller: one process that serves the REST API, the socket.io
// endpoints for workers and browsers, and the Next.js dashboard on one port.
// With no DATABASE_URL it runs an embedded Postgres; by default it also
// starts one local worker, so a fresh checkout can run a job at once.
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { dirname, join, relative, resolve as absolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from 'socket.io';
import { MAX_MESSAGE_BYTES } from './protocol/worker';
import { rcCommand, rcOnPathLine } from './core/rc-hint';
import { ROOT } from './server/paths';
import { loadConfig } from './server/config';
import { Controller } from './server/controller';
import { Dashboard } from './server/dashboard';
import { connect, runMigrations } from './server/db';
import { startEmbeddedPostgres, type EmbeddedDb } from './server/embedded-pg';
import { ensureLocalCredentials, ensureLocalWorker } from './server/local-credentials';
import { findLeftoverWorker, LocalWorker, stopLeftoverWorker } from './server/local-worker';
import { quietOnClosedOutput } from './server/quiet-output';
import { prepareLocalJobs } from './server/local-job-user';
import { takeOverSignals } from './server/signals';
import { DbHealth } from './server/db-health';
import { setSecurityHeaders } from './server/http/security-headers';
import { answerClientError, answerConnect } from './server/http/bad-requests';
import { recordProviderAccounts } from './server/providers/accounts';
import { configuredAccounts, configuredProviders } from './server/providers/configured';

const log = (msg: string) => console.log(`[rc] ${msg}`);
/** The local worker's program, beside this one in dist/. */
const WORKER_ENTRY = join(dirname(fileURLToPath(import.meta.url)), 'worker.js');
/** However long the parts take, the controller is gone this long after a stop signal. */
const STOP_WITHIN_MS = 5000;

async function main(): Promise<void> {
  quietOnClosedOutput();
  const config = loadConfig();
  let embedded: EmbeddedDb | null = null;
  if (!config.DATABASE_URL) {
    embedded = await startEmbeddedPostgres(config.RC_DATA_DIR, config.RC_PG_PORT, { notice: log });
    log(`embedded Postgres on port ${config.RC_PG_PORT}, data in ${relative(process.cwd(), join(config.RC_DATA_DIR, 'pgdata')) || '.'}`);
  }
  // A local worker left by a controller killed with -9 (and unable to notice): stopped before another is started.
  // One whose controller runs is that controller's; only a second local worker beside it would be wrong.
  const leftWorker = findLeftoverWorker(config.RC_DATA_DIR, WORKER_ENTRY);
  if (leftWorker.kind === 'in-use' && config.RC_LOCAL_WORKER) {
    await embedded?.stop();
    throw new Error(
      `rc is already running from this checkout (pid ${leftWorker.parent}, its local worker pid ${leftWorker.pid}); stop that one first (Ctrl-C in its terminal, or kill ${leftWorker.parent}), or give this one its own RC_DATA_DIR`,
    );
  }
  if (leftWorker.kind === 'orphan') {
    const t = Date.now();
    await stopLeftoverWorker(config.RC_DATA_DIR, WORKER_ENTRY, leftWorker.pid);
    log(`a local worker left by an earlier rc (pid ${leftWorker.pid}) was stopped (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }
  // Not put in process.env: nothing this process starts (the local worker, next build) needs the password.
  const databaseUrl = config.DATABASE_URL ?? embedded!.url;
  const database = connect(databaseUrl);
  await runMigrations(database);
  // An account added, changed or removed in the settings since the last start is audited (never its key).
  for (const c of await recordProviderAccounts(database.client, configuredAccounts(config)))
    log(`provider account ${c.account}: ${c.action.replace('provider_account.', '')} (audited)`);
  const health = new DbHealth({ url: databaseUrl, log });
  health.start();
  const publicUrl = config.RC_PUBLIC_URL ?? null;

  const controller = new Controller({
    database,
    databaseUrl,
    health,
    publicUrl,
    hostTimeoutS: config.RC_HOST_TIMEOUT_S,
    pauseGapMs: config.RC_PAUSE_GAP_MS,
    watchdogGraceS: config.RC_WATCHDOG_GRACE_S,
    outputLimitBytes: config.RC_OUTPUT_LIMIT_BYTES,
    outputWaitingBytes: config.RC_OUTPUT_WAITING_BYTES,
    reserveAfterS: config.RC_RESERVE_AFTER_S,
    fairShareHalfLifeS: config.RC_FAIRSHARE_HALF_LIFE,
    preemptNoticeS: config.RC_PREEMPT_NOTICE_S,
    runtimeLimits: { defaultS: config.RC_MAX_RUNTIME_DEFAULT_S || null, maxS: config.RC_MAX_RUNTIME_LIMIT_S || null },
    ttyGraceS: config.RC_TTY_GRACE_S,
    idleHoldWarnS: config.RC_IDLE_HOLD_WARN,
    idleHoldReleaseS: config.RC_IDLE_HOLD_RELEASE,
    ttyReplayBytes: config.RC_TTY_REPLAY_BYTES,
    sampleRetention: { rawDays: config.RC_SAMPLES_RAW_DAYS, coarseDays: config.RC_SAMPLES_COARSE_DAYS },
    authLimit: { failures: config.RC_AUTH_FAILURES, windowMs: config.RC_AUTH_FAILURE_WINDOW_S * 1000 },
    machines: {
      providers: configuredProviders(config),
      sweepS: config.RC_SWEEP_S,
      launchTimeoutS: config.RC_LAUNCH_TIMEOUT_S,
      maxMachines: config.RC_MAX_MACHINES,
    },
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
  http.on('clientError', answerClientError);
  http.on('connect', (_req, socket) => answerConnect(socket));
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
  controller.listening(url);
  dashboard?.listening(url);
  log(`controller on ${url}; tokens for this checkout in ${relative(process.cwd(), join(config.RC_DATA_DIR, 'local.json'))}`);

  let worker: LocalWorker | null = null;
  if (config.RC_LOCAL_WORKER) {
    const host = process.env.RC_HOST_NAME ?? hostname();
    const workerCreds = await ensureLocalWorker(database.db, config.RC_DATA_DIR, host);
    // Its jobs must not read the keys beside them: as root they run as a user of their own.
    const jobs = prepareLocalJobs(config.RC_DATA_DIR, process.env);
    if ('warning' in jobs) log(`WARNING: ${jobs.warning}`);
    else log(`the local worker's jobs run as ${jobs.user.name} (uid ${jobs.user.uid}): they cannot read the data folder's keys`);
    worker = new LocalWorker({
      entry: WORKER_ENTRY,
      dataDir: config.RC_DATA_DIR,
      controller: url,
      credential: workerCreds.credential,
      host,
      log,
      jobEnv: 'env' in jobs ? jobs.env : {},
    });
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
    else {
      // Commands that work as printed, from another terminal: rc on that shell's PATH first (npx rc works too, slower).
      const rc = rcCommand(absolute(config.RC_DATA_DIR), join(ROOT, '.rc'));
      log(
        `ready${host ? `: the local worker is connected (host ${host})` : ''}; try from another terminal (the first line puts rc on its PATH; npx rc works here too, slower):`,
      );
      for (const line of [rcOnPathLine(ROOT), `${rc} devices`, `${rc} run -- echo hello`]) log(`  ${line}`);
    }
  })();

  let stopping = false;
  // In this order, so that nothing writes to a closed database: stop accepting; the local worker ends its jobs
  // and reports them while timers and the scheduler stop; every socket and stream is closed (workers move to
  // another controller, rc run and rc attach reconnect); then the database; the embedded Postgres last.
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    const started = Date.now();
    // The last resort if a part hangs (a stalled database): the orderly steps get what is left after Postgres's own stop.
    const orderly = async () => {
      http.close();
      await Promise.all([worker?.stop(3000), controller.quiesce()]);
      await controller.stop();
      await health.stop();
      // The HTTP server closes once its last connection has: the streams (rc run, rc attach, rc hold) are ended here.
      const ioClosed = io.close();
      http.closeAllConnections();
      await ioClosed;
      await database.close();
    };
    const hung = await within(
      orderly().catch((err: unknown) => log(`stopping: ${err instanceof Error ? err.message : String(err)}`)),
      STOP_WITHIN_MS - 1500,
    );
    if (hung) log(`the orderly stop took over ${((Date.now() - started) / 1000).toFixed(1)} s; stopping the rest now`);
    http.closeAllConnections();
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

/** Waits for `work` at most `ms`; true when it did not finish in time. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(true), ms);
  });
  const hung = await Promise.race([work.then(() => false), late]);
  clearTimeout(timer);
  return hung;
}

main().catch((err: unknown) => {
  console.error(`[rc] could not start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
