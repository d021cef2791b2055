// npm run demo: rc as `npm start` runs it (embedded Postgres, the dashboard),
// in a data folder and on a port of its own (.rc-demo/, 8090), with a fleet of
// simulated GPU hosts (bench/simulator; every one labelled simulated=true)
// and something to look at: usage sheets, a device note, a quarantined GPU,
// running jobs of several submitters (some in colour), a hold, queued jobs.
// Ctrl-C stops all of it: jobs, hosts, controller, Postgres.
//
//   npm run demo [-- --port 8090] [--pg-port 54339] [--data-dir .rc-demo]
//   PORT=9000 RC_PG_PORT=54400 npm run demo   (the ports as npm start takes them; a flag wins)
//   RC_DASHBOARD=0 npm run demo      (no dashboard: the API and CLI only)
// Every command it prints works as printed, from another terminal (test/e2e/demo.test.ts runs them).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;

let opts;
try {
  const { values } = parseArgs({
    options: {
      // npm start's PORT and RC_PG_PORT, where set, are the demo's too: its own defaults keep it off npm start's.
      port: { type: 'string', default: process.env.PORT || '8090' },
      'pg-port': { type: 'string', default: process.env.RC_PG_PORT || '54339' },
      'data-dir': { type: 'string', default: join(root, '.rc-demo') },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'usage: npm run demo [-- --port 8090] [--pg-port 54339] [--data-dir .rc-demo]; PORT and RC_PG_PORT set the ports too (a flag wins; --port 0: any free port); RC_DASHBOARD=0 skips the dashboard',
    );
    process.exit(0);
  }
  opts = { port: portOf(values.port, '--port', 0), pgPort: portOf(values['pg-port'], '--pg-port'), dataDir: resolve(values['data-dir']) };
} catch (err) {
  console.error(`demo: ${err.message}`);
  process.exit(2);
}

const say = (msg) => console.log(`[demo] ${msg}`);

const build = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

// Exactly what npm start runs, with the demo's folder and port, and no local worker (the fleet is simulated).
const env = {
  ...process.env,
  PORT: String(opts.port),
  RC_DATA_DIR: opts.dataDir,
  RC_PG_PORT: String(opts.pgPort),
  RC_LOCAL_WORKER: '0',
  RC_DASHBOARD: process.env.RC_DASHBOARD ?? '1',
};
delete env.DATABASE_URL;
// Its own process group: Ctrl-C reaches only the demo, which stops the jobs and hosts first and rc after them.
const server = spawn(process.execPath, ['--enable-source-maps', join(root, 'dist/server.js')], { env, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
// Whatever ends the demo, rc is told to stop (it stops its Postgres).
process.on('exit', () => {
  if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
});
let serverLog = '';
const serverExited = new Promise((r) => server.once('exit', (code, signal) => r(code ?? signal)));
server.stdout.on('data', (c) => {
  serverLog += c;
  process.stdout.write(c);
});

let fleet = null;
const submitted = [];
let stopping = false;
let creds = null;

async function stop(why) {
  if (stopping) return;
  stopping = true;
  say(`${why}: stopping the jobs, the simulated hosts, rc and its Postgres`);
  // Queued jobs would otherwise start on the next demo's fleet.
  if (creds) await Promise.all(submitted.map(({ id, submitter }) => api('POST', `/api/jobs/${id}/kill`, { submitter }).catch(() => {})));
  await fleet?.stop().catch((err) => say(`stopping the fleet: ${err.message}`));
  if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
  const t = setTimeout(() => server.kill('SIGKILL'), 20_000);
  await serverExited;
  clearTimeout(t);
  process.exit(0);
}
process.on('SIGINT', () => void stop('Ctrl-C'));
process.on('SIGTERM', () => void stop('SIGTERM'));
void serverExited.then((code) => {
  if (stopping) return;
  say(`rc exited (${code}) before the demo was stopped`);
  void fleet?.stop().finally(() => process.exit(1));
});

async function api(method, path, body, token = creds.clientToken) {
  const res = await fetch(creds.controller + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json?.error?.message ?? ''}`);
  return json;
}

/** A long job that prints a line now and then (`colour`: with ANSI colours). */
function chatty(label, everyS, colour = false) {
  const line = colour
    ? `printf '\\033[1;34m[%s]\\033[0m step %d  loss \\033[33m%s\\033[0m  \\033[32m✓\\033[0m\\n' "${label}" "$i" "$(awk "BEGIN{printf \\"%.4f\\", 2.5/($i+1)}")"`
    : `echo "${label}: step $i, $(date +%H:%M:%S)"`;
  return ['sh', '-c', `echo "${label} starting on $RC_DEVICES"; i=0; while :; do i=$((i+1)); ${line}; sleep ${everyS}; done`];
}

async function submit(job) {
  const { job: j } = await api('POST', '/api/jobs', job);
  submitted.push({ id: j.id, submitter: job.submitter });
  return j;
}

async function populate() {
  // The simulated fleet (bench/simulator/demo-fleet.ts): different models, one GPU with a process rc did not start.
  const { DEMO_HOSTS, startFleet, uniformHost } = await import('../dist/simulator.js');
  fleet = await startFleet({
    url: creds.controller,
    adminToken: creds.adminToken,
    hosts: DEMO_HOSTS.map((h) => uniformHost(h.name, h.model, h.count, { labels: h.labels, quarantine: h.quarantine })),
    killGraceS: 2,
    log: (m) => say(m),
  });
  // A fresh picture: what a previous demo left queued or running goes.
  const left = await api('GET', '/api/jobs?state=queued,running&limit=1000');
  for (const j of left.jobs) await api('POST', `/api/jobs/${j.id}/kill`, { submitter: 'demo' }, creds.adminToken).catch(() => {});

  const admin = (method, path, body) => api(method, path, body, creds.adminToken);
  await admin('PUT', '/api/hosts/gpubox-a/sheet', { body: SHEET_A });
  await admin('PUT', '/api/hosts/gpubox-b/sheet', { body: SHEET_B });
  await admin('PUT', '/api/devices/gpubox-b:gpu7/note', {
    body: 'Fan runs loud since the last firmware update; fine under load. Ticket INFRA-2291 — Marta.',
  });

  await submit({ name: 'llama-ft', submitter: 'alice', selector: 'gpu_model=A100-80GB', gpus: 2, argv: chatty('llama-ft', 6, true) });
  await submit({ name: 'eval-sweep-1', submitter: 'claude/agent-7', selector: 'gpu_model=H100', argv: chatty('eval-sweep-1', 4, true) });
  await submit({ name: 'eval-sweep-2', submitter: 'claude/agent-7', selector: 'gpu_model=H100', argv: chatty('eval-sweep-2', 5, true) });
  await submit({ name: 'pretrain-7b', submitter: 'bob@ws3', selector: 'gpu_model=H100,ib=true', gpus: 4, argv: chatty('pretrain-7b', 8) });
  await submit({ name: 'serve-whisper', submitter: 'carol', device: 'infer-l4:gpu0', argv: chatty('serve-whisper', 10) });
  await submit({ name: 'render-tests', submitter: 'dave', device: 'ws-rtx:gpu1', argv: chatty('render-tests', 7, true) });
  // A hold, as rc hold --ttl 4h -d ws-rtx:gpu0 makes one: someone working on the host by hand.
  await submit({ kind: 'hold', submitter: 'erin@laptop', device: 'ws-rtx:gpu0', ttlS: 4 * 3600 });
  // Jobs that ended, for the history: on old-v100's good GPU, once its other one is quarantined.
  await waitFor(
    async () => (await api('GET', '/api/devices')).devices.some((d) => d.name === 'old-v100:gpu1' && d.state === 'unhealthy'),
    30_000,
    'old-v100:gpu1 to be quarantined',
  );
  await submit({ name: 'smoke-test', submitter: 'claude/agent-7', selector: 'gpu_model=V100', argv: ['sh', '-c', 'echo all 12 checks passed'] });
  await submit({ name: 'bad-config', submitter: 'alice', selector: 'gpu_model=V100', argv: ['sh', '-c', 'echo "KeyError: lr_schedule" >&2; exit 1'] });
  // Queued: the only L4 is busy; and a 4-GPU job where only 2 A100s are free.
  await submit({ name: 'serve-llm', submitter: 'carol', selector: 'gpu_model=L4', argv: chatty('serve-llm', 10) });
  await submit({ name: 'llama-ft-4x', submitter: 'claude/agent-7', selector: 'gpu_model=A100-80GB', gpus: 4, argv: chatty('llama-ft-4x', 6) });
}

const SHEET_A = `# gpubox-a — 4× A100 80GB

**Owner:** ML platform team (#ml-infra). **Rack** r1, lab.

## How to use it
- Submit with \`rc run --select gpu_model=A100-80GB -- python train.py\`; for more than one GPU add \`--gpus 2\` (NVLink between 0–1 and 2–3).
- Datasets are on \`/data\` (read-only NFS). Write checkpoints to \`/scratch/$USER\`, which is **wiped every Sunday**.
- Long runs: give them \`--max-runtime 48h\`; anything longer, ask in #ml-infra first.

## Please don't
- Leave notebooks holding a GPU overnight — use \`rc hold --ttl 2h\` and release it.
- Install CUDA system-wide; use the \`cuda-12.4\` module.

| Maintenance | When |
| --- | --- |
| Driver update (550.x) | first Tuesday of the month, 07:00–08:00 |
`;

const SHEET_B = `# gpubox-b — 8× H100 80GB (InfiniBand)

Reserved for **multi-GPU training** on weekdays 09:00–18:00; single-GPU evals are welcome outside those hours.

- Data: \`/data/shared\` (Lustre, fast); home directories are slow — don't train from them.
- \`ib=true\`: NCCL uses InfiniBand, set \`NCCL_IB_HCA=mlx5\`.
- gpu7 runs hot; see its note.

Contact: @bob (on-call this week).
`;

try {
  const url = await waitFor(() => /controller on (http:\/\/[^;\s]+)/.exec(serverLog)?.[1], 120_000, 'rc to start');
  creds = JSON.parse(readFileSync(join(opts.dataDir, 'local.json'), 'utf8'));
  creds.controller = url;
  await populate();
  const dashboard = env.RC_DASHBOARD === '0' || env.RC_DASHBOARD === 'false' ? null : `${url}/`;
  // rc on the PATH as rc itself says it (its ready lines, core/rc-hint.ts); the demo's controller named, not npm start's.
  const onPath = await waitFor(() => /^\[rc\] {3}(export PATH=.*)$/m.exec(serverLog)?.[1], 10_000, "rc's ready lines");
  const rc = `RC_CONTROLLER=${url} RC_TOKEN=${creds.clientToken} rc`;
  console.log(`
[demo] ready: ${fleet.hosts.length} simulated hosts, ${fleet.deviceCount} GPUs (all labelled simulated=true), ${submitted.length} jobs submitted
[demo] dashboard:    ${dashboard ?? '(off: RC_DASHBOARD=0)'}${dashboard && !/dashboard on/.test(serverLog) ? '  (being built: the first start takes a minute or two)' : ''}
[demo] admin token:  ${creds.adminToken}
[demo] client token: ${creds.clientToken}
[demo] try from another terminal (the first line puts rc on its PATH):
[demo]   ${onPath}
[demo]   ${rc} ps
[demo]   ${rc} describe gpubox-b:gpu7
[demo]   ${rc} run --select gpu_model=V100 -- sh -c 'echo hello from $RC_DEVICES'
[demo] Ctrl-C stops everything.
`);
} catch (err) {
  say(`could not start: ${err.message}`);
  await stop('error');
}

async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    if (server.exitCode !== null) throw new Error(`rc exited while waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function portOf(raw, flag, min = 1) {
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > 65535) throw new Error(`${flag} must be a port number from ${min} to 65535 (got ${raw})`);
  return Number(raw);
}
