'use client';
// One device in full: what rc describe shows, its GPU over time, the host's
// sheet and its own note, its recent jobs, and its quarantine.
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { call } from '../api-client';
import { shownState } from '../fleet/totals';
import { memPairText } from '../format';
import { JobsTable } from '../jobs/jobs-table';
import { OpenTerminalButton } from '../open-terminal';
import { noTerminal } from '../../core/terminal-offer';
import { keys } from '../query-keys';
import { SheetPanel } from '../sheet-panel';
import { reservedText, reservedWhy } from '../../core/reserved';
import { Ago, Card, DeviceBadge, ErrorBox, Field, Loading, PageTitle, ReservedForLink } from '../ui';
import { GpuHistory } from './gpu-history';
import { LabelsTable } from './labels-table';
import { QuarantinePanel } from './quarantine-panel';
import { isNotFound, NotFound } from '../not-found';

export function DeviceView({ name }: { name: string }) {
  const q = useQuery({ queryKey: keys.device(name), queryFn: () => call('GET /api/devices/:name', { name }) });
  // Gone since the page was served (its server side answers 404 for an unknown one).
  if (isNotFound(q.error)) return <NotFound />;
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what={name} />;
  const { device, sheet, note, recentJobs } = q.data;
  const state = shownState(device);
  return (
    <div>
      <p className="mb-1 text-sm">
        <Link href={`/hosts/${encodeURIComponent(device.hostName)}`} className="text-sky-800 hover:underline">
          ← {device.hostName}
        </Link>
      </p>
      <div className="flex flex-wrap items-start justify-between gap-2">
        <PageTitle sub={device.labels.gpu_model ? `${device.labels.gpu_model}${device.uuid ? ` · ${device.uuid}` : ''}` : undefined}>
          <span className="font-mono">{device.name}</span>{' '}
          <DeviceBadge state={state} hostOff={device.hostOff} title={device.reservedFor ? reservedText(device.reservedFor) : undefined} />
        </PageTitle>
        <OpenTerminalButton
          device={device.name}
          none={noTerminal(device.labels)}
          disabled={device.hostOff || (state !== 'free' && state !== 'busy' && state !== 'reserved' && state !== 'held')}
        />
      </div>
      <QuarantinePanel device={device} />
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <Card title="State">
          <dl>
            <Field term="State">
              <span data-testid="device-state">{state}</span> (host {device.hostStatus})
            </Field>
            <Field term="Holder">
              {device.holder ? (
                <Link href={`/jobs/${encodeURIComponent(device.holder.jobId)}`} className="text-sky-800 hover:underline">
                  {device.holder.submitter} · job {device.holder.jobId} ({device.holder.kind}) since <Ago at={device.holder.since} />
                </Link>
              ) : (
                'nobody'
              )}
            </Field>
            {device.reservedFor ? (
              <Field term="Reserved">
                <span data-testid="device-reserved" className="text-sky-800">
                  <ReservedForLink r={device.reservedFor} />
                  <span className="block text-xs text-zinc-600">{reservedWhy(device.reservedFor)}</span>
                </span>
              </Field>
            ) : null}
            <Field term="GPU now">
              {device.gpu ? (
                <span title={`sampled ${device.gpu.at}`}>
                  {device.gpu.utilPct ?? 'n/a'}% busy, {memPairText(device.gpu.memUsedMiB, device.gpu.memTotalMiB)} used (<Ago at={device.gpu.at} />)
                </span>
              ) : (
                'no sample yet'
              )}
            </Field>
          </dl>
        </Card>
        <Card title="GPU over time">
          <GpuHistory device={device.name} />
        </Card>
      </div>
      <Card title="Labels">
        <LabelsTable labels={device.labelDetails} />
      </Card>
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <SheetPanel title={`Usage sheet of ${device.hostName}`} what="usage sheet" sheet={sheet} target={{ host: device.hostName }} />
        <SheetPanel title="Device note" what="device note" sheet={note} target={{ device: device.name }} />
      </div>
      <Card title="Recent jobs">
        <JobsTable jobs={recentJobs} empty="No job has run here yet." />
      </Card>
    </div>
  );
}
