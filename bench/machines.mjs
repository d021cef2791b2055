// Machines from the local provider on this machine's Docker (issue 34): what a
// job waits for when it needs a machine launched, what it waits for when a kept
// one is idle, and how soon the sweeper deletes containers nobody owns.
// One controller on a throw-away embedded Postgres, no joined host, the local
// provider with two offers (image rc-job:stock), RC_SWEEP_S=1.
//   1. Cold launch: `rc run --cloud-only --gpu H100 --keep 0 -- …`, a new
//      container each round (deleted when the job ends).
//   2. Kept start: `rc run --cloud-only --gpu A100 --keep 5m -- …` on one A100
//      machine launched first (not counted) and kept; each round must land on
//      it. A100, so that a cold H100 job never takes the kept machine and the
//      two can run in turns (the machine is shared and noisy): cold, kept, cold…
//      For both: submit → start (jobs.started_at − created_at) and the whole
//      `rc run` as the shell sees it (Node's start included).
//   3. Sweep: each round `--strays` containers named `<prefix>-m<10 digits>`
//      (as launched machines are) that no machine owns, made with the stock
//      image and `sleep`: from made until each is gone, and until all are.
//      One container without the prefix lives through every round and must
//      survive; it is removed here after.
// Every container it made is removed by its exact name at the end, and the
// controller and Postgres stopped, even on failure.
//   npm run bench:machines [-- --rounds 5 --strays 5]
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import postgres from 'postgres';
import { report, root, startFleet, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, strays: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);
const strays = Number(values.strays);
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) throw new Error('--rounds: 1 to 100');
if (!Number.isInteger(strays) || strays < 1 || strays > 50) throw new Error('--strays: 1 to 50');

const IMAGE = 'rc-job:stock';
const docker = new Docker();
try {
  await docker.getImage(IMAGE).inspect();
} catch {
  console.error(`bench: ${IMAGE} is not on this host (or dockerd does not answer): build it with docker/worker-image/build.sh`);
  process.exit(2);
}

// A prefix of this run's own: its sweeper never meets another run's or a test's containers.
const PREFIX = `rcb${process.pid}`;
const shape = { gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50 };
const CONFIG = {
  prefix: PREFIX,
  image: IMAGE,
  offers: [
    { offerId: 'h100', gpuModel: 'H100', ...shape, pricePerHour: 2.1 },
    { offerId: 'a100', gpuModel: 'A100', ...shape, pricePerHour: 1.2 },
  ],
};
const SWEEP_S = 1;
/** Containers this script made itself (the strays and the unprefixed one), by exact name. */
const made = new Set();

