'use client';
// Jobs as a table: the jobs page, and a host's or a device's recent jobs.
import Link from 'next/link';
import type { JobView } from '../../protocol/wire';
import { attemptsText, commandText, jobDuration } from '../format';
import { useNow } from '../providers';
import { Ago, JobBadge } from '../ui';

export function JobsTable({ jobs, empty = 'No jobs.' }: { jobs: readonly JobView[]; empty?: string }) {
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
          {jobs.map((j) => (
            <JobLine key={j.id} j={j} now={now} />
          ))}
        </tbody>
      </table>
    </div>
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
