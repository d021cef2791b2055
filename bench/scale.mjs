// The scale benchmark (issue 14): a real controller (or two) on a real,
// throw-away embedded Postgres, and simulated hosts in this process (the
// fleet simulator's answer mode: the real worker protocol, no processes).
// bench/README.md says what each figure means and how it is measured.
//   npm run bench:scale -- --devices 100|1000|10000 [--controllers 2] [--only submit,devices,grants,output,lost,heartbeats]
//   npm run bench:scale -- --devices 10000 --only submit,grants --teams 50 --tokens 500 [--limits]   (fair share: the deep queue from 500 tokens in 50 teams; --limits: each team with --gpus, --queued and --gpu-hours limits)
//   npm run bench:scale -- --devices 10000 --only array [--array-runs 7 --array-size 10000]   (issue 33: one POST /api/arrays of 10,000 tasks)
//   npm run bench:scale -- --devices 1000 --only grants --waiting 1000   (issue 33: the drain with 1,000 dependency-waiting jobs queued beside it)
//   npm run bench:scale -- --record before     (bench/results/before/*.json → the "before" block of bench/RESULTS.md)
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { root, startFleet as startController } from '../scripts/bench-fleet.mjs';

/** `array` (issue 33) runs only when named: --only array. */
const PHASES = ['submit', 'devices', 'grants', 'output', 'lost', 'heartbeats', 'array'];
const OPTIONS = {
  devices: { type: 'string', default: '100' },
  controllers: { type: 'string', default: '1' },
  only: { type: 'string', default: PHASES.filter((p) => p !== 'array').join(',') },
  label: { type: 'string', default: 'latest' },
  record: { type: 'string' },
  /** Caps, for a slow controller: jobs of the submit figure, deep-queue jobs (default 2 × devices), seconds the drain may take. */
  'submit-jobs': { type: 'string', default: '300' },
  'devices-requests': { type: 'string', default: '20' },
  queue: { type: 'string' },
  'drain-cap-s': { type: 'string', default: '300' },
  /** Fair share (issue 32): the deep queue's jobs come from this many client tokens (0: the bench's one token), spread over this many teams (shares 1, 2, 1, 2, …). */
  teams: { type: 'string', default: '0' },
  tokens: { type: 'string', default: '0' },
  /** With --teams: each team gets --gpus, --queued and --gpu-hours limits (makeTokens). */
  limits: { type: 'boolean', default: false },
  /** The grants figure with this many jobs waiting on a dependency (rc run --after) that stays unmet for the whole drain (issue 33). */
  waiting: { type: 'string', default: '0' },
  /** Heartbeat figure: hosts (default: --devices, one device each), offered heartbeats/s, seconds measured. */
  'hb-hosts': { type: 'string' },
  'hb-rate': { type: 'string', default: '2500' },
  'hb-window-s': { type: 'string', default: '20' },
  /** Output figure: offered chunks/s in all, bytes per chunk, seconds. */
  'out-rate': { type: 'string', default: '20000' },
  'out-bytes': { type: 'string', default: '100' },
  'out-s': { type: 'string', default: '5' },
  'out-start-s': { type: 'string', default: '120' },
  'lost-hosts': { type: 'string', default: '5' },
  /** Array figure (issue 33): arrays submitted one after another, and the tasks of each (rc run --array 0-<n-1>). */
  'array-runs': { type: 'string', default: '7' },
  'array-size': { type: 'string', default: '10000' },
  'host-timeout-s': { type: 'string', default: '15' },
  /** A folder: the controllers run with --cpu-prof and write their profiles there. */
  profile: { type: 'string' },
  /** Postgres's statements by execution time over the drain (pg_stat_statements), in the grants figure and the log. */
  'pg-statements': { type: 'boolean', default: false },
};
const { values } = parseArgs({ options: OPTIONS });
const defaults = parseArgs({ args: [], options: OPTIONS }).values;
/** The flags of this run that are not the defaults (its caps, mostly), as a command line. */
const flags = Object.keys(values)
  .filter((k) => !['devices', 'controllers', 'label', 'profile', 'record'].includes(k) && values[k] !== defaults[k])
  .map((k) => `--${k} ${values[k]}`)
  .join(' ');

const RESULTS_DIR = join(root, 'bench', 'results');
if (values.record) {
  recordResults(values.record);
  process.exit(0);
}

const devices = int('devices', 1, 20_000);
const teamCount = int('teams', 0, 1000);
const tokenCount = int('tokens', 0, 10_000);
if (teamCount > 0 && tokenCount === 0) fail('--teams needs --tokens: the tokens put in them');
const withLimits = values.limits;
if (withLimits && teamCount === 0) fail('--limits needs --teams: the limits are set on the teams');
const controllers = int('controllers', 1, 2);
const only = new Set(values.only.split(',').map((s) => s.trim()));
for (const p of only) if (!PHASES.includes(p)) fail(`--only: ${p} is not one of ${PHASES.join(', ')}`);
const hostTimeoutS = Number(values['host-timeout-s']);
const log = (m) => console.log(`[scale ${new Date().toISOString().slice(11, 19)}] ${m}`);

