// One name per GPU model, so `gpu_model=5090`, `RTX 5090` and nvidia-smi's
// `NVIDIA GeForce RTX 5090` all mean the same devices; the family people say
// (`A100` for the 40 and 80 GB cards alike); and the memory size the card is
// sold as (an H100 80GB reports 79.6 GiB, and is `vram=80G`).
//
// Every rule matches the *compact* form of a name (upper case, no whitespace,
// vendor prefixes stripped), and the fallback for unknown names is that same
// compact form. Because canonical names are their own compact form and map to
// themselves, canonicalGpuModel is idempotent by construction.

export const CANONICAL_GPU_MODELS: readonly string[] = Object.freeze([
  'RTX5090',
  'RTX5080',
  'RTX4090',
  'RTX3090',
  'A6000',
  'L4',
  'T4',
  'A10',
  'A10G',
  'L40S',
  'V100',
  'A100-40GB',
  'A100-80GB',
  'H100',
  'H200',
  'B200',
  'B300',
]);

const VENDOR_PREFIX = /^(?:NVIDIA|GEFORCE|TESLA)[-_]*/;

// Memory size written after a model, as in `H100 80GB` → `H10080GB`.
const MEMORY = String.raw`(?:\d+G(?:I?B)?)?`;

// What may follow a model (after its memory): nothing, a separator, or a
// form-factor word. Anything else (`A100X`, `A10G`, `V100S`) is another model.
const TAIL = '(?:[^A-Z0-9].*|(?:PCIE|SXM|NVL|HBM).*)?';

function modelPattern(model: string): RegExp {
  return new RegExp(`^${model}${MEMORY}${TAIL}$`, 's');
}

// Order matters only where one name is a prefix of another: L40S before L4,
// A10G before A10. A100 is handled before all of these.
const DATACENTER: readonly (readonly [RegExp, string])[] = ['H100', 'H200', 'B200', 'B300', 'L40S', 'L4', 'T4', 'V100', 'A10G', 'A10'].map(
  (model) => [modelPattern(model), model] as const,
);

// Consumer and workstation cards: the whole name is the model (plus an
// optional RTX and memory), so `RTX 3090 Ti` or `RTX 4090 D` stay distinct.
const CONSUMER = new RegExp(`^(?:RTX)?(5090|5080|4090|3090)${MEMORY}$`, 's');
const A6000 = new RegExp(`^(?:RTX)?A6000${MEMORY}$`, 's');
const A100 = modelPattern('A100');

/** Maps nvidia-smi names and user spellings to one canonical model name. Never throws. */
export function canonicalGpuModel(name: string): string {
  const compact = compactName(String(name));
  return recognise(compact) ?? compact;
}

/** Upper case, no whitespace, `NVIDIA`/`GeForce`/`Tesla` prefixes removed. */
function compactName(name: string): string {
  let text = name.toUpperCase().replace(/\s+/g, '');
  while (VENDOR_PREFIX.test(text)) text = text.replace(VENDOR_PREFIX, '');
  return text;
}

function recognise(compact: string): string | null {
  if (A100.test(compact)) return a100Variant(compact.slice('A100'.length));
  for (const [pattern, model] of DATACENTER) {
    if (pattern.test(compact)) return model;
  }
  const consumer = CONSUMER.exec(compact);
  if (consumer) return `RTX${consumer[1]}`;
  if (A6000.test(compact)) return 'A6000';
  return null;
}

// The 40GB and 80GB A100 are different products: only a name that says one
// size (and not the other) is that model, so a 40GB card can never be taken
// for an 80GB one. A name that says neither stays `A100`: family A100, its
// exact model unknown.
function a100Variant(rest: string): string {
  const sizes = memorySizes(rest.replace(/SXM\d?|PCIE/g, '-'));
  const [has40, has80] = [sizes.includes('40'), sizes.includes('80')];
  return has40 === has80 ? 'A100' : has80 ? 'A100-80GB' : 'A100-40GB';
}

function memorySizes(text: string): string[] {
  return [...text.matchAll(/(?:^|[^0-9])(\d+)G/g)].map((m) => m[1] ?? '');
}

// ---------------------------------------------------------------- families

/** Exact models that are one of several in a family; every other model is its own family. */
const FAMILY_OF: Readonly<Record<string, string>> = Object.freeze({ 'A100-40GB': 'A100', 'A100-80GB': 'A100' });

/** The family of a model (`A100-80GB` → `A100`); a model of no larger family is its own (`H100`, and any model rc does not know). */
export function gpuFamily(name: string): string {
  const model = canonicalGpuModel(name);
  return Object.hasOwn(FAMILY_OF, model) ? FAMILY_OF[model]! : model;
}

/** The families rc knows, in CANONICAL_GPU_MODELS' order. */
export const GPU_FAMILIES: readonly string[] = Object.freeze([...new Set(CANONICAL_GPU_MODELS.map(gpuFamily))]);

