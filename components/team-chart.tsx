'use client';
// A team's GPU-hours per UTC day (uPlot): busy and idle stacked (idle on top),
// and its budget as a line at its daily rate; loaded only on the Teams page.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { mountChart } from './chart-axes';
import type { TeamDay } from '../protocol/wire';

const HEIGHT = 170;

/** `budgetPerDay`: the budget's GPU-hours per day (a weekly one divided by 7), or null with none. */
export default function TeamChart({ daily, budgetPerDay, budgetLabel }: { daily: TeamDay[]; budgetPerDay: number | null; budgetLabel: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const x = daily.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
    const busy = daily.map((d) => d.busyS / 3600);
    const idle = daily.map((d) => d.idleS / 3600);
    // Stacked by hand: the total is drawn first (idle's colour), busy over it, so idle shows on top.
    const total = busy.map((b, i) => b + idle[i]!);
    const hours = (v: number | null) => (v == null ? '–' : `${v.toFixed(1)} h`);
    const bars = uPlot.paths.bars!({ size: [0.7, 40], align: 0 });
    const series: uPlot.Series[] = [
      { label: 'day', value: (_, v) => (v == null ? '–' : new Date(v * 1000).toISOString().slice(0, 10)) },
      {
        label: 'idle',
        stroke: '#d97706',
        fill: '#fcd34d',
        width: 0,
        paths: bars,
        points: { show: false },
        value: (_, _v, _s, i) => hours(i == null ? null : idle[i]!),
      },
      { label: 'busy', stroke: '#0369a1', fill: '#38bdf8', width: 0, paths: bars, points: { show: false }, value: (_, v) => hours(v) },
    ];
    const data: (number | null)[][] = [x, total, busy];
    if (budgetPerDay !== null) {
      series.push({ label: budgetLabel, stroke: '#b91c1c', width: 1.5, dash: [6, 4], points: { show: false }, value: (_, v) => hours(v) });
      data.push(x.map(() => budgetPerDay));
    }
    const top = Math.max(1, ...total, budgetPerDay ?? 0) * 1.1;
    return mountChart(
      el,
      HEIGHT,
      {
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true, range: () => [x[0]! - 43_200, x.at(-1)! + 43_200] }, y: { range: [0, top] } },
        series,
        axes: [{ space: 60 }, { values: (_, t) => t.map((v) => `${v} h`), size: 50 }],
        legend: { live: true },
      },
      data as uPlot.AlignedData,
    );
  }, [daily, budgetPerDay, budgetLabel]);
  return <div ref={box} className="w-full" data-team-chart />;
}
