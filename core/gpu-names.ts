// One name per GPU model, so `gpu_model=5090`, `RTX 5090` and nvidia-smi's
// `NVIDIA GeForce RTX 5090` all mean the same devices.
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
  'L40S',
  'V100',
  'A100',
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

// The 80GB A100 is a different product; only an explicit 80G (and no 40G)
// selects it, so a 40GB card can never be taken for an 80GB one.
function a100Variant(rest: string): string {
  const sizes = memorySizes(rest.replace(/SXM\d?|PCIE/g, '-'));
  return sizes.includes('80') && !sizes.includes('40') ? 'A100-80GB' : 'A100';
}

function memorySizes(text: string): string[] {
  return [...text.matchAll(/(?:^|[^0-9])(\d+)G/g)].map((m) => m[1] ?? '');
}
