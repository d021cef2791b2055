'use client';
// The Usage page's chart (uPlot): device time leased per time bucket, stacked
// by key (the page's grouping), each key's busy part solid and its idle part
// pale over it; loaded only on the Usage page. The legend below says each
// key's leased and idle time over the window, and the hovered bucket's.
import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { UsageSeries } from '../protocol/wire';
import { fitAxis, GRID, AXIS_TEXT, mountChart } from './chart-axes';
import { hoursText } from './format';

const HEIGHT = 220;
/** One hue per key, in legend order; the rest of the keys are grey. */
const COLOURS = ['#0284c7', '#7c3aed', '#059669', '#d97706', '#e11d48', '#0d9488', '#4f46e5'];
const OTHERS = '#71717a';
/** The idle part: its key's colour, pale (alpha as two hex digits). */
const IDLE_ALPHA = '59';

interface Line {
  name: string;
  colour: string;
  leasedS: number[];
  idleS: number[];
}

/** The unit the y axis counts in: hours, or minutes or seconds where a window's use is that small. */
function unitFor(maxS: number): { div: number; name: string; short: string } {
  if (maxS >= 360) return { div: 3600, name: 'GPU-hours', short: 'h' };
  if (maxS >= 60) return { div: 60, name: 'GPU-minutes', short: 'min' };
  return { div: 1, name: 'GPU-seconds', short: 's' };
}

function bucketText(startS: number, stepS: number): string {
  const from = new Date(startS * 1000);
  const to = new Date((startS + stepS) * 1000);
  const day = (d: Date) => d.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' });
  const time = (d: Date) => d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return stepS >= 86400 ? `${day(from)} – ${day(new Date(to.getTime() - 1000))}`.replace(/^(.*) – \1$/, '$1') : `${day(from)} ${time(from)}–${time(to)}`;
}

export default function UsageChart({ data }: { data: UsageSeries }) {
  const box = useRef<HTMLDivElement>(null);
  const [hovered, setHovered] = useState<number | null>(null);
  const lines = useMemo<Line[]>(
    () => [
      ...data.series.map((s, i) => ({ name: s.key, colour: COLOURS[i % COLOURS.length]!, leasedS: s.leasedS, idleS: s.idleS })),
      ...(data.others ? [{ name: `${data.others.keys} other${data.others.keys === 1 ? '' : 's'}`, colour: OTHERS, ...data.others }] : []),
    ],
    [data],
  );
  // The y axis's unit, from the tallest bar (every key's leased time in one bucket).
  const unit = useMemo(() => unitFor(Math.max(0, ...data.at.map((_, i) => lines.reduce((sum, l) => sum + l.leasedS[i]!, 0)))), [data, lines]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // Stacked by hand, bottom up in legend order: each key's busy part, then its idle part. uPlot draws a bar from
    // zero, so the series go tallest first and each later one covers the part below its own top.
    const stack: { label: string; colour: string; fill: string; top: number[] }[] = [];
    let below = data.at.map(() => 0);
    for (const l of lines) {
      const busyTop = below.map((b, i) => b + Math.max(0, l.leasedS[i]! - l.idleS[i]!));
      const idleTop = busyTop.map((b, i) => b + l.idleS[i]!);
      stack.push({ label: `${l.name} busy`, colour: l.colour, fill: l.colour, top: busyTop });
      stack.push({ label: `${l.name} idle`, colour: l.colour, fill: `${l.colour}${IDLE_ALPHA}`, top: idleTop });
      below = idleTop;
    }
    stack.reverse();
    const x = data.at.map((t) => t + data.stepS / 2);
    const bars = uPlot.paths.bars!({ size: [0.85, 60], align: 0 });
    return mountChart(
      el,
      HEIGHT,
      {
        scales: {
          x: { time: true, range: () => [data.at[0]!, data.at.at(-1)! + data.stepS] },
          y: { range: [0, Math.max(1, ...below.map((v) => v / unit.div)) * 1.1] },
        },
        series: [{}, ...stack.map((s) => ({ label: s.label, stroke: s.colour, fill: s.fill, width: 0, paths: bars, points: { show: false } }))],
        axes: [
          { stroke: AXIS_TEXT, grid: GRID, ticks: GRID, space: 70 },
          {
            label: unit.name,
            labelSize: 18,
            stroke: AXIS_TEXT,
            grid: GRID,
            ticks: GRID,
            size: fitAxis,
            values: (_, t) => t.map((v) => `${+v.toFixed(2)} ${unit.short}`),
          },
        ],
        legend: { show: false },
        cursor: { points: { show: false }, drag: { x: false, y: false } },
        hooks: { setCursor: [(u) => setHovered(u.cursor.idx ?? null)] },
      },
      [x, ...stack.map((s) => s.top.map((v) => v / unit.div))] as uPlot.AlignedData,
    );
  }, [data, lines, unit]);
  const at = hovered === null ? null : hovered;
  const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);
  return (
    <figure className="min-w-0" aria-label={`Leased and idle ${unit.name} over time, by ${data.by}`} data-usage-chart data-unit={unit.name}>
      <div ref={box} className="w-full min-w-0" />
      <figcaption className="mt-2 text-xs text-zinc-600">
        <div className="mb-1 min-h-4" aria-live="polite">
          {at !== null && data.at[at] !== undefined ? (
            <span data-hovered>{bucketText(data.at[at]!, data.stepS)}</span>
          ) : (
            <span>
              Stacked by {data.by}: busy solid, idle pale; point at a bar for its {data.stepS >= 86400 ? 'day' : 'hours'}. Totals over the window:
            </span>
          )}
        </div>
        <ul className="flex flex-wrap gap-x-4 gap-y-1" data-usage-legend>
          {lines.map((l) => {
            const leased = at === null ? sum(l.leasedS) : (l.leasedS[at] ?? 0);
            const idle = at === null ? sum(l.idleS) : (l.idleS[at] ?? 0);
            return (
              <li key={l.name} className="flex items-center gap-1.5" data-series={l.name}>
                <span aria-hidden className="inline-flex">
                  <span className="h-3 w-2 rounded-l-sm" style={{ background: l.colour }} />
                  <span className="h-3 w-2 rounded-r-sm" style={{ background: `${l.colour}${IDLE_ALPHA}` }} />
                </span>
                <span className="max-w-48 truncate font-mono" title={l.name}>
                  {l.name}
                </span>
                <span className="tabular-nums">
                  {hoursText(leased)} leased, {hoursText(idle)} idle
                </span>
              </li>
            );
          })}
        </ul>
      </figcaption>
    </figure>
  );
}
