'use client';
// A device's GPU utilisation and memory over the last hour, day, week or 90 days, from the stored samples.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import { useState } from 'react';
import type { SampleWindow } from '../../protocol/wire';
import { call } from '../api-client';
import { keys } from '../query-keys';
import { ErrorBox } from '../ui';

/** The ranges offered, their labels and spans (seconds: the chart's x axis). */
const RANGES = [
  { window: '1h', label: 'last hour', seconds: 3600 },
  { window: '1d', label: 'last day', seconds: 86400 },
  { window: '7d', label: 'last week', seconds: 7 * 86400 },
  { window: '90d', label: 'last 90 days', seconds: 90 * 86400 },
] as const satisfies readonly { window: SampleWindow; label: string; seconds: number }[];

const GpuChart = dynamic(() => import('../gpu-chart'), { ssr: false, loading: () => <div className="h-44" /> });

export function GpuHistory({ device }: { device: string }) {
  const [window, setWindow] = useState<SampleWindow>('1h');
  const q = useQuery({
    queryKey: keys.samples(device, window),
    queryFn: () => call('GET /api/samples', { query: { device, window } }),
    placeholderData: keepPreviousData,
  });
  const samples = q.data?.samples[0];
  return (
    <div>
      <div role="tablist" aria-label="Time range" className="mb-2 flex gap-1">
        {RANGES.map((r) => (
          <button
            key={r.window}
            type="button"
            role="tab"
            aria-selected={window === r.window}
            onClick={() => setWindow(r.window)}
            className={`rounded px-2 py-0.5 text-xs ${window === r.window ? 'bg-zinc-900 text-white' : 'ring-1 ring-zinc-300'}`}
          >
            {r.label}
          </button>
        ))}
      </div>
      <ErrorBox error={q.error} />
      {samples?.at.length ? (
        <GpuChart samples={samples} windowS={RANGES.find((r) => r.window === window)!.seconds} />
      ) : (
        <p className="text-sm text-zinc-500">{q.isPending ? 'Loading samples…' : 'No samples in this range.'}</p>
      )}
    </div>
  );
}