const startedAt = Date.now();
const rc = await startController({
  localWorker: false,
  second: controllers === 2,
  env: { RC_HOST_TIMEOUT_S: String(hostTimeoutS) },
  nodeArgs: values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [],
  // With --pg-statements, also the plans of statements over 30 ms (auto_explain), in <results>/<label>/postgres.log.
  pgFlags: values['pg-statements']
    ? [
        ...['-c', 'shared_preload_libraries=pg_stat_statements,auto_explain', '-c', 'pg_stat_statements.track=all'],
        ...['-c', 'auto_explain.log_min_duration=30', '-c', 'auto_explain.log_analyze=on', '-c', 'auto_explain.log_nested_statements=on'],
      ]
    : [],
  pgLog: values['pg-statements'] ? pgLogTo(join(root, 'bench', 'results', values.label, 'postgres.log')) : null,
});
const urls = [rc.controller, rc.controller2].filter(Boolean);
const pids = [rc.pid, rc.pid2].filter(Boolean);
const { default: postgres } = await import('postgres');
const sql = postgres(rc.databaseUrl, { max: 4, onnotice: () => {} });
if (values['pg-statements']) await sql`create extension if not exists pg_stat_statements`;
const sim = await import('../dist/simulator.js');
const out = {
  devices,
  controllers,
  date: new Date().toISOString(),
  startedAt,
  commit: git(['rev-parse', '--short', 'HEAD']),
  dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
  machine: machine(),
  hostTimeoutS,
  flags,
  setup: {},
  phases: {},
  caps: [],
};
let submitTurn = 0;
/** The controller the next submit goes to: alternated with two. */
const nextUrl = () => urls[submitTurn++ % urls.length];
/** The deep queue's tokens (--tokens; empty: the bench's own token). */
let queueTokens = [];

