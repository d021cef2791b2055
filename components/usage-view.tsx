'use client';
// Usage: the share of leased GPU time that sat idle (the headline), device
// time by submitter, token, host or model split into jobs, terminals and
// holds, a chart of leased and idle time over the window by the same
// grouping (GET /api/usage/series), and a drill-down to the leases behind a
// row (GET /api/usage).
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import Link from 'next/link';
import { useState } from 'react';
import type { UsageBy, UsageRow } from '../protocol/wire';
import { call } from './api-client';
import { idleSharePct, noSignalText } from '../core/idle';
import { hoursText } from './format';
import { keys } from './query-keys';
import { Ago, Card, ErrorBox, Loading, PageTitle } from './ui';

const WINDOWS = ['24h', '7d', '30d', '90d'] as const;
const BY: readonly UsageBy[] = ['submitter', 'token', 'team', 'host', 'model'];
const UsageChart = dynamic(() => import('./usage-chart'), { ssr: false, loading: () => <div className="h-64" /> });

export function UsageView() {
  const [since, setSince] = useState<(typeof WINDOWS)[number]>('7d');
  const [by, setBy] = useState<UsageBy>('submitter');
  const [key, setKey] = useState<string | null>(null);
  // Leased time grows while devices are held: read again every half minute.
  const q = useQuery({ queryKey: keys.usage({ since, by }), queryFn: () => call('GET /api/usage', { query: { since, by } }), refetchInterval: 30_000 });
  const series = useQuery({
    queryKey: keys.usageSeries({ since, by }),
    queryFn: () => call('GET /api/usage/series', { query: { since, by } }),
    refetchInterval: 30_000,
    // The old chart stays while a new window or grouping loads, rather than the page jumping.
    placeholderData: keepPreviousData,
  });
  const r = q.data;
  const share = r ? idleSharePct(r.total) : null;
  return (
    <div>
      <PageTitle sub="Device time leased, and how much of it the GPUs sat idle (utilisation at most 1% and no compute process).">Usage</PageTitle>
      <div className="mb-4 flex flex-wrap items-end gap-4 text-sm">
        <label className="flex flex-col text-xs text-zinc-600">
          Window
          <select
            value={since}
            onChange={(e) => {
              setSince(e.target.value as typeof since);
              setKey(null);
            }}
            className="mt-0.5 rounded border border-zinc-300 px-2 py-1"
          >
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                last {w}
              </option>
            ))}
          </select>
        </label>
        <label className="flex flex-col text-xs text-zinc-600">
          By
          <select
            value={by}
            onChange={(e) => {
              setBy(e.target.value as UsageBy);
              setKey(null);
            }}
            className="mt-0.5 rounded border border-zinc-300 px-2 py-1"
          >
            {BY.map((b) => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="usage" /> : null}
      {r ? (
        <>
          <section aria-label="Idle share" className="mb-4 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm">
            <div className="text-4xl font-semibold tabular-nums" data-idle-share>
              {share === null ? '–' : `${share}%`}
            </div>
            <div className="text-sm text-zinc-600">
              {share === null
                ? 'of leased GPU time was idle: no GPU time with a signal in this window'
                : `of ${hoursText(r.total.leasedS - r.total.noSignalS)} of leased GPU time was idle (${hoursText(r.total.idleS)}), in the last ${since}`}
              {noSignalText(r.total, hoursText)}
            </div>
            <div className="mt-1 text-xs text-zinc-500">
              jobs {hoursText(r.total.jobsS)} · terminals {hoursText(r.total.terminalsS)} · holds {hoursText(r.total.holdsS)}
            </div>
          </section>
          {r.rows.length && series.data?.series.length ? (
            <section aria-label="Usage over time" className="mb-4 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm">
              <UsageChart data={series.data} />
            </section>
          ) : null}
          <ErrorBox error={series.error} />
          {r.rows.length ? (
            <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
              <table className="w-full text-left text-sm" aria-label={`Usage by ${by}`}>
                <thead className="text-xs text-zinc-500">
                  <tr>
                    <th className="px-3 py-2 font-medium capitalize">{by}</th>
                    <th className="pr-3 font-medium">Leased</th>
                    <th className="pr-3 font-medium">Jobs</th>
                    <th className="pr-3 font-medium">Terminals</th>
                    <th className="pr-3 font-medium">Holds</th>
                    <th className="pr-3 font-medium">Idle</th>
                    <th className="pr-3 font-medium">Idle share</th>
                  </tr>
                </thead>
                <tbody>
                  {r.rows.map((row) => (
                    <UsageLine key={row.key} row={row} open={key === row.key} onOpen={() => setKey(key === row.key ? null : row.key)} />
                  ))}
                </tbody>
              </table>
            </div>
          ) : (
            <p className="text-sm text-zinc-500">No device was leased in the last {since}.</p>
          )}
          {key !== null ? (
            <div className="mt-4">
              <Leases since={since} by={by} which={key} />
            </div>
          ) : null}
        </>
      ) : null}
    </div>
  );
}

