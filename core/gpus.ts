// What to pass to `docker --gpus`: a person's (or the config's) GPU request
// turned into docker's form, or a reason it is refused. Pure: no I/O.

export type GpuSpec = { ok: true; arg: string } | { ok: false; reason: string };

export const MAX_GPU_COUNT = 64;

const INDEX = /^[0-9]{1,4}$/;
const UUID = /^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// Anything outside these characters could be read by a shell or by docker's CSV parser.
const ALLOWED = /^[A-Za-z0-9=,-]*$/;

const FORMS = 'use all, a count (1 to 64), GPU indices like 0,1, or GPU UUIDs like GPU-6a1b2c3d-0000-4000-8000-000000000001';

/**
 * `all` → all; `N` → a count; `0,1` → device=0,1; `GPU-<uuid>[,...]` →
 * device=GPU-...; `device=<list>` is accepted as well. Everything else is refused.
 */
export function normalizeGpuSpec(input: string): GpuSpec {
  if (input === '') return refuse(`no GPUs given: ${FORMS}`);
  if (!ALLOWED.test(input)) {
    return refuse(`"${printable(input)}" has characters a GPU list cannot contain (only letters, digits, "-" and "," are allowed): ${FORMS}`);
  }
  if (input === 'all') return { ok: true, arg: 'all' };
  if (/^[0-9]+$/.test(input)) {
    const n = Number(input);
    if (n === 0) return refuse(`a count of 0 attaches no GPU: leave the GPU setting out instead, or ask for 1 to ${MAX_GPU_COUNT}`);
    if (n > MAX_GPU_COUNT) return refuse(`a count of ${input} is more than the ${MAX_GPU_COUNT} GPUs a host can have: ask for 1 to ${MAX_GPU_COUNT}`);
    return { ok: true, arg: String(n) };
  }
  const explicit = input.startsWith('device=');
  const list = explicit ? input.slice('device='.length) : input;
  if (list === '') return refuse(`"device=" names no GPU: ${FORMS}`);
  const items = list.split(',');
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of items) {
    if (item === '') return refuse(`"${input}" has an empty entry (a stray comma): ${FORMS}`);
    let norm: string;
    if (INDEX.test(item)) norm = String(Number(item));
    else if (UUID.test(item)) norm = item;
    else return refuse(`"${item}" is neither a GPU index nor a GPU UUID: ${FORMS}`);
    const key = norm.toLowerCase();
    if (seen.has(key)) return refuse(`GPU ${norm} is listed twice in "${input}": list each GPU once`);
    seen.add(key);
    out.push(norm);
  }
  return { ok: true, arg: `device=${out.join(',')}` };
}

/**
 * The argv element to put after `--gpus`. Docker parses the flag as CSV, so a
 * device list with a comma must be quoted to stay one field.
 */
export function dockerGpusValue(arg: string): string {
  return arg.includes(',') ? `"${arg}"` : arg;
}

function refuse(reason: string): GpuSpec {
  return { ok: false, reason };
}

/** The input as it may appear in a message: control characters escaped, length capped. */
function printable(input: string): string {
  const s = JSON.stringify(input).slice(1, -1);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
