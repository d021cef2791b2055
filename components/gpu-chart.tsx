'use client';
// A device's GPU utilisation and memory over a time range (uPlot),
// loaded only on the device page.
import { useEffect, useRef } from 'react';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { DeviceSamples } from '../protocol/wire';
import { fitAxis, GRID, AXIS_TEXT, mountChart } from './chart-axes';

/** `windowS`: the x axis spans the last this many seconds, however few samples there are. */
export default function GpuChart({ samples, windowS }: { samples: DeviceSamples; windowS: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const gib = samples.memUsedMiB.map((m) => m / 1024);
    return mountChart(
      el,
      180,
      {
        scales: {
          x: { time: true, range: () => [Date.now() / 1000 - windowS, Date.now() / 1000] },
          pct: { range: [0, 100] },
          mem: { range: [0, Math.max(1, samples.memTotalMiB / 1024)] },
        },
        series: [
          {},
          { label: 'utilisation %', scale: 'pct', stroke: '#0284c7', width: 1.5, value: (_, v) => (v == null ? '–' : `${Math.round(v)}%`) },
          { label: 'memory GiB', scale: 'mem', stroke: '#7c3aed', width: 1.5, value: (_, v) => (v == null ? '–' : `${v.toFixed(1)} GiB`) },
        ],
        // Each axis as wide as its labels (the memory axis's "80 GiB" was cut off at the right edge); the memory
        // axis draws no grid of its own, so the two scales' lines do not cross.
        axes: [
          { stroke: AXIS_TEXT, grid: GRID, ticks: GRID },
          { scale: 'pct', values: (_, t) => t.map((v) => `${v}%`), size: fitAxis, stroke: AXIS_TEXT, grid: GRID, ticks: GRID },
          { scale: 'mem', side: 1, values: (_, t) => t.map((v) => `${v} GiB`), size: fitAxis, stroke: AXIS_TEXT, grid: { show: false }, ticks: GRID },
        ],
      },
      [samples.at, samples.utilPct, gib] as uPlot.AlignedData,
    );
  }, [samples, windowS]);
  // min-w-0: inside a grid or flex cell the chart may shrink to the cell, rather than push the cell wider than the page.
  return <div ref={box} className="w-full min-w-0" data-gpu-chart />;
}