let jobFleets = [];
try {
  if (tokenCount > 0) {
    const t = Date.now();
    queueTokens = await makeTokens(teamCount, tokenCount);
    out.setup.fairShare = { teams: teamCount, tokens: tokenCount, limits: withLimits, ms: Date.now() - t };
    log(`fair share: ${tokenCount} tokens in ${teamCount || 'the default'} team${teamCount === 1 ? '' : 's'}`);
  }
  const needJobs = ['submit', 'devices', 'grants', 'output', 'lost', 'array'].some((p) => only.has(p));
  if (needJobs) {
    // 8 devices per host (the last host takes the rest), split between the controllers.
    const hostCount = Math.ceil(devices / 8);
    const specs = Array.from({ length: hostCount }, (_, i) =>
      sim.uniformHost(`job-${String(i).padStart(5, '0')}`, 'H100', Math.min(8, devices - i * 8), { labels: { rack: `r${i % 100}` } }),
    );
    const t = Date.now();
    jobFleets = await startSplit(specs, 'sim', { killGraceS: 1 });
    out.setup.jobFleet = {
      hosts: hostCount,
      devices: jobFleets.reduce((n, f) => n + f.deviceCount, 0),
      registerMs: Math.max(...jobFleets.map((f) => f.timings.registerMs)),
      connectMs: Math.max(...jobFleets.map((f) => f.timings.connectMs)),
      totalMs: Date.now() - t,
    };
    log(`job fleet: ${hostCount} hosts, ${out.setup.jobFleet.devices} devices, online in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    await waitFor(
      async () =>
        (await sql`select count(*)::int as n from devices d join hosts h on h.name = d.host_name where h.status = 'online' and h.name like 'job-%'`)[0].n ===
        devices,
      'every device online',
      120_000,
    );
  }
  if (only.has('submit')) await phase('submit', submitPhase);
  if (only.has('devices')) await phase('devices', devicesPhase);
  if (only.has('grants')) await phase('grants', grantsPhase);
  if (only.has('output')) await phase('output', outputPhase);
  if (only.has('lost')) await phase('lost', lostPhase);
  if (only.has('array')) await phase('array', arrayPhase);
  if (jobFleets.length) {
    await Promise.all(jobFleets.map((f) => f.stop()));
    jobFleets = [];
  }
  if (only.has('heartbeats')) await phase('heartbeats', heartbeatPhase);
} finally {
  await Promise.all(jobFleets.map((f) => f.stop().catch(() => {})));
  out.wallS = Math.round((Date.now() - startedAt) / 1000);
  out.controllerPeakRssMiB = pids.map((pid) => procStatus(pid, 'VmHWM'));
  await sql.end({ timeout: 5 }).catch(() => {});
  await rc.stop();
}
save();
log(`done in ${out.wallS} s; results in ${resultsFile()}`);
process.exit(0);

// ---------------------------------------------------------------- phases

function resultsFile() {
  return join(RESULTS_DIR, values.label, `${devices}-${controllers}c.json`);
}

/** Writes what there is so far (after each phase too: a run cut short keeps its figures). */
function save() {
  mkdirSync(join(RESULTS_DIR, values.label), { recursive: true });
  // A run of some phases (--only) keeps the other phases of an earlier run of the same size.
  try {
    const old = JSON.parse(readFileSync(resultsFile(), 'utf8'));
    if (old.startedAt !== out.startedAt) {
      out.phases = { ...old.phases, ...out.phases };
      out.setup = { ...old.setup, ...out.setup };
      out.caps = [...new Set([...(old.caps ?? []), ...out.caps])];
      out.earlier = old.earlier ?? { date: old.date, commit: old.commit };
      out.flags = [old.flags || '(defaults)', out.flags].filter(Boolean).join('; then ');
      out.note = old.note;
    }
  } catch {}
  writeFileSync(resultsFile(), `${JSON.stringify(out, null, 2)}\n`);
}

/** Client-side: request sent → its `started` frame, on an idle fleet, one job at a time. */
async function submitPhase() {
  const n = int('submit-jobs', 1, 100_000);
  const lat = [];
  const toExit = [];
  for (let i = 0; i < n; i++) {
    const sent = performance.now();
    let started = 0;
    await streamJob(nextUrl(), ['sim:exit'], {
      onStarted: () => {
        started = performance.now();
      },
    });
    lat.push(started - sent);
    toExit.push(performance.now() - sent);
  }
  return { jobs: n, submitToStartMs: stats(lat), submitToExitMs: stats(toExit) };
}

/**
 * rc run --array 0-<size-1> (issue 33), --array-runs times, one after another:
 * `submitMs` is POST /api/arrays sent → its 201 received (the array and every
 * task stored, in one transaction). Each array is killed and has ended before
 * the next is sent, so each submit meets the same idle fleet; its tasks are
 * uncapped, so the pass starts granting them as the answer leaves.
 */
async function arrayPhase() {
  const runs = int('array-runs', 1, 100);
  const size = int('array-size', 1, 10_000);
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = await fetch(`${nextUrl()}/api/arrays`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rc.clientToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ array: `0-${size - 1}`, job: { argv: ['sim:hold'], submitter: 'bench' } }),
    });
    const body = await r.json();
    ms.push(performance.now() - t);
    if (r.status !== 201) throw new Error(`POST /api/arrays: ${r.status} ${JSON.stringify(body)}`);
    const id = body.array.id;
    const [{ n }] = await sql`select count(*)::int as n from jobs where array_id = ${id}`;
    if (n !== size) throw new Error(`array ${id} has ${n} tasks, not ${size}`);
    log(`  array ${i + 1}/${runs}: ${size} tasks in ${Math.round(ms.at(-1))} ms`);
    const k = await fetch(`${nextUrl()}/api/arrays/${id}/kill`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rc.clientToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ submitter: 'bench' }),
    });
    if (k.status !== 200) throw new Error(`kill ${id}: ${k.status}`);
    await waitFor(
      async () => (await sql`select count(*)::int as n from jobs where array_id = ${id} and state in ('queued', 'running')`)[0].n === 0,
      `array ${id} to end`,
      300_000,
    );
    await waitFor(async () => (await sql`select count(*)::int as n from leases where released_at is null`)[0].n === 0, 'every lease released', 300_000);
  }
  const s = [...ms].sort((a, b) => a - b);
  const p90 = s[Math.min(s.length - 1, Math.floor(0.9 * s.length))];
  return { arrays: runs, tasks: size, submitMs: { ...stats(ms), p90: round(p90), all: ms.map(round) } };
}

/**
 * GET /api/devices, the whole fleet and a filtered one (one rack in a hundred),
 * 20 of each (--devices-requests), one at a time, gzip accepted as a browser
 * does. `ms`: request sent → last byte received (what the controller and the
 * wire cost, as curl's time_total); `clientMs`: that plus the client's gunzip
 * and JSON.parse (a browser does those off the network thread).
 */
async function devicesPhase() {
  const time = async (path) => {
    const ms = [];
    const clientMs = [];
    let count = 0;
    let bytes = 0;
    for (let i = 0; i < int('devices-requests', 1, 1000); i++) {
      const t = performance.now();
      const { body, gzipped } = await getRaw(nextUrl() + path, { authorization: `Bearer ${rc.clientToken}`, 'accept-encoding': 'gzip' });
      ms.push(performance.now() - t);
      const parsed = JSON.parse((gzipped ? gunzipSync(body) : body).toString());
      clientMs.push(performance.now() - t);
      count = parsed.devices?.length ?? -1;
      bytes = body.length;
    }
    return { count, bytes, ms: stats(ms), clientMs: stats(clientMs) };
  };
  return { full: await time('/api/devices'), filtered: { select: 'rack=r7', ...(await time('/api/devices?select=rack%3Dr7')) } };
}

/** A GET's body as it came over the wire (not decompressed), once the last byte is in. */
function getRaw(url, headers) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve({ body: Buffer.concat(chunks), gzipped: res.headers['content-encoding'] === 'gzip' })
          : reject(new Error(`GET ${url}: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Every device held by a `sim:hold` job, then a deep queue (2 × devices jobs)
 * behind them; all the holds are released at once, and the grants are
 * counted from the jobs' started_at as the queue drains. Then: leases of one
 * device whose intervals overlap (must be none).
 */
/** Appends Postgres's log lines to `file` (its folder made). */
function pgLogTo(file) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, '');
  return (line) => appendFileSync(file, line.endsWith('\n') ? line : `${line}\n`);
}

/** What Postgres spent the drain executing: the statements by total time, each its calls and mean. */
async function topStatements() {
  const rows = await sql`
    select calls::int, round(total_exec_time)::int as "totalMs", round(mean_exec_time::numeric, 3)::float8 as "meanMs", rows::int,
      left(regexp_replace(query, '\\s+', ' ', 'g'), 120) as query
    from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
    order by total_exec_time desc limit 12`;
  for (const r of rows)
    log(`  pg: ${String(r.totalMs).padStart(6)} ms ${String(r.calls).padStart(6)} calls ${String(r.meanMs).padStart(8)} ms/call  ${r.query}`);
  return rows.map((r) => ({ ...r }));
}

/** Deadlocks Postgres has detected in this database (each one rolled a statement back; rc runs it again). */
async function deadlocks() {
  const [{ n }] = await sql`select deadlocks::int as n from pg_stat_database where datname = current_database()`;
  return n;
}

async function grantsPhase() {
  const queue = values.queue ? int('queue', 1, 1_000_000) : 2 * devices;
  const t0 = Date.now();
  await submitMany(devices, ['sim:hold']);
  await waitFor(async () => (await sql`select count(*)::int as n from jobs where state = 'running'`)[0].n >= devices, 'every device held', 600_000);
  const fillS = (Date.now() - t0) / 1000;
  log(`grants: ${devices} holds running after ${fillS.toFixed(1)} s; queueing ${queue}`);
  const t1 = Date.now();
  await submitMany(queue, ['sim:exit', '0', 'deep-queue'], queueTokens);
  const queueS = (Date.now() - t1) / 1000;
  // --waiting: jobs after one that runs only once the whole deep queue is done (priority -10, a hold nobody releases).
  const waiting = int('waiting', 0, 100_000);
  if (waiting) {
    const blocker = await submitOne(nextUrl(), ['sim:hold'], undefined, undefined, { priority: -10 });
    await submitMany(waiting, ['sim:exit', '0', 'waiting'], [], { after: [blocker] });
    const [{ w }] = await sql`select count(*)::int as w from jobs where state = 'queued' and waits = 'after'`;
    log(`grants: ${w} jobs wait on ${blocker} (--after)`);
  }
  const [{ q }] = await sql`select count(*)::int as q from jobs where state = 'queued'`;
  log(`grants: ${q} queued in ${queueS.toFixed(1)} s; releasing the holds`);
  // Statistics as a fleet that has run a while has them (autovacuum analyzes within a minute of such a change): these
  // tables grew from empty seconds ago, and plans made for a table of 200 jobs (a seq scan of jobs, all queued jobs
  // hashed to find 1,000) made the drain's claims twice as slow in some runs and not others.
  await sql`analyze jobs, leases, devices, hosts`;
  const deadlocksBefore = await deadlocks();
  if (values['pg-statements']) await sql`select pg_stat_statements_reset()`;
  const releasedAt = Date.now();
  for (const f of jobFleets) f.releaseAll();
  const cap = Number(values['drain-cap-s']) * 1000;
  let capped = false;
  await waitFor(
    async () => {
      const [{ n }] = await sql`select count(*)::int as n from jobs where argv = '["sim:exit","0","deep-queue"]'::jsonb and state not in ('queued', 'running')`;
      if (Date.now() - releasedAt > cap) {
        capped = true;
        return true;
      }
      return n >= queue;
    },
    'the queue to drain',
    cap + 60_000,
    250,
  );
  const rows = await sql`
    select extract(epoch from started_at) * 1000 as s from jobs
    where argv = '["sim:exit","0","deep-queue"]'::jsonb and started_at is not null order by started_at`;
  const starts = rows.map((r) => Number(r.s));
  const last = starts[starts.length - 1] ?? releasedAt;
  const spanS = Math.max(0.001, (last - releasedAt) / 1000);
  // Grants in each whole second after the release.
  const buckets = new Array(Math.max(1, Math.ceil(spanS))).fill(0);
  for (const s of starts) buckets[Math.min(buckets.length - 1, Math.max(0, Math.floor((s - releasedAt) / 1000)))]++;
  const [{ doubles }] = await sql`
    select count(*)::int as doubles from leases a join leases b
      on a.device_id = b.device_id and a.id < b.id
     and tstzrange(a.acquired_at, coalesce(a.released_at, 'infinity')) && tstzrange(b.acquired_at, coalesce(b.released_at, 'infinity'))`;
  const [{ leaseRows }] = await sql`select count(*)::int as "leaseRows" from leases`;
  const drainDeadlocks = (await deadlocks()) - deadlocksBefore;
  // Fair share at work: the tokens among the first starts (all of them, were the queue taken in submission order of 16 streams).
  const fairShare = queueTokens.length
    ? (
        await sql`
          select count(distinct token_id)::int as "tokensInFirst1000", (select count(*)::int from token_use) as "tokenUseRows"
          from (select token_id from jobs where argv = '["sim:exit","0","deep-queue"]'::jsonb and started_at is not null order by started_at, seq limit 1000) f`
      )[0]
    : undefined;
  const statements = values['pg-statements'] ? await topStatements() : undefined;
  if (capped) out.caps.push(`grants: the drain was cut after ${values['drain-cap-s']} s (${starts.length} of ${queue} started)`);
  // Leave the fleet idle for what follows.
  if (capped) await sql`update jobs set state = 'cancelled', ended_at = now() where state = 'queued'`.catch(() => {});
  for (const f of jobFleets) f.releaseAll();
  return {
    queue,
    waiting,
    queuedAtRelease: q,
    fillS: round(fillS),
    queueSubmitPerS: round(queue / queueS),
    started: starts.length,
    capped,
    drainS: round(spanS),
    grantsPerS: round(starts.length / spanS),
    grantsPerSecondBuckets: stats(buckets),
    doubleLeases: doubles,
    leaseRows,
    deadlocks: drainDeadlocks,
    fairShare,
    statements,
  };
}

/**
 * Jobs writing chunks (each stamped with its send time) at a set rate, each
 * with a client attached from its submit (the streamed POST /api/jobs), all
 * held until every one runs, then released at once: chunks received per
 * second (release → last chunk), and each chunk's worker→client latency.
 */
async function outputPhase() {
  const rate = Number(values['out-rate']);
  const bytes = int('out-bytes', 24, 65_536);
  const seconds = Number(values['out-s']);
  const jobs = Math.max(1, Math.min(100, Math.floor(devices / 2)));
  const perJob = Math.ceil(rate / jobs);
  const count = Math.ceil(perJob * seconds);
  const t = Date.now();
  const lat = [];
  let received = 0;
  let first = 0;
  let lastAt = 0;
  const re = /T(\d+\.\d+);/g;
  let startedN = 0;
  const startedIds = new Set();
  // Held until every job runs and has its client: then all write at once, however long their starts took.
  const streams = Promise.all(
    Array.from({ length: jobs }, () =>
      streamJob(nextUrl(), ['sim:output', String(count), String(bytes), String(perJob), '0', 'held'], {
        onStarted: (id) => {
          startedN++;
          startedIds.add(id);
        },
        onOutput: (data) => {
          const now = performance.timeOrigin + performance.now();
          if (!first) first = now;
          lastAt = now;
          for (const m of data.toString('latin1').matchAll(re)) {
            received++;
            lat.push(now - Number(m[1]));
          }
        },
      }),
    ),
  );
  // A stream that breaks fails the phase (below), not the run.
  let broken = null;
  streams.catch((err) => {
    broken = err;
  });
  let said = Date.now();
  await waitFor(
    () => {
      if (Date.now() - said > 10_000) {
        said = Date.now();
        log(`output: ${startedN} of ${jobs} jobs started`);
      }
      return startedN === jobs || broken;
    },
    'every output job to start',
    int('out-start-s', 1, 3600) * 1000,
  ).catch(async (err) => {
    // Where the jobs whose start never reached their client are, for the report.
    const rows =
      await sql`select id, state, host_name, dispatched_at is not null as dispatched from jobs where argv->>0 = 'sim:output' and created_at > to_timestamp(${t / 1000})`;
    const missing = rows.filter((r) => !startedIds.has(r.id));
    log(`output: not started at their clients: ${JSON.stringify(missing.slice(0, 10))}`);
    throw err;
  });
  if (broken) throw new Error(`an output stream broke while the jobs started (${startedN} of ${jobs} started): ${broken.message} (${broken.code ?? ''})`);
  const startS = (Date.now() - t) / 1000;
  await sleep(200);
  const releasedAt = performance.timeOrigin + performance.now();
  for (const f of jobFleets) f.releaseAll();
  await streams;
  first = Math.min(first, releasedAt);
  const spanS = Math.max(0.001, (lastAt - first) / 1000);
  return {
    jobs,
    startS: round(startS),
    chunksPerJob: count,
    chunkBytes: bytes,
    offeredPerS: jobs * perJob,
    expected: jobs * count,
    received,
    receivedPerS: round(received / spanS),
    workerToClientMs: stats(lat),
  };
}

/** Hosts die (socket cut, no goodbye) with a job each: death → the job's ended_at as `lost`. */
async function lostPhase() {
  const hosts = jobFleets.flatMap((f) => f.hosts).slice(-int('lost-hosts', 1, 100));
  const ids = [];
  for (const h of hosts) ids.push(await submitOne(nextUrl(), ['sim:hold'], `${h.spec.name}:gpu0`));
  await waitFor(
    async () => (await sql`select count(*)::int as n from jobs where id = any(${ids}) and state = 'running'`)[0].n === ids.length,
    'the jobs to run',
    60_000,
  );
  const diedAt = Date.now();
  for (const h of hosts) h.die();
  await waitFor(
    async () => (await sql`select count(*)::int as n from jobs where id = any(${ids}) and state = 'lost'`)[0].n === ids.length,
    'the jobs to be lost',
    hostTimeoutS * 1000 * 4 + 60_000,
    100,
  );
  const rows = await sql`select extract(epoch from ended_at) * 1000 as e from jobs where id = any(${ids})`;
  return { hosts: hosts.length, hostTimeoutS, deathToLostMs: stats(rows.map((r) => Number(r.e) - diedAt)) };
}

/**
 * hb-hosts hosts of one device each (default: as many as --devices), beating
 * at hb-rate heartbeats/s in all. Ingested: gpu_samples rows written in the
 * window (one per heartbeat of a one-device host). Handling: each logged
 * send → its row's `at` (the storing statement's now()), matched per host in
 * order; and the controller's /metrics histogram when it has one.
 */
async function heartbeatPhase() {
  const hbHosts = values['hb-hosts'] ? int('hb-hosts', 1, 20_000) : devices;
  const rate = Number(values['hb-rate']);
  const heartbeatMs = Math.max(200, Math.round((hbHosts * 1000) / rate));
  const windowS = Number(values['hb-window-s']);
  const specs = Array.from({ length: hbHosts }, (_, i) => sim.uniformHost(`hb-${String(i).padStart(5, '0')}`, 'L4', 1));
  const t = Date.now();
  const fleets = await startSplit(specs, 'hb', {
    // Connected at a gentle period (≤ 500/s in all, within the host timeout): a fleet beating at full rate while the rest say hello starves the hellos.
    heartbeatMs: Math.min((hostTimeoutS * 1000) / 3, Math.max(5000, hbHosts * 2)),
  });
  const setup = {
    hosts: hbHosts,
    registerMs: Math.max(...fleets.map((f) => f.timings.registerMs)),
    connectMs: Math.max(...fleets.map((f) => f.timings.connectMs)),
    totalMs: Date.now() - t,
  };
  log(`heartbeats: ${hbHosts} hosts online in ${(setup.totalMs / 1000).toFixed(1)} s; now beating every ${heartbeatMs} ms`);
  try {
    for (const f of fleets) f.setHeartbeatMs(heartbeatMs);
    await sleep(Math.max(3000, heartbeatMs * 2));
    const all = fleets.flatMap((f) => f.hosts);
    const before = await metricsHistogram();
    const cpu = cpuSnapshot();
    const [{ t0 }] = await sql`select extract(epoch from now()) * 1000 as t0`;
    for (const h of all) h.beatLog = [];
    await sleep(windowS * 1000);
    for (const h of all) h.beatLog.push(Number.POSITIVE_INFINITY); // the end marker: later beats are not logged
    const [{ t1 }] = await sql`select extract(epoch from now()) * 1000 as t1`;
    const window = cpuDelta(cpu);
    const after = await metricsHistogram();
    await sleep(Math.min(10_000, heartbeatMs + 3000));
    const sent = all.reduce((n, h) => n + h.beatLog.indexOf(Number.POSITIVE_INFINITY), 0);
    const [{ ingested }] = await sql`
      select count(*)::int as ingested from gpu_samples
      where host_name like 'hb-%' and at >= to_timestamp(${Number(t0)} / 1000.0) and at < to_timestamp(${Number(t1)} / 1000.0)`;
    const rows = await sql`
      select host_name as h, extract(epoch from at) * 1000 as at from gpu_samples
      where host_name like 'hb-%' and at >= to_timestamp(${Number(t0) - 1000} / 1000.0) order by host_name, at`;
    const byHost = new Map();
    for (const r of rows) {
      if (!byHost.has(r.h)) byHost.set(r.h, []);
      byHost.get(r.h).push(Number(r.at));
    }
    const lat = [];
    let unmatched = 0;
    for (const h of all) {
      const stored = byHost.get(h.spec.name) ?? [];
      let j = 0;
      for (const s of h.beatLog) {
        if (!Number.isFinite(s)) break;
        while (j < stored.length && stored[j] < s - 1) j++;
        if (j >= stored.length) {
          unmatched++;
          continue;
        }
        lat.push(stored[j] - s);
        j++;
      }
    }
    for (const h of all) h.beatLog = null;
    const windowActual = (Number(t1) - Number(t0)) / 1000;
    return {
      ...setup,
      heartbeatMs,
      windowS: round(windowActual),
      offeredPerS: round(hbHosts / (heartbeatMs / 1000)),
      sentPerS: round(sent / windowActual),
      ingestedPerS: round(ingested / windowActual),
      sendToStoredMs: stats(lat),
      unmatched,
      metricsHandlingMs: histogramQuantiles(before, after),
      window,
    };
  } finally {
    await Promise.all(fleets.map((f) => f.stop()));
  }
}

// ---------------------------------------------------------------- helpers

/** Runs a phase with the controllers' and Postgres's CPU measured over it. */
async function phase(name, fn) {
  log(`${name}: start`);
  const cpu = cpuSnapshot();
  const t = Date.now();
  try {
    const r = await fn();
    out.phases[name] = { ...r, wallS: round((Date.now() - t) / 1000), resources: cpuDelta(cpu) };
  } catch (err) {
    out.phases[name] = { error: String(err?.stack ?? err), wallS: round((Date.now() - t) / 1000), resources: cpuDelta(cpu) };
  }
  log(`${name}: ${JSON.stringify(out.phases[name])}`);
  out.wallS = Math.round((Date.now() - startedAt) / 1000);
  save();
}

function cpuSnapshot() {
  return { at: performance.now(), controllers: pids.map(procCpuS), pg: pgCpuS(), self: process.cpuUsage() };
}

function cpuDelta(s) {
  const wall = (performance.now() - s.at) / 1000;
  const c = process.cpuUsage(s.self);
  return {
    controllerCpuPct: pids.map((pid, i) => round(((procCpuS(pid) - s.controllers[i]) / wall) * 100)),
    controllerRssMiB: pids.map((pid) => procStatus(pid, 'VmRSS')),
    postgresCpuPct: round(((pgCpuS() - s.pg) / wall) * 100),
    harnessCpuPct: round(((c.user + c.system) / 1e6 / wall) * 100),
  };
}

function procStat(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  } catch {
    return null;
  }
}

