'use client';
// The fleet page: totals, used and free per model, then every host with its
// devices. The filter takes a selector in the CLI's syntax and is applied
// here, over the fleet already loaded, so typing costs no request. The host
// list is virtualised: only the hosts on screen are rendered, and only their
// GPU samples are fetched.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useWindowVirtualizer } from '@tanstack/react-virtual';
import Link from 'next/link';
import { memo, useDeferredValue, useMemo, useState } from 'react';
import { matchTerms, parseSelector } from '../../core/selector';
import type { DeviceSamples, DeviceSummary, GpuView, HostRow } from '../../protocol/wire';
import { call } from '../api-client';
import { formatDuration } from '../../core/duration';
import { idleText } from '../../core/idle';
import { memPairText, vramText } from '../format';
import { OpenTerminalButton } from '../open-terminal';
import { noTerminal, noTerminalOnAny } from '../../core/terminal-offer';
import { patchFleet } from '../live-plan';
import { keys } from '../query-keys';
import { Sparkline } from '../sparkline';
import { reservedText } from '../../core/reserved';
import { Ago, Button, DeviceBadge, Empty, ErrorBox, Loading, ReservedForLink } from '../ui';
import { byHost, FLEET_FILTER_EXAMPLE, fleetTotals, type HostGroup, perModel, type ShownState, shownState } from './totals';

const TOTALS: { key: ShownState; label: string; colour: string }[] = [
  { key: 'free', label: 'free', colour: 'text-emerald-700' },
  { key: 'busy', label: 'busy', colour: 'text-sky-700' },
  { key: 'reserved', label: 'reserved', colour: 'text-sky-900' },
  { key: 'held', label: 'held', colour: 'text-violet-700' },
  { key: 'off', label: 'off', colour: 'text-amber-700' },
  { key: 'unhealthy', label: 'unhealthy', colour: 'text-red-700' },
  { key: 'offline', label: 'offline', colour: 'text-zinc-600' },
];

