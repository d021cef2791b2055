// Pure parsing of what probes print: site probes' `key=value` lines and
// nvidia-smi's CSV and banner. No I/O here.
import { gpuLabels } from '../../core/gpu-names';

/** A label as a probe states it, before it gets a source, a time or a staleness. */
export interface Pair {
  key: string;
  value: string;
}

/** What one probe found: host-wide labels and labels per device index. */
export interface Found {
  host: Pair[];
  devices: Map<number, Pair[]>;
}

/** The label key rule, the same as the protocol's. */
export const LABEL_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
export const MAX_KEY_LENGTH = 100;
export const MAX_VALUE_LENGTH = 1000;
/** Highest device index the protocol carries. */
export const MAX_DEVICE_INDEX = 999;

export type SiteProbeParse = { ok: true; found: Found } | { ok: false; reason: string };

/**
 * Parses a site probe's stdout. Each line is `key=value` (host-wide) or
 * `gpu<N>.key=value` (device N); blank lines and `#` comments are skipped.
 * Any other line makes the whole output invalid: a probe run is applied
 * all or nothing. A key given twice keeps its last value.
 */
export function parseSiteProbeOutput(stdout: string): SiteProbeParse {
  const host = new Map<string, string>();
  const devices = new Map<number, Map<string, string>>();
  const lines = stdout.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `line ${i + 1}`;
    const eq = line.indexOf('=');
    const rawKey = eq < 0 ? '' : line.slice(0, eq);
    const value = eq < 0 ? '' : line.slice(eq + 1);
    const device = /^gpu(\d+)\.(.*)$/.exec(rawKey);
    const key = device ? device[2]! : rawKey;
    if (eq < 0 || !LABEL_KEY.test(key)) return { ok: false, reason: `${where} is not key=value: ${quote(line)}` };
    if (key.length > MAX_KEY_LENGTH) return { ok: false, reason: `${where}: the key is longer than ${MAX_KEY_LENGTH} characters` };
    if (value.length > MAX_VALUE_LENGTH) return { ok: false, reason: `${where}: the value of ${key} is longer than ${MAX_VALUE_LENGTH} characters` };
    if (device) {
      const index = Number(device[1]);
      if (index > MAX_DEVICE_INDEX) return { ok: false, reason: `${where}: device index ${device[1]} is over ${MAX_DEVICE_INDEX}` };
      const labels = devices.get(index) ?? new Map<string, string>();
      devices.set(index, labels);
      labels.set(key, value);
    } else {
      host.set(key, value);
    }
  }
  return {
    ok: true,
    found: {
      host: toPairs(host),
      devices: new Map([...devices].map(([index, labels]) => [index, toPairs(labels)])),
    },
  };
}

/** One GPU as nvidia-smi's query describes it. */
export interface GpuRow {
  index: number;
  /** The UUID when it looks like one (`GPU-…`), else null. */
  uuid: string | null;
  labels: Pair[];
}

/**
 * Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version
 * --format=csv,noheader,nounits`. Lines that are not a GPU row are skipped.
 */
export function parseNvidiaSmiCsv(csv: string): GpuRow[] {
  const out: GpuRow[] = [];
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 5 || !/^\d+$/.test(cells[0]!)) continue;
    const [index, uuid, name, memMiB, driver] = cells as [string, string, string, string, string];
    if (Number(index) > MAX_DEVICE_INDEX) continue;
    // gpu_model, gpu_family, vram (the nominal size) and vram_total_bytes (as reported): core/gpu-names.ts.
    const labels: Pair[] = [
      { key: 'kind', value: 'gpu' },
      { key: 'vendor', value: 'nvidia' },
      ...gpuLabels(name, /^\d+$/.test(memMiB) ? Number(memMiB) : null),
      { key: 'gpu_name', value: name },
      { key: 'gpu_uuid', value: uuid },
      { key: 'gpu_index', value: index },
      { key: 'driver_version', value: driver },
    ];
    out.push({ index: Number(index), uuid: uuid.startsWith('GPU-') ? uuid : null, labels });
  }
  return out;
}

/** The CUDA version from a plain `nvidia-smi` call's banner, or null. */
export function parseCudaVersion(banner: string): string | null {
  return /CUDA Version:\s*([\d.]+)/.exec(banner)?.[1] ?? null;
}

/** The first non-blank line of a text, trimmed and cut to a readable length, or ''. */
export function firstLine(text: string, max = 200): string {
  const line =
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '') ?? '';
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

function quote(line: string): string {
  const cut = line.length > 80 ? `${line.slice(0, 80)}…` : line;
  return JSON.stringify(cut);
}

function toPairs(labels: Map<string, string>): Pair[] {
  return [...labels].map(([key, value]) => ({ key, value }));
}

/** nvidia-smi's value for a field it cannot read: "[N/A]", "[Not Supported]", "[Unknown Error]". */
function numberOrNull(cell: string): number | null {
  return /^\d+(\.\d+)?$/.test(cell) ? Number(cell) : null;
}

export const GPU_SAMPLE_QUERY = ['--query-gpu=index,memory.total,memory.used,utilization.gpu,name', '--format=csv,noheader,nounits'];

export interface ParsedSample {
  index: number;
  name: string;
  memTotalMiB: number;
  memUsedMiB: number;
  utilPct: number | null;
}

/** Parses GPU_SAMPLE_QUERY's output. Rows it cannot read (a lost GPU prints "[GPU is lost]" or "ERR!") are skipped. */
export function parseGpuSamples(csv: string): ParsedSample[] {
  const out: ParsedSample[] = [];
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 5 || !/^\d+$/.test(cells[0]!)) continue;
    const total = numberOrNull(cells[1]!);
    const used = numberOrNull(cells[2]!);
    if (total === null || used === null || Number(cells[0]) > MAX_DEVICE_INDEX) continue;
    const util = numberOrNull(cells[3]!);
    out.push({ index: Number(cells[0]), name: restAfter(line, 4), memTotalMiB: total, memUsedMiB: used, utilPct: util === null ? null : Math.min(100, util) });
  }
  return out;
}

export const COMPUTE_APPS_QUERY = ['--query-compute-apps=gpu_uuid,pid,used_memory,process_name', '--format=csv,noheader,nounits'];

export interface GpuProcess {
  gpuUuid: string;
  pid: number;
  usedMiB: number | null;
  name: string;
}

/** Parses COMPUTE_APPS_QUERY's output: the processes using each GPU. "No running processes found" parses to none. */
export function parseComputeApps(csv: string): GpuProcess[] {
  const out: GpuProcess[] = [];
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 4 || !cells[0]!.startsWith('GPU-') || !/^\d+$/.test(cells[1]!)) continue;
    out.push({ gpuUuid: cells[0]!, pid: Number(cells[1]), usedMiB: numberOrNull(cells[2]!), name: restAfter(line, 3) });
  }
  return out;
}

/** The text after the n-th comma, trimmed: the last field, which may itself hold commas. */
function restAfter(line: string, n: number): string {
  let at = -1;
  for (let i = 0; i < n; i++) at = line.indexOf(',', at + 1);
  return line.slice(at + 1).trim();
}
