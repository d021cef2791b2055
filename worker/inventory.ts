// What this host offers and what it is like: runs every probe (nvidia-smi,
// host, the site probes), keeps the last good labels of a probe that fails
// (marked stale), adds the declared labels of the config file, and builds the
// Inventory sent in hello and in 'inventory' messages.
import { MAX_INVENTORY_BYTES, MAX_MESSAGE_BYTES, type Inventory, type ReportedLabel } from '../protocol/worker';
import {
  applyProbeResult,
  buildInventory,
  declaredLabels,
  fitInventory,
  markStale,
  unknownDevices,
  type ProbeLabels,
  type ProbeResult,
  type ProbeState,
  type Trimmed,
} from './labels';
import { parseNvidiaSmiCsv } from './probes/parse';
import { hostProbe, listSiteProbes, nvidiaSmiProbe, runSiteProbe, PROBE_MAX_OUTPUT, PROBE_TIMEOUT_MS } from './probes/run';
import { readWorkerConfigFile, type WorkerFileConfig } from './worker-config';

export interface InventoryDevice {
  index: number;
  uuid: string | null;
  labels: ReportedLabel[];
}

/** Probes that decide which devices exist; other probes only label them. */
const DEVICE_PROBES = ['nvidia-smi', 'host'] as const;

/** Parses nvidia-smi's GPU query into devices with detected labels (no times). */
export function parseGpuCsv(csv: string): InventoryDevice[] {
  return parseNvidiaSmiCsv(csv).map((row) => ({
    index: row.index,
    uuid: row.uuid,
    labels: row.labels.map((p) => ({ key: p.key, value: p.value, source: 'detected' as const, probe: 'nvidia-smi' })),
  }));
}

export interface ProberOptions {
  /** RC_WORKSPACE: disk_free_bytes is its free space. */
  workspace: string;
  /** RC_FAKE_DEVICES: CPU slots offered when there is no nvidia-smi. */
  fakeDevices: number;
  /** RC_WORKER_CONFIG, read again before every run; null for none. */
  configFile: string | null;
  /** RC_PROBES_DIR: wins over the config file's probesDir. */
  probesDir?: string | null;
  /** Environment of the probes; nvidia-smi is looked up on its PATH. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default `nvidia-smi`. */
  nvidiaSmi?: string;
  /** Per probe call; default 10 s. */
  timeoutMs?: number;
  /** A site probe's stdout limit; default 64 KiB. */
  maxOutputBytes?: number;
  log?: (message: string) => void;
  now?: () => Date;
  /** Host labels from the worker itself: runtime=host|docker, image=... */
  runtimeLabels?: { key: string; value: string }[];
}

/**
 * Runs the probes and keeps their labels between runs. Runs never overlap:
 * asking during a run gets one more run after it (requests coalesce).
 * A run never throws.
 */
export class Prober {
  /** The inventory of the last run; null before the first. */
  latest: Inventory | null = null;
  /** Called after every run with its inventory. */
  onInventory: ((inventory: Inventory) => void) | null = null;

  private state: ProbeState = new Map();
  private config: WorkerFileConfig | null = null;
  private declared: ProbeLabels | null = null;
  private running: Promise<Inventory> | null = null;
  private queued: Promise<Inventory> | null = null;
  /** What was last logged per subject, so a lasting problem is logged once. */
  private readonly said = new Map<string, string>();
  private readonly log: (message: string) => void;
  private readonly now: () => Date;

  constructor(private readonly opts: ProberOptions) {
    this.log = opts.log ?? (() => {});
    this.now = opts.now ?? (() => new Date());
  }

