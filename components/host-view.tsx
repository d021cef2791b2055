'use client';
// One host: its state, its usage sheet (rendered, editable by admins), its
// devices and their recent jobs.
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { call } from './api-client';
import { shownState } from './fleet/totals';
import { labelText, mibText, vramText } from './format';
import { JobsTable } from './jobs/jobs-table';
import { OpenTerminalButton } from './open-terminal';
import { noTerminal } from '../core/terminal-offer';
import { keys } from './query-keys';
import { HostServicePanel } from './host-service-panel';
import { SheetPanel } from './sheet-panel';
import { reservedText } from '../core/reserved';
import { Ago, Card, DeviceBadge, ErrorBox, Field, Loading, PageTitle, ReservedForLink } from './ui';
import { isNotFound, NotFound } from './not-found';

export function HostView({ name }: { name: string }) {
  const q = useQuery({ queryKey: keys.host(name), queryFn: () => call('GET /api/hosts/:name', { name }) });
  // Gone since the page was served (its server side answers 404 for an unknown one).
  if (isNotFound(q.error)) return <NotFound />;
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what={name} />;
  const { host, devices, sheet, recentJobs } = q.data;
  const hostLabels = devices[0]?.labelDetails.filter((l) => l.hostWide && l.effective) ?? [];
  return (
    <div>
      <p className="mb-1 text-sm">
        <Link href="/" className="text-sky-800 hover:underline">
          ← fleet
        </Link>
      </p>
      <PageTitle sub={`${devices.length} device${devices.length === 1 ? '' : 's'}`}>{host.name}</PageTitle>
      <HostServicePanel host={host} running={devices.filter((d) => d.holder !== null).length} />
      <div className="grid gap-4 lg:grid-cols-3">
        <Card title="Host">
          <dl>
            <Field term="Status">{host.removed ? 'removed' : host.off ? `${host.status}, off` : host.status}</Field>
            <Field term="Last seen">
              <Ago at={host.lastSeenAt} />
            </Field>
            <Field term="Worker">{host.workerVersion ?? '–'}</Field>
            {hostLabels.map((l) => (
              <Field key={l.key} term={l.key}>
                <span className="font-mono text-xs" title={l.value}>
                  {labelText(l.key, l.value)}
                </span>
              </Field>
            ))}
          </dl>
        </Card>
        <div className="lg:col-span-2">
          <SheetPanel title="Usage sheet" what="usage sheet" sheet={sheet} target={{ host: host.name }} />
        </div>
      </div>
      <Card title="Devices">
        <table className="w-full text-left text-sm">
          <thead className="text-xs text-zinc-500">
            <tr>
              <th className="py-1 pr-3 font-medium">Device</th>
              <th className="pr-3 font-medium">State</th>
              <th className="pr-3 font-medium">Holder</th>
              <th className="hidden pr-3 font-medium sm:table-cell">Model</th>
              <th className="hidden pr-3 font-medium sm:table-cell">Memory</th>
              <th className="hidden pr-3 font-medium md:table-cell">GPU now</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {devices.map((d) => (
              <tr key={d.name} data-device={d.name} className="border-t border-zinc-100">
                <td className="py-1.5 pr-3 font-mono text-xs">
                  <Link href={`/devices/${encodeURIComponent(d.name)}`} className="text-sky-800 hover:underline">
                    {d.name}
                  </Link>
                </td>
                <td className="pr-3">
                  <DeviceBadge state={shownState(d)} hostOff={d.hostOff} title={d.reservedFor ? reservedText(d.reservedFor) : undefined} />
                </td>
                <td className="pr-3 text-xs">
                  {d.holder ? (
                    <Link href={`/jobs/${encodeURIComponent(d.holder.jobId)}`} className="hover:underline">
                      {d.holder.submitter} · {d.holder.jobId}
                    </Link>
                  ) : d.reservedFor ? (
                    <ReservedForLink r={d.reservedFor} />
                  ) : (
                    (d.unhealthy?.reason ?? '–')
                  )}
                </td>
                <td className="hidden pr-3 text-xs sm:table-cell">{d.labels.gpu_model ?? '–'}</td>
                <td className="hidden pr-3 text-xs sm:table-cell">{vramText(d.labels.vram)}</td>
                <td className="hidden pr-3 text-xs tabular-nums md:table-cell">{d.gpu ? `${d.gpu.utilPct ?? '–'}% · ${mibText(d.gpu.memUsedMiB)}` : '–'}</td>
                <td className="py-1 text-right">
                  <OpenTerminalButton
                    device={d.name}
                    none={noTerminal(d.labels)}
                    disabled={d.hostOff || (d.state !== 'free' && d.state !== 'busy' && d.state !== 'reserved')}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Recent jobs">
        <JobsTable jobs={recentJobs} empty="No job has run on this host yet." />
      </Card>
    </div>
  );
}
