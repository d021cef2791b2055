'use client';
// The queue in the order the scheduler will consider it, each job with its
// place, why it waits (its selector's --explain answer, counted) and until
// when at the latest (core/until.ts).
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { call } from './api-client';
import { placeInLine } from '../core/queue-place';
import { localClock, untilText } from '../core/until-text';
import { commandText } from './format';
import { StopButton } from './jobs/job-view';
import { keys } from './query-keys';
import { Ago, Empty, ErrorBox, Loading, PageTitle } from './ui';
import type { QueueEntry } from '../protocol/wire';

/** The queue as cards: a job alone, or every task of one array at its first task's place. */
type Card = { kind: 'job'; job: QueueEntry } | { kind: 'array'; id: string; tasks: QueueEntry[] };

function cardsOf(jobs: readonly QueueEntry[]): Card[] {
  const cards: Card[] = [];
  const arrays = new Map<string, QueueEntry[]>();
  for (const j of jobs) {
    if (!j.array) {
      cards.push({ kind: 'job', job: j });
      continue;
    }
    const tasks = arrays.get(j.array.id);
    if (tasks) tasks.push(j);
    else {
      const group = [j];
      arrays.set(j.array.id, group);
      cards.push({ kind: 'array', id: j.array.id, tasks: group });
    }
  }
  return cards;
}

/** An array's queued tasks as one card: where the first stands, how many wait, a link to the array's page. */
function ArrayCard({ id, tasks }: { id: string; tasks: QueueEntry[] }) {
  const first = tasks[0]!;
  const indexes = tasks.map((t) => t.array!.index).sort((a, b) => a - b);
  // Tasks in line (a place in the queue) first; the others wait on the array's cap, their dependencies or a retry delay.
  const lead = tasks.find((t) => t.position !== null) ?? null;
  const waiting = tasks.filter((t) => t.position === null);
  return (
    <li data-array={id} className="rounded-lg border border-zinc-200 bg-white p-3 shadow-sm">
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
        <span
          className="w-10 text-lg font-semibold tabular-nums text-zinc-500"
          title={lead ? `${lead.position} ahead of its first task in line` : 'no task in line yet'}
        >
          {placeInLine(lead?.position ?? null) ?? '–'}
        </span>
        <Link href={`/arrays/${encodeURIComponent(id)}`} className="font-mono text-sm text-sky-800 hover:underline">
          {id}
        </Link>
        <span className="text-sm text-zinc-500">
          array: {tasks.length} task{tasks.length === 1 ? '' : 's'} queued (index {indexes[0]}
          {tasks.length > 1 ? `–${indexes.at(-1)}` : ''})
        </span>
        <span className="text-sm">{first.submitter}</span>
        <span className="font-mono text-xs text-zinc-600">{commandText(first.argv)}</span>
        <span className="text-xs text-zinc-500">
          waiting since <Ago at={first.createdAt} />
        </span>
      </div>
      {lead ? (
        <div className="mt-1 pl-13 text-sm text-zinc-800">
          <span className="text-xs text-zinc-500">its first task in line: </span>
          <span data-why>{lead.why.text}</span>
        </div>
      ) : null}
      {waiting.length ? (
        <div className="mt-1 pl-13 text-sm text-zinc-800">
          <span className="text-xs text-zinc-500">
            {waiting.length} task{waiting.length === 1 ? '' : 's'} not in line yet:{' '}
          </span>
          <span data-waits>{waiting[0]!.why.text}</span>
        </div>
      ) : null}
    </li>
  );
}

export function QueueView() {
  const q = useQuery({ queryKey: keys.queue, queryFn: () => call('GET /api/queue') });
  return (
    <div>
      <PageTitle sub="Waiting jobs, in the order they will be considered: priority first, then submission.">Queue</PageTitle>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="the queue" /> : null}
      {q.data && q.data.jobs.length === 0 ? (
        <Empty>
          Nothing is waiting: every job got a device. A job that cannot start at once waits here, with why (<code className="font-mono">rc queue</code>
          says the same).
        </Empty>
      ) : null}
      <ol className="space-y-2">
        {cardsOf(q.data?.jobs ?? []).map((c) =>
          c.kind === 'array' ? <ArrayCard key={c.id} id={c.id} tasks={c.tasks} /> : <JobCard key={c.job.id} j={c.job} />,
        )}
      </ol>
    </div>
  );
}

function JobCard({ j }: { j: QueueEntry }) {
  return (
    <li key={j.id} data-job={j.id} className="rounded-lg border border-zinc-200 bg-white p-3 shadow-sm">
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
        {/* A job that waits on other jobs, its array's cap or a retry delay has no place in line yet. */}
        <span
          data-place
          className="w-10 text-lg font-semibold tabular-nums text-zinc-500"
          title={j.position === null ? 'not in line yet' : `${j.position} ahead of it`}
        >
          {placeInLine(j.position) ?? '–'}
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
      {j.position === null ? null : (
        <div className="mt-1 pl-13 text-sm text-zinc-700" data-until>
          Until: {untilText(j.freesBy, j.gpus, Date.now(), localClock(Date.now()))}
        </div>
      )}
      <div className="mt-1 flex flex-wrap gap-3 pl-13 text-xs text-zinc-600">
        <span>{j.why.matching} matching</span>
        <span>{j.why.free} free</span>
        <span>{j.why.busy} busy</span>
        {j.why.unhealthy ? <span className="text-red-700">{j.why.unhealthy} quarantined</span> : null}
        {j.why.offline ? <span>{j.why.offline} offline</span> : null}
        {j.why.reserved?.length ? <span className="text-violet-700">reserving {j.why.reserved.join(', ')}</span> : null}
      </div>
    </li>
  );
}