export function FleetView() {
  // Sorted as a live patch sorts (patchFleet), so a host keeps its place when it is fetched again.
  // No structural sharing: comparing thousands of devices deeply with the last answer costs more than re-rendering the few hosts on screen.
  const fleet = useQuery({ queryKey: keys.fleet, queryFn: async () => patchFleet(await call('GET /api/fleet'), [], []), structuralSharing: false });
  const queue = useQuery({ queryKey: keys.queue, queryFn: () => call('GET /api/queue') });
  const [filter, setFilter] = useState('');
  const deferred = useDeferredValue(filter);
  const parsed = useMemo(() => parseSelector(deferred), [deferred]);
  const shown = useMemo(() => {
    const all = fleet.data?.devices ?? [];
    return parsed.ok && parsed.terms.length ? all.filter((d) => matchTerms(parsed.terms, d.labels)) : all;
  }, [fleet.data, parsed]);
  const totals = useMemo(() => fleetTotals(shown), [shown]);
  const models = useMemo(() => perModel(shown), [shown]);
  const groups = useMemo(() => byHost(shown), [shown]);
  const hostRows = useMemo(() => new Map((fleet.data?.hosts ?? []).map((h) => [h.name, h])), [fleet.data]);
  const liveError = parseSelector(filter);

  return (
    <div>
      <section aria-label="Totals" className="mb-4 grid grid-cols-2 gap-2 sm:grid-cols-4 lg:grid-cols-8">
        {TOTALS.map((t) => (
          <div key={t.key} className="rounded-lg border border-zinc-200 bg-white px-3 py-2 shadow-sm">
            <div className={`text-2xl font-semibold tabular-nums ${t.colour}`} data-total={t.key}>
              {fleet.data ? totals[t.key] : '–'}
            </div>
            <div className="text-xs text-zinc-600">{t.label} devices</div>
          </div>
        ))}
        <Link href="/queue" className="rounded-lg border border-zinc-200 bg-white px-3 py-2 shadow-sm hover:bg-zinc-50">
          <div className="text-2xl font-semibold tabular-nums text-amber-700" data-total="queued">
            {queue.data ? queue.data.jobs.length : '–'}
          </div>
          <div className="text-xs text-zinc-600">queued jobs</div>
        </Link>
      </section>

      {models.length ? (
        <section aria-label="By model" className="mb-4 grid grid-cols-2 gap-2 sm:flex sm:flex-wrap">
          {models.map((m) => (
            <div key={m.model} className="rounded sm:min-w-44 border border-zinc-200 bg-white px-3 py-1.5 text-sm shadow-sm">
              <div className="font-medium">{m.model}</div>
              <div className="mt-1 flex h-1.5 overflow-hidden rounded bg-zinc-200" aria-hidden>
                <div className="bg-sky-500" style={{ width: `${(100 * m.used) / m.total}%` }} />
                <div className="bg-sky-200" style={{ width: `${(100 * m.reserved) / m.total}%` }} />
                <div className="bg-emerald-400" style={{ width: `${(100 * m.free) / m.total}%` }} />
              </div>
              <div className="mt-0.5 text-xs text-zinc-600">
                {m.used} used{m.reserved ? ` · ${m.reserved} reserved` : ''} · {m.free} free{m.unavailable ? ` · ${m.unavailable} unavailable` : ''} · {m.total}{' '}
                in all
              </div>
            </div>
          ))}
        </section>
      ) : null}

      <div className="mb-3 flex flex-wrap items-start gap-2">
        <div className="min-w-64 flex-1">
          <label htmlFor="fleet-filter" className="sr-only">
            Filter devices by selector
          </label>
          <input
            id="fleet-filter"
            value={filter}
            onChange={(e) => setFilter(e.target.value)}
            placeholder={`filter: ${FLEET_FILTER_EXAMPLE} (the CLI's selector syntax)`}
            spellCheck={false}
            autoComplete="off"
            aria-invalid={!liveError.ok}
            aria-describedby="fleet-filter-help"
            className={`w-full rounded border px-2 py-1.5 font-mono text-sm focus:outline-none focus-visible:ring-2 ${liveError.ok ? 'border-zinc-300 focus-visible:ring-sky-500' : 'border-red-400 focus-visible:ring-red-400'}`}
          />
          <p id="fleet-filter-help" className={`mt-1 text-xs ${liveError.ok ? 'text-zinc-500' : 'text-red-700'}`} role={liveError.ok ? undefined : 'alert'}>
            {liveError.ok
              ? fleet.data
                ? `${shown.length} of ${fleet.data.devices.length} devices on ${groups.length} host${groups.length === 1 ? '' : 's'}`
                : ' '
              : liveError.error.message}
          </p>
        </div>
        <OpenTerminalButton
          select={liveError.ok ? filter.trim() : undefined}
          disabled={!liveError.ok}
          none={liveError.ok ? noTerminalOnAny(shown) : null}
          label="Open a terminal on any device matching the filter"
        />
      </div>

      <ErrorBox error={fleet.error} />
      {fleet.isPending ? <Loading what="the fleet" /> : null}
      {fleet.data && fleet.data.devices.length === 0 ? (
        <Empty>
          No hosts yet. Register one with <code className="font-mono">rc admin host add &lt;name&gt;</code> and start its worker (docs/operators.md).
        </Empty>
      ) : null}
      {fleet.data && fleet.data.devices.length > 0 && shown.length === 0 ? (
        <Empty action={<Button onClick={() => setFilter('')}>Clear the filter</Button>}>
          No device matches <code className="font-mono">{deferred.trim()}</code>; <code className="font-mono">rc devices</code> lists every device with its
          labels.
        </Empty>
      ) : null}
      {/* data-filtered: the filter the list below shows, for measuring (scripts/bench-dashboard.mjs). */}
      <div data-filtered={deferred}>
        <HostList groups={groups} hosts={hostRows} />
      </div>
    </div>
  );
}

/** Memoised: a keystroke in the filter re-renders the list once, when its deferred result is ready, not also at the keystroke. */
const HostList = memo(function HostList({ groups, hosts }: { groups: HostGroup[]; hosts: Map<string, HostRow> }) {
  const virtual = useWindowVirtualizer({ count: groups.length, estimateSize: (i) => 52 + 37 * groups[i]!.devices.length, overscan: 3 });
  const items = virtual.getVirtualItems();
  const visible = items.map((i) => groups[i.index]!.name);
  const samples = useQuery({
    queryKey: keys.samples(visible.join(','), '10m'),
    queryFn: () => call('GET /api/samples', { query: { hosts: visible.join(','), window: '10m' } }),
    enabled: visible.length > 0,
    placeholderData: keepPreviousData,
  });
  const byDevice = useMemo(() => new Map((samples.data?.samples ?? []).map((s) => [s.device, s])), [samples.data]);
  return (
    <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
      {items.map((item) => {
        const g = groups[item.index]!;
        return (
          <div
            key={g.name}
            data-index={item.index}
            ref={virtual.measureElement}
            style={{ position: 'absolute', top: 0, left: 0, width: '100%', transform: `translateY(${item.start - virtual.options.scrollMargin}px)` }}
          >
            <HostCard group={g} host={hosts.get(g.name)} samples={byDevice} />
          </div>
        );
      })}
    </div>
  );
});

