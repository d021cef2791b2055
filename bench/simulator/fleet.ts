// A fleet of simulated GPU hosts in one process: each host registered with
// the admin token (POST /api/admin/hosts → its credential) and connected as
// its own worker (host.ts). Connections are staggered (a bounded number of
// hellos in flight), and one clock sends every heartbeat: a 1,000-host fleet
// has one timer, not a thousand.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimHost } from './host';
import type { SimJobMode } from './runtime';
import { type SimHostSpec, specProblem } from './spec';

export interface FleetOptions {
  /** The controller, e.g. http://127.0.0.1:8080. */
  url: string;
  /** An admin token: it registers the hosts. */
  adminToken: string;
  hosts: SimHostSpec[];
  /** Heartbeat period; default: the controller's (its hello answer: a third of RC_HOST_TIMEOUT_S, 5 s by default). */
  heartbeatMs?: number;
  /** Hellos in flight at once while the fleet connects; default 25. */
  connectConcurrency?: number;
  /** Give up when the fleet is not all online after this long; default 10 minutes. */
  connectTimeoutMs?: number;
  /** TERM to KILL when a job is killed; default 10 s, as RC_KILL_GRACE_S. */
  killGraceS?: number;
  /**
   * How jobs run: `spawn` (the default) runs each job's argv as a local
   * process; `answer` runs none and answers by the argv (`sim:exit`,
   * `sim:sleep`, `sim:output`, `sim:hold`: runtime.ts), for benchmarks of
   * thousands of jobs.
   */
  jobs?: SimJobMode;
  log?: (msg: string) => void;
}

export interface Fleet {
  hosts: SimHost[];
  deviceCount: number;
  /** How long registering took, and connecting (until every host's hello was taken), in ms. */
  timings: { registerMs: number; connectMs: number };
  /** Ends every held job (`sim:hold`) of every host at once; how many. */
  releaseAll(): number;
  /** Every host beats every `ms` from now on (a fleet may connect at a gentle rate, then beat hard). */
  setHeartbeatMs(ms: number): void;
  /** Stops every job (their exits reported), disconnects every host, removes the jobs' folders. */
  stop(): Promise<void>;
}

/** The clock's tick: a host's heartbeat is at most this late. */
const TICK_MS = 100;

export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const log = opts.log ?? (() => {});
  const url = opts.url.replace(/\/+$/, '');
  const names = new Set<string>();
  for (const spec of opts.hosts) {
    const problem = specProblem(spec);
    if (problem) throw new Error(problem);
    if (names.has(spec.name)) throw new Error(`host ${spec.name} is listed twice`);
    names.add(spec.name);
  }
  const t0 = Date.now();
  const credentials = await mapLimit(opts.hosts, 16, (spec) => register(url, opts.adminToken, spec.name));
  const registerMs = Date.now() - t0;
  if (opts.hosts.length > 1) log(`${opts.hosts.length} hosts registered in ${registerMs} ms`);

  const root = mkdtempSync(join(tmpdir(), 'rc-sim-'));
  const hosts = opts.hosts.map((spec, i) => {
    const dir = join(root, spec.name);
    mkdirSync(dir, { recursive: true });
    return new SimHost(spec, {
      url,
      credential: credentials[i]!,
      dir,
      killGraceS: opts.killGraceS ?? 10,
      heartbeatMs: opts.heartbeatMs ?? null,
      jobs: opts.jobs,
      log,
    });
  });
  const clock = setInterval(() => {
    const now = Date.now();
    for (const h of hosts) if (h.nextBeatAt <= now) h.beat(now);
  }, TICK_MS);

  const t1 = Date.now();
  let online = 0;
  const every = Math.max(1, Math.ceil(hosts.length / 10));
  const connected = mapLimit(hosts, opts.connectConcurrency ?? 25, async (h) => {
    h.connect();
    await h.online;
    online += 1;
    if (hosts.length >= 50 && online % every === 0 && online < hosts.length) log(`${online}/${hosts.length} hosts online after ${Date.now() - t1} ms`);
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), opts.connectTimeoutMs ?? 600_000);
  });
  const outcome = await Promise.race([connected, timeout]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    const missing = hosts.filter((h) => !h.ready).map((h) => h.spec.name);
    await Promise.all(hosts.map((h) => h.stop()));
    clearInterval(clock);
    rmSync(root, { recursive: true, force: true });
    throw new Error(`${missing.length} host(s) did not come online in time (${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''})`);
  }
  const connectMs = Date.now() - t1;
  log(`${hosts.length} simulated host(s) online in ${connectMs} ms (registered in ${registerMs} ms)`);

  let stopped = false;
  return {
    hosts,
    deviceCount: hosts.reduce((n, h) => n + h.spec.devices.length, 0),
    timings: { registerMs, connectMs },
    releaseAll() {
      return hosts.reduce((n, h) => n + h.releaseHeld(), 0);
    },
    setHeartbeatMs(ms) {
      for (const h of hosts) h.setHeartbeatMs(ms);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(hosts.map((h) => h.stop()));
      clearInterval(clock);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Registers a host (or issues it another credential) and returns the credential. */
async function register(url: string, adminToken: string, name: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`${url}/api/admin/hosts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
  } catch (err) {
    throw new Error(`cannot reach the controller at ${url}: ${(err as Error).cause ?? (err as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as { credential?: string; error?: { code?: string; message?: string } } | null;
  if (res.status === 401 || res.status === 403)
    throw new Error(`the controller refused the admin token (${res.status}): registering hosts needs an admin token`);
  if (!res.ok || !body?.credential) throw new Error(`registering host ${name} failed: ${res.status} ${body?.error?.message ?? ''}`.trim());
  return body.credential;
}

/** `fn` over `items`, at most `limit` at once, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