function procCpuS(pid) {
  const f = procStat(pid);
  return f ? (Number(f[11]) + Number(f[12])) / 100 : 0;
}

function procStatus(pid, key) {
  try {
    return Math.round(Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024);
  } catch {
    return null;
  }
}

/** The embedded Postgres's CPU seconds: the postmaster (and its reaped children) and every live child. */
function pgCpuS() {
  let pm;
  try {
    pm = Number(readFileSync(join(rc.pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return 0;
  }
  const f = procStat(pm);
  if (!f) return 0;
  let s = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const c = procStat(e);
    if (c && Number(c[1]) === pm) s += Number(c[11]) + Number(c[12]);
  }
  return s / 100;
}

/** The controllers' heartbeat-handling histogram from /metrics (buckets summed over both), or null without one. */
async function metricsHistogram() {
  const buckets = new Map();
  let found = false;
  for (const url of urls) {
    const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${rc.clientToken}` } }).catch(() => null);
    if (!r?.ok) continue;
    const text = await r.text();
    for (const line of text.split('\n')) {
      const m = /^(rc_heartbeat_handling_seconds)_bucket\{[^}]*le="([^"]+)"[^}]*\}\s+([\d.e+-]+)/.exec(line);
      if (!m) continue;
      found = true;
      const le = m[2] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[2]);
      buckets.set(le, (buckets.get(le) ?? 0) + Number(m[3]));
    }
  }
  return found ? buckets : null;
}

/** p50/p99 (upper bucket bounds, ms) of what the histogram gained between two reads; "n/a" without /metrics. */
function histogramQuantiles(before, after) {
  if (!after) return 'n/a';
  const les = [...after.keys()].sort((a, b) => a - b);
  const counts = les.map((le) => after.get(le) - (before?.get(le) ?? 0));
  const total = counts[counts.length - 1];
  if (!total) return 'n/a (no heartbeats counted)';
  const q = (p) => {
    const i = counts.findIndex((c) => c >= p * total);
    return les[i] === Number.POSITIVE_INFINITY ? `>${les[i - 1] * 1000}` : les[i] * 1000;
  };
  return { count: total, p50: q(0.5), p99: q(0.99) };
}

/** Simulated hosts split between the controllers (host i on controller i mod their count), answering jobs without processes. */
function startSplit(specs, name, opts) {
  return Promise.all(
    urls.map((url, c) =>
      sim.startFleet({
        url,
        adminToken: rc.adminToken,
        hosts: specs.filter((_, i) => i % urls.length === c),
        jobs: 'answer',
        connectConcurrency: 50,
        log: (m) => log(`${name}${c}: ${m}`),
        ...opts,
      }),
    ),
  );
}

/**
 * `tokens` client tokens in `teams` teams (team-00, team-01, …; shares 1 and 2 in turn), made as an
 * operator would, through the admin API; with --limits, each team gets --gpus (twice its share of the
 * fleet, so the limits are read and applied by every pass and some bite), --queued and --gpu-hours
 * (neither reached). Their secrets, in team order.
 */
async function makeTokens(teams, tokens) {
  const admin = async (method, path, body, want) => {
    const r = await fetch(`${urls[0]}${path}`, {
      method,
      headers: { authorization: `Bearer ${rc.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = await r.json();
    if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  for (let i = 0; i < teams; i++) {
    await admin('POST', '/api/admin/teams', { name: teamName(i), share: 1 + (i % 2) }, 201);
    if (withLimits)
      await admin(
        'PUT',
        `/api/admin/limits/team:${teamName(i)}`,
        { gpus: Math.max(1, Math.ceil((2 * devices) / teams)), queued: 100_000, gpuHours: '1000000/week' },
        200,
      );
  }
  const secrets = [];
  for (let i = 0; i < tokens; i++) {
    const body = await admin('POST', '/api/admin/tokens', { name: `bench-${i}`, kind: 'client', ...(teams > 0 ? { team: teamName(i % teams) } : {}) }, 201);
    secrets.push(body.token);
  }
  return secrets;
}

function teamName(i) {
  return `team-${String(i).padStart(2, '0')}`;
}

/** Non-streamed submits, 16 at a time, alternated between the controllers; with `tokens`, each submit by the next of them in turn. */
async function submitMany(n, argv, tokens = [], extra = {}) {
  let next = 0;
  let done = 0;
  const every = Math.max(1000, Math.ceil(n / 10));
  await Promise.all(
    Array.from({ length: Math.min(16, n) }, async () => {
      while (next < n) {
        const i = next++;
        await submitOne(nextUrl(), argv, undefined, tokens.length ? tokens[i % tokens.length] : undefined, extra);
        done++;
        if (done % every === 0) log(`  submitted ${done}/${n}`);
      }
    }),
  );
}

async function submitOne(url, argv, device, token = rc.clientToken, extra = {}) {
  const r = await fetch(`${url}/api/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ argv, submitter: 'bench', ...(device ? { device } : {}), ...extra }),
  });
  const body = await r.json();
  if (r.status !== 201) throw new Error(`submit: ${r.status} ${JSON.stringify(body)}`);
  return body.job.id;
}

/** A job submitted as rc run does (one streamed request); resolves when its stream ends. */
function streamJob(url, argv, { onStarted = () => {}, onOutput = () => {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/jobs`,
      { method: 'POST', headers: { authorization: `Bearer ${rc.clientToken}`, accept: 'application/x-rc-stream', 'content-type': 'application/json' } },
      (res) => {
        let id = null;
        let buf = Buffer.alloc(0);
        res.on('data', (c) => {
          buf = buf.length ? Buffer.concat([buf, c]) : c;
          while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
            const len = buf.readUInt32BE(1);
            const type = buf[0];
            if (type === 3) {
              const e = JSON.parse(buf.subarray(5, 5 + len));
              if (e.type === 'queued') id = e.jobId;
              if (e.type === 'started') onStarted(id);
            } else if (type === 1 || type === 2) onOutput(buf.subarray(9, 5 + len));
            buf = buf.subarray(5 + len);
          }
        });
        res.on('end', () => resolve(id));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ argv, submitter: 'bench' }));
  });
}

