'use client';
// The queue in the order the scheduler will consider it, each job with its
// place and why it waits (its selector's --explain answer, counted).
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { call } from './api-client';
import { commandText } from './format';
import { StopButton } from './jobs/job-view';
import { keys } from './query-keys';
import { Ago, ErrorBox, Loading, PageTitle } from './ui';

export function QueueView() {
  const q = useQuery({ queryKey: keys.queue, queryFn: () => call('GET /api/queue') });
  return (
    <div>
      <PageTitle sub="Waiting jobs, in the order they will be considered: priority first, then submission.">Queue</PageTitle>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="the queue" /> : null}
      {q.data && q.data.jobs.length === 0 ? <p className="text-sm text-zinc-500">Nothing is waiting: every job got a device.</p> : null}
      <ol className="space-y-2">
        {q.data?.jobs.map((j) => (
          <li key={j.id} data-job={j.id} className="rounded-lg border border-zinc-200 bg-white p-3 shadow-sm">
            <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
              {/* A job that waits on other jobs or a retry delay has no place in line yet. */}
              <span
                className="w-10 text-lg font-semibold tabular-nums text-zinc-500"
                title={j.position === null ? 'not in line yet' : `${j.position} ahead of it`}
              >
                {j.position === null ? '–' : `#${j.position + 1}`}
              </span>
              <Link href={`/jobs/${encodeURIComponent(j.id)}`} className="font-mono text-sm text-sky-800 hover:underline">
                {j.id}
              </Link>
              {j.name ? <span className="text-sm text-zinc-500">({j.name})</span> : null}
              <span className="text-sm">{j.submitter}</span>
              <span className="font-mono text-xs text-zinc-600">{j.kind === 'hold' ? 'hold' : j.kind === 'tty' ? 'terminal' : commandText(j.argv)}</span>
              <span className="text-xs text-zinc-500">
                waiting since <Ago at={j.createdAt} />
              </span>
              <span className="ml-auto">
                <StopButton job={j} />
              </span>
            </div>
            <div className="mt-1 pl-13 text-sm text-zinc-800">
              <span className="font-mono text-xs text-zinc-500">
                {j.device ? `-d ${j.device}` : `--select '${j.selector || ''}'`}
                {j.gpuChoices ? ` --gpu ${j.gpuChoices}` : j.gpus > 1 ? ` --gpus ${j.gpus}` : ''}
                {j.priority ? ` --priority ${j.priority}` : ''}
              </span>{' '}
              <span data-why>{j.why.text}</span>
            </div>
            <div className="mt-1 flex flex-wrap gap-3 pl-13 text-xs text-zinc-600">
              <span>{j.why.matching} matching</span>
              <span>{j.why.free} free</span>
              <span>{j.why.busy} busy</span>
              {j.why.unhealthy ? <span className="text-red-700">{j.why.unhealthy} quarantined</span> : null}
              {j.why.offline ? <span>{j.why.offline} offline</span> : null}
              {j.why.reserved?.length ? <span className="text-violet-700">reserving {j.why.reserved.join(', ')}</span> : null}
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}
