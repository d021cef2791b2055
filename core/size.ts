// Sizes as people write them in selectors and labels: `40G`, `1.5T`, `8`.
// Units are powers of 1024 (a GPU with "80G" of memory has 80 GiB).

const UNITS = ['', 'K', 'M', 'G', 'T'] as const;

// Optional sign, a decimal number, then an optional K/M/G/T unit that may be
// followed by `B` or `iB`. A bare `B` is not a unit: `512B` is not a size.
const SIZE = /^(-?)(\d+(?:\.\d+)?)(?:([KMGT])(?:B|iB)?)?$/i;

/** Parses `40G` → 42949672960, `8` → 8, `1.5K` → 1536; null if not a size. */
export function parseSize(text: string): number | null {
  const m = SIZE.exec(text);
  if (!m) return null;
  const [, sign, digits, unit] = m;
  const power = unit ? UNITS.indexOf(unit.toUpperCase() as (typeof UNITS)[number]) : 0;
  const value = Number(digits) * 1024 ** power * (sign === '-' ? -1 : 1);
  if (!Number.isFinite(value)) return null;
  return value === 0 ? 0 : value; // no -0: it surprises strict equality checks
}

/** Formats bytes with the largest unit giving ≥ 1, one decimal at most: 1536 → `1.5K`. */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const text = formatMagnitude(Math.abs(bytes));
  return bytes < 0 && text !== '0' ? `-${text}` : text;
}

function formatMagnitude(bytes: number): string {
  let unit = 0;
  let value = bytes;
  while (unit < UNITS.length - 1 && value >= 1024) {
    value /= 1024;
    unit++;
  }
  let rounded = roundToTenth(value);
  // 1023.96K rounds up to 1024K; say 1M instead.
  if (rounded >= 1024 && unit < UNITS.length - 1) {
    unit++;
    rounded = roundToTenth(value / 1024);
  }
  return `${rounded}${UNITS[unit]}`; // String(24) is '24', so `.0` never appears
}

function roundToTenth(value: number): number {
  return Math.round(value * 10) / 10;
}
