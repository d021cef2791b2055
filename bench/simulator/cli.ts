// The fleet simulator as a command (dist/simulator.js), and its module for
// scripts (import { startFleet } from 'dist/simulator.js'):
//   node dist/simulator.js --url http://127.0.0.1:8080 --admin-token rc_a_… --hosts 1000 --devices 8
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GPU_MODELS, type GpuModelName, findGpuModel } from './catalog';
import { startFleet } from './fleet';
import { type SimHostSpec, uniformHost } from './spec';

export { GPU_MODELS, findGpuModel } from './catalog';
export { DEMO_HOSTS } from './demo-fleet';
export { type Fleet, type FleetOptions, startFleet } from './fleet';
export { SimHost } from './host';
export { type SimDeviceSpec, type SimHostSpec, uniformHost } from './spec';

export const USAGE = `usage: node dist/simulator.js --url <controller> --admin-token <token> [flags]

Simulated GPU hosts that speak rc's worker protocol: each registers with the
admin token, connects to /worker, heartbeats GPU samples and runs the jobs it
is given as local processes. Every host is labelled simulated=true.

      --url <url>            the controller, e.g. http://127.0.0.1:8080 (or RC_CONTROLLER)
      --admin-token <token>  an admin token (or RC_ADMIN_TOKEN)
      --hosts <n>            how many hosts (1-10000, default 10)
      --devices <n>          GPUs per host (1-64, default 8)
      --model <name>         ${Object.keys(GPU_MODELS).join(', ')}, or mixed (default A100-80GB)
      --prefix <name>        host names are <prefix>-0000, <prefix>-0001, … (default sim)
      --heartbeat-ms <ms>    heartbeat period (default: the controller's, 5 s)
      --jobs <mode>          spawn: run each job's argv as a local process (default);
                             answer: run no process, answer by the argv (sim:exit [code],
                             sim:sleep <ms>, sim:output <count> <bytes> <rate>, sim:hold)
      --quarantine <n>       the first n hosts show a foreign process on gpu0 (default 0)
      --stats <s>            print the simulator's CPU and memory every s seconds (default 10, 0: never)
  -h, --help
`;

export interface CliOptions {
  url: string;
  adminToken: string;
  hosts: number;
  devices: number;
  model: GpuModelName | 'mixed';
  prefix: string;
  heartbeatMs: number | undefined;
  quarantine: number;
  statsS: number;
  jobs: 'spawn' | 'answer';
}

/** Parses the command line; throws an Error whose message says what is wrong. */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliOptions | 'help' {
  const values = new Map<string, string>();
  const known = new Set(['url', 'admin-token', 'hosts', 'devices', 'model', 'prefix', 'heartbeat-ms', 'quarantine', 'stats', 'jobs']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m || !known.has(m[1]!)) throw new Error(`unknown argument ${arg}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    values.set(m[1]!, value);
  }
  const int = (name: string, min: number, max: number, dflt: number | undefined): number | undefined => {
    const raw = values.get(name);
    if (raw === undefined) return dflt;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new Error(`--${name} must be a whole number from ${min} to ${max} (got ${raw})`);
    return Number(raw);
  };
  const url = values.get('url') ?? env.RC_CONTROLLER;
  if (!url) throw new Error('--url is required: the controller, e.g. http://127.0.0.1:8080');
  if (!/^https?:\/\/[^/\s]+/.test(url)) throw new Error(`--url must be an http:// or https:// URL (got ${url})`);
  const adminToken = values.get('admin-token') ?? env.RC_ADMIN_TOKEN;
  if (!adminToken) throw new Error('--admin-token is required: an admin token registers the hosts (npm start writes one to .rc/local.json)');
  const rawModel = values.get('model') ?? 'A100-80GB';
  const model = rawModel === 'mixed' ? 'mixed' : findGpuModel(rawModel);
  if (!model) throw new Error(`--model ${rawModel} is not one of ${Object.keys(GPU_MODELS).join(', ')}, mixed`);
  const prefix = values.get('prefix') ?? 'sim';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,50}$/.test(prefix))
    throw new Error(`--prefix must be letters, digits, ., _ or -, starting with a letter or digit (got ${prefix})`);
  const hosts = int('hosts', 1, 10_000, 10)!;
  const jobs = values.get('jobs') ?? 'spawn';
  if (jobs !== 'spawn' && jobs !== 'answer') throw new Error(`--jobs must be spawn or answer (got ${jobs})`);
  return {
    url,
    adminToken,
    hosts,
    devices: int('devices', 1, 64, 8)!,
    model,
    prefix,
    heartbeatMs: int('heartbeat-ms', 200, 600_000, undefined),
    quarantine: int('quarantine', 0, hosts, 0)!,
    statsS: int('stats', 0, 3600, 10)!,
    jobs,
  };
}

/** The hosts the command line describes. */
export function hostsOf(o: CliOptions): SimHostSpec[] {
  const models = Object.keys(GPU_MODELS) as GpuModelName[];
  return Array.from({ length: o.hosts }, (_, i) =>
    uniformHost(`${o.prefix}-${String(i).padStart(4, '0')}`, o.model === 'mixed' ? models[i % models.length]! : o.model, o.devices, {
      quarantine: i < o.quarantine ? [0] : [],
    }),
  );
}

async function main(): Promise<void> {
  let o: CliOptions | 'help';
  try {
    o = parseCli(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`simulator: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (o === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const log = (msg: string) => console.log(`[sim] ${msg}`);
  let fleet: Awaited<ReturnType<typeof startFleet>>;
  try {
    fleet = await startFleet({ url: o.url, adminToken: o.adminToken, hosts: hostsOf(o), heartbeatMs: o.heartbeatMs, jobs: o.jobs, log });
  } catch (err) {
    process.stderr.write(`simulator: ${(err as Error).message}\n`);
    process.exit(1);
  }
  log(`${fleet.hosts.length} host(s), ${fleet.deviceCount} device(s); Ctrl-C stops them`);
  let stats: NodeJS.Timeout | null = null;
  if (o.statsS > 0) {
    let cpu = process.cpuUsage();
    let at = process.hrtime.bigint();
    stats = setInterval(() => {
      const c = process.cpuUsage(cpu);
      const now = process.hrtime.bigint();
      const pct = ((c.user + c.system) / (Number(now - at) / 1000)) * 100;
      cpu = process.cpuUsage();
      at = now;
      const running = fleet.hosts.reduce((n, h) => n + h.running, 0);
      const online = fleet.hosts.filter((h) => h.ready).length;
      log(
        `cpu ${pct.toFixed(1)}% of a core, rss ${(process.memoryUsage.rss() / 1024 / 1024).toFixed(0)} MiB, ${online}/${fleet.hosts.length} online, ${running} job(s) running`,
      );
    }, o.statsS * 1000);
  }
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (stats) clearInterval(stats);
    log('stopping: killing jobs, disconnecting');
    void fleet.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

// Run as a command; imported, it only exports.
const self = fileURLToPath(import.meta.url);
if (process.argv[1] && realpathSafe(process.argv[1]) === realpathSafe(self)) void main();

function realpathSafe(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
