'use client';
// One job: its state, exit code, cause and reason, timings, command and
// limits, live output, and Kill for those allowed.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import Link from 'next/link';
import { machineShapeText, placementText } from '../../core/machine-text';
import type { OutputTruncatedReason } from '../../core/output-truncated';
import { mayStop, stopAs } from '../../core/web-submitter';
import type { JobView as Job } from '../../protocol/wire';
import { call } from '../api-client';
import { commandText, durationText, jobDuration } from '../format';
import { useMe, useNow } from '../providers';
import { keys } from '../query-keys';
import { Ago, Button, Card, ErrorBox, Field, JobBadge, Loading, PageTitle } from '../ui';
import { isNotFound, NotFound } from '../not-found';

const JobOutput = dynamic(() => import('./job-output'), { ssr: false, loading: () => <div className="h-96 rounded bg-[#18181b]" /> });

export function JobPage({ id }: { id: string }) {
  const q = useQuery({ queryKey: keys.job(id), queryFn: () => call('GET /api/jobs/:id', { id }).then((r) => r.job) });
  const now = useNow();
  // Gone since the page was served (its server side answers 404 for an unknown one).
  if (isNotFound(q.error)) return <NotFound />;
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what={`job ${id}`} />;
  const j = q.data;
  const active = j.state === 'queued' || j.state === 'running';
  // Where it may run and what it asks of a provider machine (rc run --cloud-only …), as rc describe says it.
  const placement = placementText(j);
  return (
    <div>
      <div className="flex flex-wrap items-start justify-between gap-2">
        <PageTitle sub={j.name ? `named ${j.name}` : undefined}>
          Job <span className="font-mono">{j.id}</span> <JobBadge state={j.state} />
        </PageTitle>
        <div className="flex gap-2">
          {j.kind === 'tty' && active ? (
            <Link href={`/terminal?job=${encodeURIComponent(j.id)}`} className="rounded px-2.5 py-1 text-sm font-medium ring-1 ring-zinc-300 hover:bg-zinc-50">
              Open its terminal
            </Link>
          ) : null}
          {active ? <StopButton job={j} /> : null}
        </div>
      </div>
      <div className="grid gap-4 lg:grid-cols-2">
        <Card title="What">
          <dl>
            <Field term="Kind">{j.kind}</Field>
            {j.comment ? <Field term="Comment">{j.comment}</Field> : null}
            <Field term="Command">
              <code className="font-mono text-xs">{j.kind === 'hold' ? '(a hold: no command)' : commandText(j.argv)}</code>
            </Field>
            <Field term="Submitter">{j.submitter}</Field>
            <Field term="Asked for">
              {j.device ? `device ${j.device}` : `selector ${j.selector || '(any)'}`}
              {j.gpuChoices ? `, --gpu ${j.gpuChoices}` : j.gpus > 1 ? `, ${j.gpus} GPUs` : ''}
              {j.priority ? `, priority ${j.priority}` : ''}
            </Field>
            <Field term="Runs on">
              {j.devices?.length
                ? j.devices.map((d) => (
                    <Link key={d} href={`/devices/${encodeURIComponent(d)}`} className="mr-2 font-mono text-xs text-sky-800 hover:underline">
                      {d}
                    </Link>
                  ))
                : '–'}
            </Field>
            {placement ? (
              <Field term="Placement">
                <span data-placement>{placement}</span>
              </Field>
            ) : null}
            {j.ranOn ? (
              <Field term="Machine">
                <span data-ran-on>
                  <Link href="/machines" className="font-mono text-xs text-sky-800 hover:underline">
                    {j.ranOn.id}
                  </Link>{' '}
                  ({machineShapeText(j.ranOn)}), now {j.ranOn.state}
                  {j.ranOn.terminatedWhy ? ` (${j.ranOn.terminatedWhy})` : ''}
                </span>
              </Field>
            ) : null}
            {j.cwd ? <Field term="Directory">{j.cwd}</Field> : null}
            {j.envKeys.length ? <Field term="Environment">{j.envKeys.join(', ')} (values not shown)</Field> : null}
            <Field term="Restarts">
              {[
                j.restarts ? `up to ${j.restarts} when its host is lost` : 'none',
                j.retries
                  ? `retries: ${j.retried} of ${j.retries} used after a non-zero exit${j.retryDelayS ? ` (${durationText(j.retryDelayS)} apart)` : ''}`
                  : null,
                j.preemptible ? `preemptible${j.retryOnPreempt ? ', queued again when preempted' : ''}` : null,
              ]
                .filter(Boolean)
                .join('; ')}
            </Field>
            {j.after?.length ? (
              <Field term="Runs after">
                <span data-after>
                  {j.after.map((d, i) => (
                    <span key={d.id}>
                      {i ? ', ' : ''}
                      <Link href={`/jobs/${encodeURIComponent(d.id)}`} className="font-mono text-sky-800 hover:underline">
                        {d.id}
                      </Link>{' '}
                      ({d.state}
                      {d.exitCode !== null ? `, exit ${d.exitCode}` : ''}){d.any ? ' any end' : ''}
                    </span>
                  ))}
                </span>
              </Field>
            ) : null}
            <Field term="Limits">
              {[
                j.maxRuntimeS ? `max runtime ${durationText(j.maxRuntimeS)}` : null,
                j.idleTimeoutS ? `idle timeout ${durationText(j.idleTimeoutS)}` : null,
                j.waitTimeoutS ? `wait at most ${durationText(j.waitTimeoutS)}` : null,
              ]
                .filter(Boolean)
                .join(', ') || 'none'}
            </Field>
          </dl>
        </Card>
        <Card title="Timings and outcome">
          <dl>
            <Field term="Submitted">
              <Ago at={j.createdAt} />
            </Field>
            <Field term="Started">{j.startedAt ? <Ago at={j.startedAt} /> : 'not yet'}</Field>
            <Field term="Ended">{j.endedAt ? <Ago at={j.endedAt} /> : '–'}</Field>
            <Field term="Waited">{durationText(((j.startedAt ? Date.parse(j.startedAt) : now) - Date.parse(j.createdAt)) / 1000)}</Field>
            <Field term="Ran for">{jobDuration(j.startedAt, j.endedAt, now)}</Field>
            {j.expiresAt ? (
              <Field term="Hold ends">
                <Ago at={j.expiresAt} />
              </Field>
            ) : null}
            <Field term="Exit code">{j.exitCode ?? '–'}</Field>
            <Field term="Cause">{j.cause ?? '–'}</Field>
            <Field term="Reason">{j.reason ?? '–'}</Field>
          </dl>
        </Card>
      </div>
      {j.attempts?.length ? <Attempts job={j} /> : null}
      {j.kind === 'run' ? (
        <Card title="Output">
          {j.outputTruncated ? (
            <p className="mb-2 rounded bg-amber-50 px-2 py-1 text-xs text-amber-900" data-truncated={j.outputTruncatedReason ?? 'output_limit'}>
              {TRUNCATED[j.outputTruncatedReason ?? 'output_limit']}
            </p>
          ) : null}
          <JobOutput jobId={j.id} />
        </Card>
      ) : j.kind === 'tty' ? (
        <p className="text-sm text-zinc-500">A terminal's output is not stored.</p>
      ) : null}
    </div>
  );
}