/** The exact models of a family rc knows of that has several (`A100` → A100-40GB, A100-80GB); [] for any other name. */
export function familyModels(name: string): string[] {
  const family = canonicalGpuModel(name);
  const members = CANONICAL_GPU_MODELS.filter((m) => gpuFamily(m) === family);
  return members.length > 1 || (members.length === 1 && members[0] !== family) ? members : [];
}

/**
 * How a --gpu choice's name selects devices: `model` for an exact model that
 * is one of several in its family (`A100-80GB`: only that model), `family`
 * for anything else (`A100`: any A100; `H100`, whose family is the one model;
 * a name rc does not know, which a device's own gpu_family then has to carry).
 */
export function gpuNameKind(name: string): 'family' | 'model' {
  const model = canonicalGpuModel(name);
  return Object.hasOwn(FAMILY_OF, model) ? 'model' : 'family';
}

/** Whether rc knows this name as a family or a model (the fleet may have others: a model rc does not know is its own family). */
export function isKnownGpuName(name: string): boolean {
  const canonical = canonicalGpuModel(name);
  return GPU_FAMILIES.includes(canonical) || CANONICAL_GPU_MODELS.includes(canonical);
}

/**
 * `gpu_model=A100` names a family, not a model: it matches no device that
 * reports its size. For a selector's terms, the sentence that says what to
 * write instead, or null.
 */
export function familyAsModelHint(terms: readonly { key: string; op: string; value: string }[]): string | null {
  for (const t of terms) {
    if (t.key !== 'gpu_model' || t.op !== '=') continue;
    const family = canonicalGpuModel(t.value);
    const members = familyModels(family);
    if (members.length && !members.includes(family)) {
      return `gpu_model is the exact model (${members.join(' or ')}): did you mean gpu_family=${family} (any ${family})?`;
    }
  }
  return null;
}

/** --gpu's refusal of a name rc does not know and no device reports, listing the names rc knows. */
export function unknownGpuNameMessage(choice: string, name: string): string {
  // Each model, a family of several just before its first one: `A100 (any of A100-40GB, A100-80GB), A100-40GB, ...`.
  const known = [...new Set(CANONICAL_GPU_MODELS.flatMap((m) => [gpuFamily(m), m]))].map((n) => {
    const members = familyModels(n);
    return members.length && !members.includes(n) ? `${n} (any of ${members.join(', ')})` : n;
  });
  return `--gpu ${choice}: no GPU family or model is called ${name}; rc knows ${known.join(', ')} (and any model a device reports: rc devices shows them)`;
}

// ------------------------------------------------------------ nominal VRAM

/**
 * The memory each model is sold with, in GiB (the sizes of its variants).
 * A card reports less than that (a little for the driver, 1/16 more on
 * cards with ECC on: an L4 of 24 GB reports 22.5 GiB), never much more.
 */
const NOMINAL_GIB: Readonly<Record<string, readonly number[]>> = Object.freeze({
  RTX5090: [32],
  RTX5080: [16],
  RTX4090: [24],
  RTX3090: [24],
  A6000: [48],
  L4: [24],
  T4: [16],
  A10: [24],
  A10G: [24],
  L40S: [48],
  V100: [16, 32],
  'A100-40GB': [40],
  'A100-80GB': [80],
  H100: [80, 94],
  H200: [141],
  B200: [180, 192],
  B300: [288],
});

const GIB = 1024 ** 3;
// Reported within this band of a nominal size: that size. Outside it (a variant the table lacks), the reported size stays.
const NOMINAL_BAND: readonly [number, number] = [0.9, 1.02];

/**
 * The `vram` label: the model's nominal size in bytes where the model is
 * known and the reported total is one of its sizes; else the reported total.
 */
export function nominalVramBytes(model: string, reportedBytes: number): number {
  const sizes = NOMINAL_GIB[canonicalGpuModel(model)] ?? [];
  const [low, high] = NOMINAL_BAND;
  const size = sizes.find((gib) => reportedBytes >= gib * GIB * low && reportedBytes <= gib * GIB * high);
  return size === undefined ? reportedBytes : size * GIB;
}

/** A GPU's labels that follow from nvidia-smi's name and memory.total (MiB; null when unreadable): the worker's and the simulator's alike. */
export function gpuLabels(name: string, memTotalMiB: number | null): { key: string; value: string }[] {
  const model = canonicalGpuModel(name);
  const labels = [
    { key: 'gpu_model', value: model },
    { key: 'gpu_family', value: gpuFamily(model) },
  ];
  if (memTotalMiB === null) return labels;
  const reported = memTotalMiB * 1024 * 1024;
  return [...labels, { key: 'vram', value: String(nominalVramBytes(model, reported)) }, { key: 'vram_total_bytes', value: String(reported) }];
}
