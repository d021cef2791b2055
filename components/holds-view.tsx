'use client';
// Holds (rc hold): who holds which device, and for how long more, counting
// down; Release and Extend for those allowed.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { formatDuration, parseDuration } from '../core/duration';
import { idleText } from '../core/idle';
import { mayStop, stopAs } from '../core/web-submitter';
import type { JobView } from '../protocol/wire';
import { call } from './api-client';
import { countdownText } from './format';
import { StopButton } from './jobs/job-view';
import { useMe, useNow } from './providers';
import { keys } from './query-keys';
import { Ago, Button, Empty, ErrorBox, JobBadge, Loading, PageTitle } from './ui';

export function HoldsView() {
  const q = useQuery({
    queryKey: keys.holds,
    queryFn: () => call('GET /api/jobs', { query: { kind: 'hold', state: 'running,queued', limit: '1000' } }).then((r) => r.jobs),
  });
  const now = useNow();
  return (
    <div>
      <PageTitle sub="Devices kept with rc hold, without a command; each ends by itself when its time is up.">Holds</PageTitle>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="holds" /> : null}
      {q.data && q.data.length === 0 ? (
        <Empty>
          No device is held. <code className="font-mono">rc hold --select &apos;vram&gt;=40G&apos; --ttl 2h</code> keeps one for you without a command.
        </Empty>
      ) : null}
      {q.data?.length ? (
        <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">Hold</th>
                <th className="pr-3 font-medium">Holder</th>
                <th className="pr-3 font-medium">Device</th>
                <th className="pr-3 font-medium">Time left</th>
                <th className="pr-3 font-medium">GPU</th>
                <th className="pr-3 font-medium">Actions</th>
              </tr>
            </thead>
            <tbody>
              {q.data.map((h) => (
                <HoldLine key={h.id} h={h} now={now} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

function HoldLine({ h, now }: { h: JobView; now: number }) {
  const left = h.expiresAt ? (Date.parse(h.expiresAt) - now) / 1000 : null;
  return (
    <tr data-hold={h.id} className="border-t border-zinc-100">
      <td className="px-3 py-2 font-mono text-xs">
        <Link href={`/jobs/${encodeURIComponent(h.id)}`} className="text-sky-800 hover:underline">
          {h.id}
        </Link>{' '}
        <JobBadge state={h.state} />
      </td>
      <td className="pr-3">{h.submitter}</td>
      <td className="pr-3 font-mono text-xs">{h.devices?.join(', ') ?? h.device ?? (h.selector || 'any')}</td>
      <td className="pr-3 tabular-nums" data-ttl title={h.expiresAt ?? undefined}>
        {left === null ? 'starts when a device is free' : left > 0 ? countdownText(left) : 'ending…'}
        {h.expiresAt ? (
          <span className="ml-1 text-xs text-zinc-500">
            (ends <Ago at={h.expiresAt} />)
          </span>
        ) : null}
      </td>
      <td
        className={`pr-3 text-xs ${h.idleWarned ? 'font-medium text-amber-700' : 'text-zinc-600'}`}
        data-idle={h.idleS === null ? 'unknown' : String(Math.floor(h.idleS))}
        title="Idle: utilisation at most 1% and no process on its GPUs"
      >
        {h.state === 'running' ? idleText(h.idleS, formatDuration) : '–'}
        {h.idleWarned ? <span className="ml-1">(idle hold: release it for others)</span> : null}
      </td>
      <td className="py-1 pr-3">
        <div className="flex flex-wrap items-start gap-2">
          <StopButton job={h} />
          {h.state === 'running' ? <ExtendForm hold={h} /> : null}
        </div>
      </td>
    </tr>
  );
}

function ExtendForm({ hold }: { hold: JobView }) {
  const me = useMe();
  const client = useQueryClient();
  const [ttl, setTtl] = useState('1h');
  const seconds = parseDuration(ttl);
  const extend = useMutation({
    mutationFn: () => call('POST /api/holds/:id/extend', { id: hold.id, body: { submitter: stopAs(me!, hold.submitter), ttlS: seconds! } }),
    onSuccess: () => void client.invalidateQueries({ queryKey: keys.holds }),
  });
  if (!me || !mayStop(me, hold.submitter)) return null;
  return (
    <form
      className="flex flex-col"
      onSubmit={(e) => {
        e.preventDefault();
        extend.mutate();
      }}
    >
      <span className="flex gap-1">
        <label className="sr-only" htmlFor={`ttl-${hold.id}`}>
          New time to live for {hold.id}
        </label>
        <input
          id={`ttl-${hold.id}`}
          value={ttl}
          onChange={(e) => setTtl(e.target.value)}
          className={`w-16 rounded border px-1.5 py-0.5 font-mono text-sm ${seconds ? 'border-zinc-300' : 'border-red-400'}`}
          aria-invalid={!seconds}
        />
        <Button type="submit" disabled={!seconds || extend.isPending} aria-label={`Extend hold ${hold.id}`}>
          Extend
        </Button>
      </span>
      {!seconds ? <span className="text-xs text-red-700">a duration: 90s, 30m, 2h</span> : null}
      <ErrorBox error={extend.error} />
    </form>
  );
}