function stats(xs) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, p50: round(q(0.5)), p99: round(q(0.99)), max: round(s[s.length - 1]) };
}

function round(x) {
  return Math.round(x * 10) / 10;
}

async function waitFor(check, what, ms, every = 50) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(every);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function int(name, min, max) {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < min || v > max) fail(`--${name} must be a whole number from ${min} to ${max}`);
  return v;
}

function fail(msg) {
  console.error(`bench:scale: ${msg}`);
  process.exit(2);
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function machine() {
  const model = cpus()[0]?.model ?? 'unknown';
  return `${cpus().length} × ${model}, ${Math.round(totalmem() / 1024 ** 3)} GiB, Node ${process.version}${process.env.NODE_EXTRA_CA_CERTS ? ', NODE_EXTRA_CA_CERTS set' : ''}`;
}

// ---------------------------------------------------------------- RESULTS.md

/** Rewrites the block `label` of bench/RESULTS.md from bench/results/<label>/*.json. */
function recordResults(label) {
  const dir = join(RESULTS_DIR, label);
  const runs = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')))
    .sort((a, b) => a.controllers - b.controllers || a.devices - b.devices);
  const col = (r) => `${r.devices.toLocaleString('en')} dev${r.controllers > 1 ? `, ${r.controllers} ctl` : ''}`;
  const ms = (s) => (s ? `${s.p50} / ${s.p99} / ${s.max}` : '—');
  const ph = (r, name) => r.phases?.[name];
  const cell = (r, name, f) => {
    const p = ph(r, name);
    if (!p) return 'not run';
    if (p.error) return `error: ${p.error.split('\n')[0].slice(0, 80)}`;
    return f(p);
  };
  const res = (p) =>
    `ctl ${p.resources.controllerCpuPct.map((x) => `${x}%`).join(' + ')}, ${p.resources.controllerRssMiB.map((x) => `${x} MiB`).join(' + ')}; pg ${p.resources.postgresCpuPct}%`;
  const rows = [
    ['submit→start, idle device, ms (p50 / p99 / max)', (r) => cell(r, 'submit', (p) => `${ms(p.submitToStartMs)} (n=${p.jobs})`)],
    ['submit→exit frame, `sim:exit`, ms', (r) => cell(r, 'submit', (p) => ms(p.submitToExitMs))],
    [
      'GET /api/devices, whole fleet, ms',
      (r) =>
        cell(r, 'devices', (p) =>
          p.full.clientMs
            ? `${ms(p.full.ms)} (${p.full.count} devices, ${Math.round(p.full.bytes / 1024)} KiB gzipped)`
            : 'n/a (measured with the parse: next row)',
        ),
    ],
    ["… with the client's gunzip + JSON.parse, ms", (r) => cell(r, 'devices', (p) => `${ms(p.full.clientMs ?? p.full.ms)} (${p.full.count} devices)`)],
    ['GET /api/devices?select=rack=r7, ms', (r) => cell(r, 'devices', (p) => `${ms(p.filtered.ms)} (${p.filtered.count} devices)`)],
    ['deep queue: jobs queued behind a full fleet', (r) => cell(r, 'grants', (p) => `${p.queuedAtRelease} (submitted at ${p.queueSubmitPerS}/s)`)],
    [
      'lease grants/s over the drain',
      (r) =>
        cell(
          r,
          'grants',
          (p) => `**${p.grantsPerS}** (${p.started} in ${p.drainS} s${p.capped ? ', CAPPED' : ''}; per second p50 ${p.grantsPerSecondBuckets?.p50})`,
        ),
    ],
    [
      'double leases (leases table)',
      (r) =>
        cell(r, 'grants', (p) => `**${p.doubleLeases}** of ${p.leaseRows} leases${p.deadlocks === undefined ? '' : `; ${p.deadlocks} deadlocks in the drain`}`),
    ],
    ['heartbeats: hosts × 1 device, period', (r) => cell(r, 'heartbeats', (p) => `${p.hosts} hosts, ${p.heartbeatMs} ms`)],
    ['heartbeats sent / ingested per s', (r) => cell(r, 'heartbeats', (p) => `${p.sentPerS} / **${p.ingestedPerS}**`)],
    [
      'heartbeat send → stored (row `at`), ms',
      (r) => cell(r, 'heartbeats', (p) => `${ms(p.sendToStoredMs)}${p.unmatched ? ` (${p.unmatched} not stored)` : ''}`),
    ],
    [
      'heartbeat handling, /metrics, ms (p50 / p99)',
      (r) =>
        cell(r, 'heartbeats', (p) =>
          typeof p.metricsHandlingMs === 'string' ? p.metricsHandlingMs : `${p.metricsHandlingMs.p50} / ${p.metricsHandlingMs.p99}`,
        ),
    ],
    ['output: jobs × chunks (bytes), offered/s', (r) => cell(r, 'output', (p) => `${p.jobs} × ${p.chunksPerJob} (${p.chunkBytes} B), ${p.offeredPerS}/s`)],
    ['output chunks received per s', (r) => cell(r, 'output', (p) => `**${p.receivedPerS}** (${p.received} of ${p.expected})`)],
    ['worker→client latency, ms', (r) => cell(r, 'output', (p) => ms(p.workerToClientMs))],
    ['worker death → job lost, ms', (r) => cell(r, 'lost', (p) => `${ms(p.deathToLostMs)} (timeout ${p.hostTimeoutS} s, ${p.hosts} hosts)`)],
    ...PHASES.map((name) => [`resources during ${name}`, (r) => cell(r, name, res)]),
    ['controller peak RSS (VmHWM)', (r) => r.controllerPeakRssMiB?.map((x) => `${x} MiB`).join(' + ') ?? '—'],
    ['fleet online (job hosts; heartbeat hosts), s', (r) => `${fmtS(r.setup?.jobFleet?.totalMs)}; ${fmtS(ph(r, 'heartbeats')?.totalMs)}`],
    ['wall time of the (last) run, s', (r) => (r.wallS ? String(r.wallS) : '—')],
  ];
  const head = `| figure | ${runs.map(col).join(' | ')} |\n| --- | ${runs.map(() => '---').join(' | ')} |\n`;
  const body = rows.map(([name, f]) => `| ${name} | ${runs.map((r) => f(r).replaceAll('|', '\\|')).join(' | ')} |`).join('\n');
  const meta = runs
    .map(
      (r) =>
        `- ${col(r)}: ${r.date.slice(0, 16).replace('T', ' ')} UTC, commit ${r.commit}${r.dirty ? ' (with local changes)' : ''}, ${r.machine}${r.flags ? `; flags \`${r.flags}\`` : ''}${r.note ? `; ${r.note}` : ''}`,
    )
    .join('\n');
  const caps = runs.flatMap((r) => r.caps.map((c) => `- ${col(r)}: ${c}`)).join('\n');
  const block = `<!-- scale:${label} -->\n### ${label}\n\n${meta}\n${caps ? `\nCapped:\n${caps}\n` : ''}\n${head}${body}\n<!-- /scale:${label} -->`;
  const file = join(root, 'bench', 'RESULTS.md');
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    text = '# Scale benchmark results\n\n';
  }
  const re = new RegExp(`<!-- scale:${label} -->[\\s\\S]*?<!-- /scale:${label} -->`);
  text = re.test(text) ? text.replace(re, block) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, text);
  console.log(`bench/RESULTS.md: block ${label} from ${runs.length} run(s)`);
}

function fmtS(ms) {
  return ms === undefined ? '—' : (ms / 1000).toFixed(1);
}
