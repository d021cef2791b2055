// A small line of the last minutes' values (0–100), drawn as SVG: thousands
// of these cost less than a chart library's canvases. Its colours are
// Tailwind classes, so the dark theme turns them over with the rest.
export function Sparkline({ values, label, stroke = 'stroke-sky-600' }: { values: readonly (number | null)[]; label: string; stroke?: string }) {
  const w = 80;
  const h = 18;
  const pts = values.map((v, i) =>
    v === null ? null : [values.length < 2 ? w : (i / (values.length - 1)) * w, h - (Math.min(100, Math.max(0, v)) / 100) * (h - 2) - 1],
  );
  const d = pts.reduce((acc, p, i) => (p ? `${acc}${acc === '' || pts[i - 1] === null ? 'M' : 'L'}${p[0]!.toFixed(1)},${p[1]!.toFixed(1)}` : acc), '');
  return (
    <svg width={w} height={h} role="img" aria-label={label} className="inline-block align-middle">
      <title>{label}</title>
      <rect x="0" y="0" width={w} height={h} rx="2" className="fill-zinc-100" />
      {d ? <path d={d} fill="none" className={stroke} strokeWidth="1.5" /> : null}
    </svg>
  );
}