/** Why the output below is not all of it (core/output-truncated.ts's reasons). */
const TRUNCATED: Record<OutputTruncatedReason, string> = {
  output_limit: 'Stored output reached its bound: later output was streamed live but not kept.',
  disk_full:
    "Disk full: part of this output was lost. The controller's database was out of disk space for longer than the controller and the worker could hold the output meanwhile; what is below was stored.",
  store_behind:
    'Part of this output was lost: the controller could not take it (its database away or behind, or the worker cut off from it) for longer than the worker could hold it; what is below was stored.',
};

/** A job run more than once: where each earlier attempt ran and why it ended; the current one last. */
function Attempts({ job: j }: { job: Job }) {
  return (
    <Card title={`Attempts (this is attempt ${j.attempt})`}>
      <table className="w-full text-left text-sm" data-attempts>
        <thead className="text-xs text-zinc-500">
          <tr>
            <th className="py-1 pr-3 font-medium">#</th>
            <th className="pr-3 font-medium">Ran on</th>
            <th className="pr-3 font-medium">Ended</th>
            <th className="pr-3 font-medium">How</th>
            <th className="pr-3 font-medium">Why</th>
          </tr>
        </thead>
        <tbody>
          {(j.attempts ?? []).map((a) => (
            <tr key={a.attempt} className="border-t border-zinc-100">
              <td className="py-1.5 pr-3 tabular-nums">{a.attempt}</td>
              <td className="pr-3 font-mono text-xs">{a.devices?.join(', ') ?? a.host ?? '–'}</td>
              <td className="pr-3 text-xs text-zinc-600">
                <Ago at={a.endedAt} />
              </td>
              <td className="pr-3">
                <JobBadge state={a.state} />
                {a.exitCode !== null ? <span className="ml-1 text-xs text-zinc-500">exit {a.exitCode}</span> : null}
              </td>
              <td className="pr-3 text-xs">{a.reason ?? a.cause}</td>
            </tr>
          ))}
          <tr className="border-t border-zinc-100">
            <td className="py-1.5 pr-3 tabular-nums">{j.attempt}</td>
            <td className="pr-3 font-mono text-xs">{j.devices?.join(', ') ?? '–'}</td>
            <td className="pr-3 text-xs text-zinc-600">{j.endedAt ? <Ago at={j.endedAt} /> : '–'}</td>
            <td className="pr-3">
              <JobBadge state={j.state} />
              {j.exitCode !== null ? <span className="ml-1 text-xs text-zinc-500">exit {j.exitCode}</span> : null}
            </td>
            <td className="pr-3 text-xs">
              {j.state === 'queued'
                ? j.waiting === 'retry'
                  ? 'waits out its --retry-delay, then runs again ahead of the others of its priority'
                  : 'queued again, ahead of the others of its priority'
                : (j.reason ?? j.cause ?? '')}
            </td>
          </tr>
        </tbody>
      </table>
    </Card>
  );
}

/** Kill (or, for a hold, Release), shown to those the controller lets stop it. */
export function StopButton({ job }: { job: Job }) {
  const me = useMe();
  const client = useQueryClient();
  const stop = useMutation({
    mutationFn: () => {
      if (!me) throw new Error('not signed in');
      const submitter = stopAs(me, job.submitter);
      return job.kind === 'hold'
        ? call('POST /api/holds/:id/release', { id: job.id, body: { submitter } })
        : call('POST /api/jobs/:id/kill', { id: job.id, body: { submitter } });
    },
    onSuccess: () => void client.invalidateQueries(),
  });
  if (!me || !mayStop(me, job.submitter)) return null;
  const verb = job.kind === 'hold' ? 'Release' : 'Kill';
  return (
    <span className="inline-flex flex-col items-end">
      <Button
        kind="danger"
        disabled={stop.isPending}
        aria-label={`${verb} job ${job.id}`}
        onClick={() => {
          if (window.confirm(`${verb} job ${job.id} of ${job.submitter}?`)) stop.mutate();
        }}
      >
        {verb}
      </Button>
      <ErrorBox error={stop.error} />
    </span>
  );
}