const HostCard = memo(function HostCard({ group, host, samples }: { group: HostGroup; host: HostRow | undefined; samples: Map<string, DeviceSamples> }) {
  const simulated = group.devices.some((d) => d.labels.simulated === 'true');
  return (
    <section aria-label={`host ${group.name}`} data-host={group.name} className="mb-3 rounded-lg border border-zinc-200 bg-white shadow-sm">
      <header className="flex flex-wrap items-center gap-x-3 gap-y-1 border-b border-zinc-100 px-3 py-2">
        <Link href={`/hosts/${encodeURIComponent(group.name)}`} className="font-semibold hover:underline">
          {group.name}
        </Link>
        <HostStatus host={host} />
        {simulated ? <span className="rounded bg-amber-50 px-1.5 text-xs text-amber-800 ring-1 ring-amber-200">simulated</span> : null}
        <span className="text-xs text-zinc-500">
          {group.devices.length} device{group.devices.length === 1 ? '' : 's'}
          {host?.workerVersion ? ` · worker ${host.workerVersion}` : ''}
        </span>
      </header>
      {/* Fixed columns: every host's devices line up under the others'. */}
      <table className="w-full table-fixed text-sm">
        <colgroup>
          <col className="w-14 sm:w-20" />
          <col className="w-20 sm:w-24" />
          <col />
          <col className="hidden w-28 sm:table-column" />
          <col className="hidden w-24 sm:table-column" />
          <col className="hidden w-80 md:table-column" />
          <col className="w-24 sm:w-28" />
        </colgroup>
        {/* Each column says what it is: the state's badge, the model, and above all the two sparklines and their numbers. */}
        <thead className="border-b border-zinc-100 text-left text-xs font-medium text-zinc-500">
          <tr>
            <th scope="col" className="px-2 py-1 font-medium sm:px-3">
              Device
            </th>
            <th scope="col" className="px-2 font-medium">
              State
            </th>
            <th scope="col" className="px-2 font-medium">
              Holder
            </th>
            <th scope="col" className="hidden px-2 font-medium sm:table-cell">
              Model
            </th>
            <th scope="col" className="hidden px-2 font-medium sm:table-cell">
              Memory
            </th>
            <th scope="col" className="hidden px-2 font-medium md:table-cell">
              <span className="sr-only">Utilisation and memory, last 10 minutes: </span>
              <span aria-hidden className="inline-flex gap-1.5">
                <span className="w-[7.625rem]">GPU util · 10 min</span>
                <span>memory used · 10 min</span>
              </span>
            </th>
            <th scope="col" className="px-2 text-right font-medium">
              <span className="sr-only">Terminal</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {group.devices.map((d) => (
            <DeviceLine key={d.name} d={d} samples={samples.get(d.name)} />
          ))}
        </tbody>
      </table>
    </section>
  );
});

function HostStatus({ host }: { host: HostRow | undefined }) {
  if (!host) return null;
  const colour = host.status === 'online' ? 'text-emerald-700' : host.status === 'away' ? 'text-amber-700' : 'text-zinc-500';
  return (
    <span className={`text-xs ${colour}`}>
      {host.status}
      {host.status !== 'online' && host.lastSeenAt ? (
        <>
          {' '}
          · last seen <Ago at={host.lastSeenAt} />
        </>
      ) : null}
      {host.off ? (
        <span
          className="ml-2 rounded bg-amber-100 px-1.5 font-medium text-amber-900 ring-1 ring-amber-300"
          title={`turned off by ${host.off.by}${host.off.reason ? `: ${host.off.reason}` : ''}`}
        >
          off{host.off.reason ? ` · ${host.off.reason}` : ''}
        </span>
      ) : null}
    </span>
  );
}