function UsageLine({ row, open, onOpen }: { row: UsageRow; open: boolean; onOpen: () => void }) {
  const share = idleSharePct(row);
  return (
    <tr data-usage={row.key} className={`border-t border-zinc-100 ${open ? 'bg-sky-50' : ''}`}>
      <td className="px-3 py-1.5">
        <button type="button" onClick={onOpen} className="text-left font-mono text-xs text-sky-800 hover:underline" aria-expanded={open}>
          {row.key}
        </button>
      </td>
      <td className="pr-3 tabular-nums">{hoursText(row.leasedS)}</td>
      <td className="pr-3 tabular-nums text-zinc-600">{hoursText(row.jobsS)}</td>
      <td className="pr-3 tabular-nums text-zinc-600">{hoursText(row.terminalsS)}</td>
      <td className="pr-3 tabular-nums text-zinc-600">{hoursText(row.holdsS)}</td>
      <td className="pr-3 tabular-nums">{hoursText(row.idleS)}</td>
      <td className={`pr-3 tabular-nums ${share !== null && share >= 50 ? 'font-medium text-amber-700' : ''}`}>{share === null ? 'no signal' : `${share}%`}</td>
    </tr>
  );
}

/** The leases behind one row, longest first. */
function Leases({ since, by, which }: { since: string; by: UsageBy; which: string }) {
  const q = useQuery({
    queryKey: keys.usage({ since, by, key: which }),
    queryFn: () => call('GET /api/usage', { query: { since, by, key: which } }),
  });
  return (
    <Card title={`Leases of ${which}`}>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="its leases" /> : null}
      {q.data?.leases?.length ? (
        <table className="w-full text-left text-sm" data-leases>
          <thead className="text-xs text-zinc-500">
            <tr>
              <th className="py-1 pr-3 font-medium">Job</th>
              <th className="pr-3 font-medium">Kind</th>
              <th className="pr-3 font-medium">Submitter</th>
              <th className="pr-3 font-medium">Device</th>
              <th className="pr-3 font-medium">From</th>
              <th className="pr-3 font-medium">Leased</th>
              <th className="pr-3 font-medium">Idle</th>
            </tr>
          </thead>
          <tbody>
            {q.data.leases.map((l) => (
              <tr key={`${l.jobId} ${l.device}`} className="border-t border-zinc-100">
                <td className="py-1.5 pr-3 font-mono text-xs">
                  <Link href={`/jobs/${encodeURIComponent(l.jobId)}`} className="text-sky-800 hover:underline">
                    {l.jobId}
                  </Link>
                </td>
                <td className="pr-3 text-xs">{l.kind === 'run' ? 'job' : l.kind === 'tty' ? 'terminal' : 'hold'}</td>
                <td className="max-w-40 truncate pr-3 text-xs">{l.submitter}</td>
                <td className="pr-3 font-mono text-xs">{l.device}</td>
                <td className="pr-3 text-xs text-zinc-600">
                  <Ago at={l.from} />
                </td>
                <td className="pr-3 tabular-nums">{hoursText(l.leasedS)}</td>
                <td className="pr-3 tabular-nums">{l.idleS === null ? 'no signal' : hoursText(l.idleS)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : q.data ? (
        <p className="text-sm text-zinc-500">No lease.</p>
      ) : null}
    </Card>
  );
}
