'use client';
// A device's GPU utilisation and memory over the last hour or day, from the stored samples.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import { useState } from 'react';
import type { SampleWindow } from '../../protocol/wire';
import { call } from '../api-client';
import { keys } from '../query-keys';
import { ErrorBox } from '../ui';

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
        {(['1h', '1d'] as const).map((w) => (
          <button
            key={w}
            type="button"
            role="tab"
            aria-selected={window === w}
            onClick={() => setWindow(w)}
            className={`rounded px-2 py-0.5 text-xs ${window === w ? 'bg-zinc-900 text-white' : 'ring-1 ring-zinc-300'}`}
          >
            {w === '1h' ? 'last hour' : 'last day'}
          </button>
        ))}
      </div>
      <ErrorBox error={q.error} />
      {samples?.at.length ? (
        <GpuChart samples={samples} windowS={window === '1h' ? 3600 : 86400} />
      ) : (
        <p className="text-sm text-zinc-500">{q.isPending ? 'Loading samples…' : 'No samples in this range.'}</p>
      )}
    </div>
  );
}