/**
 * Utilisation and memory: the last 10 minutes as sparklines, the newest sample as numbers (exact values on hover).
 * From the samples when there are any: they follow every heartbeat, where the fleet's `gpu` may predate the first
 * (a page opened before a new host's first sample would otherwise say "no GPU sample" until the host next changes).
 */
function GpuNow({ d, gpu, samples }: { d: DeviceSummary; gpu: GpuView | null; samples: DeviceSamples | undefined }) {
  const util = samples?.utilPct.at(-1) ?? gpu?.utilPct ?? null;
  const used = samples?.memUsedMiB.at(-1) ?? gpu?.memUsedMiB ?? 0;
  const total = samples?.memTotalMiB || gpu?.memTotalMiB || 0;
  const memPct = samples ? samples.memUsedMiB.map((m) => (total ? (100 * m) / total : null)) : [total ? (100 * used) / total : null];
  return (
    <span className="inline-flex items-center gap-1.5 text-xs tabular-nums text-zinc-600">
      <Sparkline values={samples?.utilPct ?? [util]} label={`utilisation of ${d.name}, now ${util ?? 'n/a'}%`} />
      <span className="w-9" title={`utilisation ${util ?? 'n/a'}%`}>
        {util === null ? '–' : Math.round(util)}%
      </span>
      <Sparkline values={memPct} label={`memory of ${d.name}, now ${used} of ${total} MiB`} stroke="stroke-violet-600" />
      <span title={`${used} of ${total} MiB`}>{memPairText(used, total)}</span>
    </span>
  );
}

function DeviceLine({ d, samples }: { d: DeviceSummary; samples: DeviceSamples | undefined }) {
  const state = shownState(d);
  return (
    <tr data-device={d.name} data-state={state} className="border-t border-zinc-100 first:border-t-0">
      <td className="px-2 py-1.5 font-mono text-xs sm:px-3">
        <Link href={`/devices/${encodeURIComponent(d.name)}`} className="hover:underline">
          gpu{d.index}
        </Link>
      </td>
      <td className="px-2">
        <DeviceBadge state={state} hostOff={d.hostOff} title={d.reservedFor ? reservedText(d.reservedFor) : undefined} />
      </td>
      <td className="truncate px-2 text-xs">
        {d.holder ? (
          <Link href={`/jobs/${encodeURIComponent(d.holder.jobId)}`} className="hover:underline" title={`job ${d.holder.jobId} since ${d.holder.since}`}>
            {d.holder.submitter} · <span className="font-mono">{d.holder.jobId}</span>
            {/* Unknown (null) on a GPU means no sample since the lease began yet: say nothing rather than "no GPU signal", which is a CPU slot's. */}
            {d.holder.idleS !== undefined && (d.holder.idleS !== null || d.gpu === null) ? (
              <span className={`ml-1 ${d.holder.idleS !== null && d.holder.idleS >= 60 ? 'text-amber-700' : 'text-zinc-500'}`} data-idle>
                · {idleText(d.holder.idleS, formatDuration)}
              </span>
            ) : null}
          </Link>
        ) : d.reservedFor ? (
          <ReservedForLink r={d.reservedFor} />
        ) : d.unhealthy ? (
          <span className="text-red-700" title={d.unhealthy.reason}>
            {d.unhealthy.reason}
          </span>
        ) : (
          <span className="text-zinc-400">–</span>
        )}
      </td>
      <td className="hidden px-2 text-xs sm:table-cell">{d.labels.gpu_model ?? '–'}</td>
      <td className="hidden px-2 text-xs tabular-nums sm:table-cell" title={d.labels.vram ? `${d.labels.vram} bytes` : undefined}>
        {vramText(d.labels.vram)}
      </td>
      <td className="hidden px-2 md:table-cell">
        {d.gpu || samples?.at.length ? <GpuNow d={d} gpu={d.gpu} samples={samples} /> : <span className="text-xs text-zinc-400">no GPU sample</span>}
      </td>
      <td className="px-2 py-0.5 text-right">
        <OpenTerminalButton
          device={d.name}
          none={noTerminal(d.labels)}
          disabled={d.hostOff || (state !== 'free' && state !== 'busy' && state !== 'reserved' && state !== 'held')}
        />
      </td>
    </tr>
  );
}
