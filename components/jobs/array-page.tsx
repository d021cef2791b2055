'use client';
// One array (rc run --array): its spec, its cap, its tasks counted by state,
// and every task with a link to its job (GET /api/jobs?array=, by index).
import { useQuery } from '@tanstack/react-query';
import type { ArrayView } from '../../protocol/wire';
import { call } from '../api-client';
import { commandText } from '../format';
import { keys } from '../query-keys';
import { Ago, ErrorBox, Loading, PageTitle } from '../ui';
import { JobsTable } from './jobs-table';
import { isNotFound, NotFound } from '../not-found';

/** The most tasks listed here (the API's largest page); rc jobs --array pages further. */
const SHOWN = 1000;

export function ArrayPage({ id }: { id: string }) {
  const a = useQuery({ queryKey: keys.array(id), queryFn: () => call('GET /api/arrays/:id', { id }).then((r) => r.array), refetchInterval: 3000 });
  const tasks = useQuery({
    queryKey: keys.jobs({ array: id }),
    queryFn: () => call('GET /api/jobs', { query: { array: id, limit: String(SHOWN) } }).then((r) => r.jobs),
    refetchInterval: 3000,
  });
  if (isNotFound(a.error)) return <NotFound />;
  return (
    <div>
      <PageTitle sub={a.data ? <ArraySummary a={a.data} /> : null}>
        Array <span className="font-mono">{id}</span>
        {a.data?.name ? <span className="ml-2 text-base font-normal text-zinc-500">({a.data.name})</span> : null}
      </PageTitle>
      <ErrorBox error={a.error ?? tasks.error} />
      {a.data ? <Counts a={a.data} /> : <Loading what="the array" />}
      {tasks.data ? (
        <>
          <JobsTable jobs={tasks.data} empty="No task." grouped={false} />
          {a.data && a.data.size > tasks.data.length ? (
            <p className="mt-2 text-xs text-zinc-500">
              The first {tasks.data.length} of {a.data.size} tasks; rc jobs --array {id} lists the others.
            </p>
          ) : null}
        </>
      ) : (
        <Loading what="its tasks" />
      )}
    </div>
  );
}

function ArraySummary({ a }: { a: ArrayView }) {
  return (
    <>
      <span className="font-mono">{a.spec}</span>: {a.size} task{a.size === 1 ? '' : 's'}
      {a.maxRunning === null ? '' : `, at most ${a.maxRunning} at once`}, by {a.submitter}, submitted <Ago at={a.createdAt} />;{' '}
      <span className="font-mono">{commandText(a.argv)}</span>
    </>
  );
}

/** The tasks by state, as small figures (those with none left out). */
export function Counts({ a }: { a: ArrayView }) {
  const c = a.counts;
  const parts: [string, number, string][] = [
    ['running', c.running, 'text-sky-800'],
    ['queued', c.queued, 'text-zinc-700'],
    ['waiting', c.waiting, 'text-zinc-500'],
    ['succeeded', c.succeeded, 'text-emerald-800'],
    ['failed', c.failed, 'text-red-700'],
    ['killed', c.killed, 'text-orange-800'],
    ['cancelled', c.cancelled, 'text-zinc-500'],
    ['lost', c.lost, 'text-red-700'],
    ['preempted', c.preempted, 'text-orange-800'],
  ];
  return (
    <p data-array-counts className="mb-3 flex flex-wrap gap-3 text-sm">
      {parts
        .filter(([, n]) => n > 0)
        .map(([what, n, color]) => (
          <span key={what} className={color}>
            <span className="font-semibold tabular-nums">{n}</span> {what}
          </span>
        ))}
      <span className="text-zinc-500">{a.done ? 'every task has ended' : `${a.size - c.running - c.queued - c.waiting} of ${a.size} done`}</span>
    </p>
  );
}