  run(): Promise<Inventory> {
    if (!this.running) {
      this.running = this.runSafely().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.run();
    });
    return this.queued;
  }

  private async runSafely(): Promise<Inventory> {
    let inventory: Inventory;
    try {
      inventory = await this.runOnce();
    } catch (err) {
      this.log(`probe run failed: ${String(err)}`);
      inventory = this.latest ?? { hostLabels: [], devices: [] };
    }
    this.latest = inventory;
    try {
      this.onInventory?.(inventory);
    } catch (err) {
      this.log(`sending the inventory failed: ${String(err)}`);
    }
    return inventory;
  }

  private async runOnce(): Promise<Inventory> {
    const now = this.now();
    this.readConfig(now);
    const env = this.opts.env ?? process.env;
    const timeoutMs = this.opts.timeoutMs ?? PROBE_TIMEOUT_MS;
    const results: ProbeResult[] = [];

    const nvidia = await nvidiaSmiProbe({ command: this.opts.nvidiaSmi ?? 'nvidia-smi', env, timeoutMs });
    if (nvidia !== 'absent') results.push(nvidia);
    results.push(hostProbe({ workspace: this.opts.workspace, cpuSlots: nvidia === 'absent' ? this.opts.fakeDevices : null, labels: this.opts.runtimeLabels }));

    const dir = this.opts.probesDir || this.config?.probesDir || null;
    if (dir) {
      const listing = listSiteProbes(dir, DEVICE_PROBES);
      this.say('probes folder', listing.ok ? null : `${listing.reason}; no site probes run`);
      if (!listing.ok) {
        // Perhaps a mount that went away: the site probes' last labels stay, stale.
        for (const name of this.state.keys()) {
          if (!(DEVICE_PROBES as readonly string[]).includes(name)) results.push({ probe: name, ok: false, reason: listing.reason });
        }
      } else {
        for (const { name, why } of listing.skipped) this.say(`skipped ${name}`, `${dir}/${name} is not run as a probe: ${why}`);
        for (const name of listing.names) {
          this.said.delete(`skipped ${name}`);
          results.push(await runSiteProbe(dir, name, { env, timeoutMs, maxBytes: this.opts.maxOutputBytes ?? PROBE_MAX_OUTPUT }));
        }
      }
    }

    const next: ProbeState = new Map();
    for (const result of results) {
      const prev = this.state.get(result.probe);
      next.set(result.probe, applyProbeResult(prev, result, now));
      this.reportProbe(result, prev);
    }
    this.state = next;
    const whole = buildInventory(next, this.declared, DEVICE_PROBES);
    for (const [name, labels] of [...next, ['config file', this.declared] as const]) {
      const missing = labels ? unknownDevices(labels, whole) : [];
      this.say(
        `devices of ${name}`,
        missing.length ? `${name} labels device(s) ${missing.join(', ')}, which this host does not offer; those labels are ignored` : null,
      );
    }
    // Sent whole, an inventory past the message limit would cut the connection at every hello, the host never joining.
    const { inventory, trimmed } = fitInventory(whole, MAX_INVENTORY_BYTES, DEVICE_PROBES);
    this.say('inventory size', trimmed && trimmedMessage(trimmed));
    return inventory;
  }

  /** Reads the config file again; one that became unreadable keeps its last labels, stale. */
  private readConfig(now: Date): void {
    const file = this.opts.configFile;
    if (!file) return;
    try {
      this.config = readWorkerConfigFile(file);
      this.declared = declaredLabels(this.config.declared, now);
      this.say('config file', null);
    } catch (err) {
      const reason = (err as Error).message;
      this.say('config file', `config file ${reason}; keeping its last labels, marked stale`);
      if (this.declared) this.declared = markStale(this.declared, `config file ${reason}`);
    }
  }

  private reportProbe(result: ProbeResult, prev: ProbeLabels | undefined): void {
    if (result.ok) {
      if (this.said.get(`probe ${result.probe}`)) this.log(`probe ${result.probe} works again`);
      this.said.delete(`probe ${result.probe}`);
      for (const { key, reason } of result.unrefreshed ?? []) this.say(`probe ${result.probe} ${key}`, reason);
      return;
    }
    const hadLabels = !!prev && (prev.host.length > 0 || prev.devices.size > 0);
    const what = hadLabels
      ? 'its last labels are kept, marked stale'
      : result.probe === 'nvidia-smi'
        ? 'this host offers no GPUs until it works'
        : 'it has no labels yet';
    this.say(`probe ${result.probe}`, `probe ${result.probe} failed: ${result.reason}; ${what}`, result.reason);
  }

  /** Logs a problem about a subject when it changes; null means the subject is fine now. */
  private say(subject: string, message: string | null, key: string | null = message): void {
    if (key === null) {
      this.said.delete(subject);
      return;
    }
    if (this.said.get(subject) === key) return;
    this.said.set(subject, key);
    this.log(message!);
  }
}

function trimmedMessage(t: Trimmed): string {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const total = [...t.dropped.values()].reduce((a, b) => a + b, 0);
  const from = [...t.dropped].map(([source, n]) => `${n} of ${source === 'config file' ? 'the config file' : `probe ${source}`}`).join(', ');
  return `the labels come to ${mib(t.bytes)}, over the ${MAX_MESSAGE_BYTES / 1024 / 1024} MiB a message to the controller may carry: left out ${total} label(s) (${from}), the largest first; make them fewer or shorter`;
}
