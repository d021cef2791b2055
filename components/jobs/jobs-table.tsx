'use client';
// Jobs as a table: the jobs page, and a host's or a device's recent jobs.
import Link from 'next/link';
import { useState } from 'react';
import type { JobState } from '../../core/job-state';
import type { JobView } from '../../protocol/wire';
import { attemptsText, commandText, jobDuration } from '../format';
import { useNow } from '../providers';
import { Ago, JobBadge } from '../ui';

/** The jobs as rows; with `grouped`, the tasks of an array that come together are one row (counts by state, expandable). */
export function JobsTable({ jobs, empty = 'No jobs.', grouped = true }: { jobs: readonly JobView[]; empty?: string; grouped?: boolean }) {
  const now = useNow(5000);
  if (!jobs.length) return <p className="text-sm text-zinc-500">{empty}</p>;
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm">
        <thead className="text-xs text-zinc-500">
          <tr>
            <th className="py-1 pr-3 font-medium">Job</th>
            <th className="pr-3 font-medium">State</th>
            <th className="pr-3 font-medium">Submitter</th>
            <th className="pr-3 font-medium">Command</th>
            <th className="hidden pr-3 font-medium md:table-cell">Devices</th>
            <th className="pr-3 font-medium">Submitted</th>
            <th className="hidden pr-3 font-medium sm:table-cell">Ran for</th>
          </tr>
        </thead>
        <tbody>
          {(grouped ? groups(jobs) : jobs.map((j) => [j])).map((g) =>
            g.length > 1 && g[0]!.array ? (
              <ArrayLine key={`${g[0]!.array.id}:${g[0]!.id}`} tasks={g} now={now} />
            ) : (
              <JobLine key={g[0]!.id} j={g[0]!} now={now} />
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Runs of jobs: the tasks of one array that come one after another together, every other job alone. */
function groups(jobs: readonly JobView[]): JobView[][] {
  const out: JobView[][] = [];
  for (const j of jobs) {
    const last = out.at(-1);
    if (last && j.array && last[0]?.array?.id === j.array.id) last.push(j);
    else out.push([j]);
  }
  return out;
}

const STATE_ORDER: JobState[] = ['running', 'queued', 'succeeded', 'failed', 'killed', 'cancelled', 'lost', 'preempted'];

/** An array's tasks as one row: the array (a link to its page), its tasks here by state; opened, a row per task. */
function ArrayLine({ tasks, now }: { tasks: readonly JobView[]; now: number }) {
  const [open, setOpen] = useState(false);
  const a = tasks[0]!.array!;
  const counts = new Map<JobState, number>();
  for (const t of tasks) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
  return (
    <>
      <tr data-array={a.id} className="border-t border-zinc-100 bg-zinc-50">
        <td className="py-1.5 pr-3 font-mono text-xs">
          <button
            type="button"
            onClick={() => setOpen(!open)}
            className="mr-1 text-zinc-500"
            aria-expanded={open}
            aria-label={open ? 'Hide its tasks' : 'Show its tasks'}
          >
            {open ? '▾' : '▸'}
          </button>
          <Link href={`/arrays/${encodeURIComponent(a.id)}`} className="text-sky-800 hover:underline">
            {a.id}
          </Link>
          <span className="ml-1 text-zinc-500">array, {tasks.length} tasks</span>
        </td>
        <td className="pr-3 text-xs">
          {STATE_ORDER.filter((s) => counts.get(s)).map((s) => (
            <span key={s} className="mr-2 whitespace-nowrap">
              <JobBadge state={s} /> <span className="tabular-nums">{counts.get(s)}</span>
            </span>
          ))}
        </td>
        <td className="max-w-40 truncate pr-3 text-xs" title={tasks[0]!.submitter}>
          {tasks[0]!.submitter}
        </td>
        <td className="max-w-72 truncate pr-3 font-mono text-xs" title={commandText(tasks[0]!.argv)}>
          {commandText(tasks[0]!.argv)}
        </td>
        <td className="hidden pr-3 md:table-cell" />
        <td className="pr-3 text-xs text-zinc-600">
          <Ago at={tasks.at(-1)!.createdAt} />
        </td>
        <td className="hidden pr-3 sm:table-cell" />
      </tr>
      {open ? tasks.map((t) => <JobLine key={t.id} j={t} now={now} />) : null}
    </>
  );
}

export function JobLine({ j, now }: { j: JobView; now: number }) {
  return (
    <tr data-job={j.id} className="border-t border-zinc-100">
      <td className="py-1.5 pr-3 font-mono text-xs">
        <Link href={`/jobs/${encodeURIComponent(j.id)}`} className="text-sky-800 hover:underline">
          {j.id}
        </Link>
        {j.name ? <span className="ml-1 text-zinc-500">({j.name})</span> : null}
        {j.array ? (
          <Link href={`/arrays/${encodeURIComponent(j.array.id)}`} className="ml-1 text-zinc-500 hover:underline">
            ({j.array.id}:{j.array.index})
          </Link>
        ) : null}
      </td>
      <td className="pr-3">
        <JobBadge state={j.state} />
        {j.exitCode !== null ? <span className="ml-1 text-xs text-zinc-500">exit {j.exitCode}</span> : null}
        {j.attempt > 1 ? (
          <span className="ml-1 text-xs text-orange-800" title={attemptsText(j)}>
            attempt {j.attempt}
          </span>
        ) : null}
        {j.preemptible ? <span className="ml-1 text-xs text-zinc-500">preemptible</span> : null}
      </td>
      <td className="max-w-40 truncate pr-3 text-xs" title={j.submitter}>
        {j.submitter}
      </td>
      <td className="max-w-72 truncate pr-3 font-mono text-xs" title={commandText(j.argv)}>
        {j.kind === 'hold' ? (
          <span className="text-violet-700">hold</span>
        ) : j.kind === 'tty' ? (
          <span className="text-zinc-500">terminal</span>
        ) : (
          commandText(j.argv)
        )}
      </td>
      <td className="hidden max-w-48 truncate pr-3 font-mono text-xs md:table-cell">
        {j.devices?.join(', ') ?? j.device ?? ([j.gpuChoices && `--gpu ${j.gpuChoices}`, j.selector].filter(Boolean).join(' ') || 'any')}
      </td>
      <td className="pr-3 text-xs text-zinc-600">
        <Ago at={j.createdAt} />
      </td>
      <td className="hidden pr-3 text-xs tabular-nums text-zinc-600 sm:table-cell">{jobDuration(j.startedAt, j.endedAt, now)}</td>
    </tr>
  );
}