const fleet = await startFleet({ localWorker: false, env: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG), RC_SWEEP_S: String(SWEEP_S) } });
const sql = postgres(fleet.databaseUrl, { max: 2, onnotice: () => {} });
const env = { ...process.env, RC_CONTROLLER: fleet.controller, RC_TOKEN: fleet.clientToken, RC_SUBMITTER: 'bench' };
const rc = join(root, 'node_modules/.bin/rc');
let failed = false;
// The machine is shared: the load during the run says how noisy it was.
const load = [];
const loadTimer = setInterval(() => load.push(loadavg()[0]), 1000);
try {
  console.log(
    `machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set: it adds ~40 ms to each Node start, so to each rc run wall time below' : 'no NODE_EXTRA_CA_CERTS'}`,
  );
  console.log(`local provider: prefix ${PREFIX}, image ${IMAGE}, RC_SWEEP_S=${SWEEP_S}; ${rounds} rounds, cold and kept in turns\n`);

  const kept = await job(['--gpu', 'A100', '--keep', '5m']);
  const keptHost = kept.hostName;
  // A machine whose first job ended before it was seen ready stays booting until the next reconcile (every 2 s)
  // says its container runs: only then is it idle, and a job in that gap launches another. Wait it out.
  const ended = performance.now();
  await until(async () => (await sql`select state from machines where host_name = ${keptHost}`)[0]?.state === 'idle', `${keptHost} idle`, 30_000);
  console.log(
    `kept machine ${keptHost}: launched for a first A100 job (submit → start ${kept.startMs.toFixed(0)} ms, not counted); idle ${(performance.now() - ended).toFixed(0)} ms after rc run returned`,
  );
  const cold = { start: [], wall: [] };
  const warm = { start: [], wall: [] };
  const coldHosts = new Set();
  for (let i = 0; i < rounds; i++) {
    const c = await job(['--gpu', 'H100', '--keep', '0']);
    if (coldHosts.has(c.hostName) || c.hostName === keptHost) throw new Error(`cold round ${i + 1} ran on ${c.hostName}, a machine launched before`);
    coldHosts.add(c.hostName);
    cold.start.push(c.startMs);
    cold.wall.push(c.wallMs);
    const k = await job(['--gpu', 'A100', '--keep', '5m']);
    if (k.hostName !== keptHost) throw new Error(`kept round ${i + 1} ran on ${k.hostName}, not the kept machine ${keptHost}`);
    warm.start.push(k.startMs);
    warm.wall.push(k.wallMs);
  }
  const machines = await sql`select state, count(*)::int as n from machines group by state order by state`;
  console.log(`machines after: ${machines.map((m) => `${m.n} ${m.state}`).join(', ')} (the cold ones deleted with --keep 0; the kept one idle)\n`);
  report('cold launch: submit → start', cold.start);
  report('cold launch: rc run wall time', cold.wall);
  report('kept machine: submit → start', warm.start);
  report('kept machine: rc run wall time', warm.wall);
  console.log(`cold / kept (p50): submit → start ${ratio(cold.start, warm.start)}, rc run wall time ${ratio(cold.wall, warm.wall)}\n`);

  // 3. The sweeper. The unprefixed container carries the prefix, but not at its start.
  const survivor = `x-${PREFIX}-m0000000000`;
  await run(survivor);
  const each = [];
  const all = [];
  for (let i = 0; i < rounds; i++) {
    const names = Array.from({ length: strays }, (_, j) => `${PREFIX}-m${String(9_000_000_000 + i * 100 + j)}`);
    const madeAt = [];
    for (const name of names) await run(name, (t) => madeAt.push(t));
    const gone = new Map();
    await until(
      async () => {
        for (const [j, name] of names.entries())
          if (!gone.has(name) && !(await exists(name))) {
            gone.set(name, performance.now());
            each.push(performance.now() - madeAt[j]);
          }
        return gone.size === names.length;
      },
      () => `the sweeper to delete ${names.filter((n) => !gone.has(n)).join(', ')}`,
      30_000,
    );
    all.push(Math.max(...gone.values()) - madeAt[0]);
  }
  if (!(await exists(survivor))) throw new Error(`the sweeper deleted ${survivor}, which does not start with ${PREFIX}-`);
  const [{ n: audited }] = await sql`select count(*)::int as n from audit where action = 'machine.sweep' and target like ${`${PREFIX}-m9%`}`;
  report(`sweep: one stray made → gone (RC_SWEEP_S=${SWEEP_S})`, each);
  report(`sweep: ${strays} strays, first made → all gone`, all);
  console.log(`sweep: ${audited} of ${rounds * strays} deletions audited; ${survivor} (no prefix at its start) survived all ${rounds} rounds`);
  const l = [...load].sort((a, b) => a - b);
  console.log(
    `\nload average (1 min) during the run: median ${l[Math.floor(l.length / 2)]?.toFixed(2)}, max ${l[l.length - 1]?.toFixed(2)} (${cpus().length} CPUs)`,
  );
} catch (err) {
  failed = true;
  console.error(`bench: ${err.message}`);
} finally {
  clearInterval(loadTimer);
  // Every machine's container (the controller's, by the names it recorded) and this script's own, by exact name.
  const names = new Set(made);
  for (const { name } of await sql`select instance_name as name from machines`.catch(() => [])) names.add(name);
  await sql.end().catch(() => {});
  await fleet.stop();
  for (const name of names)
    await docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => {});
  const left = (await docker.listContainers({ all: true })).flatMap((c) => c.Names).filter((n) => n.includes(PREFIX));
  if (left.length) {
    failed = true;
    console.error(`bench: containers left: ${left.join(', ')}`);
  }
}
process.exit(failed ? 1 : 0);

/** `rc run --cloud-only <flags> -- sh -c 'echo $RC_JOB_ID'`: its wall time, and its job's host and submit → start from the database. */
async function job(flags) {
  const t0 = performance.now();
  const { code, stdout, stderr } = await cli(['run', '--cloud-only', ...flags, '--', 'sh', '-c', 'echo $RC_JOB_ID']);
  const wallMs = performance.now() - t0;
  if (code !== 0) throw new Error(`rc run ${flags.join(' ')} exited ${code}: ${stderr.trim()}`);
  const id = stdout.trim();
  const [row] = await sql`
    select host_name, (extract(epoch from started_at - created_at) * 1000)::float8 as start_ms from jobs where id = ${id}`;
  if (!row) throw new Error(`rc run printed ${JSON.stringify(id)}, not a job id`);
  return { hostName: row.host_name, startMs: row.start_ms, wallMs };
}

function cli(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(rc, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGTERM'), 180_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A container of the stock image that sleeps, recorded for the clean-up before it exists;
 * `created` gets the moment it exists. A prefixed one may be swept between its creation
 * and its start (the sweeper lists created ones too): then it is gone already, as it should be.
 */
async function run(name, created = () => {}) {
  made.add(name);
  const c = await docker.createContainer({ name, Image: IMAGE, Cmd: ['sleep', '600'] });
  created(performance.now());
  try {
    await c.start();
  } catch (err) {
    if (!name.startsWith(`${PREFIX}-`) || (err.statusCode !== 404 && err.statusCode !== 409)) throw err;
  }
}

function exists(name) {
  return docker
    .getContainer(name)
    .inspect()
    .then(
      () => true,
      (err) => {
        if (err.statusCode === 404) return false;
        throw err;
      },
    );
}

function ratio(a, b) {
  const p50 = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  return `${(p50(a) / p50(b)).toFixed(1)}×`;
}
