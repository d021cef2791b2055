'use client';
// Every job, newest first, filtered by state, device, submitter and name,
// paged back a hundred at a time (the API's `before`), so tens of thousands
// of jobs cost one page each.
import { useInfiniteQuery } from '@tanstack/react-query';
import { useDeferredValue, useState } from 'react';
import { JOB_STATES } from '../../core/job-state';
import type { JobsQuery } from '../../protocol/wire';
import { call } from '../api-client';
import { keys } from '../query-keys';
import { Button, Empty, ErrorBox, filtersText, Loading, PageTitle } from '../ui';
import { JobsTable } from './jobs-table';

const PAGE = 100;

export interface JobFilters {
  state: string;
  device: string;
  submitter: string;
  name: string;
}

export function JobsList({ initial }: { initial: JobFilters }) {
  const [f, setF] = useState(initial);
  const filters = useDeferredValue(f);
  const q = useInfiniteQuery({
    queryKey: keys.jobs({ ...filters }),
    queryFn: ({ pageParam }) => {
      const query: JobsQuery = { limit: String(PAGE) };
      for (const [k, v] of Object.entries(filters)) if (v.trim()) query[k as keyof JobFilters] = v.trim();
      if (pageParam) query.before = pageParam;
      return call('GET /api/jobs', { query }).then((r) => r.jobs);
    },
    initialPageParam: '',
    getNextPageParam: (last) => (last.length < PAGE ? undefined : last.at(-1)!.id),
  });
  const jobs = q.data?.pages.flat() ?? [];
  const put = (next: JobFilters) => {
    setF(next);
    const url = new URL(window.location.href);
    for (const [k, v] of Object.entries(next)) {
      if (v) url.searchParams.set(k, v);
      else url.searchParams.delete(k);
    }
    window.history.replaceState(null, '', url);
  };
  const set = (k: keyof JobFilters) => (e: { target: { value: string } }) => put({ ...f, [k]: e.target.value });
  const filtered = filtersText({ ...filters });
  return (
    <div>
      <PageTitle sub="Current and past jobs, newest first.">Jobs</PageTitle>
      <form className="mb-3 flex flex-wrap gap-2" onSubmit={(e) => e.preventDefault()} aria-label="Filter jobs">
        <label className="flex flex-col text-xs text-zinc-600">
          State
          <select value={f.state} onChange={set('state')} className="mt-0.5 rounded border border-zinc-300 bg-white px-2 py-1 text-sm">
            <option value="">any</option>
            <option value="queued,running">active</option>
            {JOB_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {(['device', 'submitter', 'name'] as const).map((k) => (
          <label key={k} className="flex flex-col text-xs text-zinc-600">
            {k[0]!.toUpperCase() + k.slice(1)}
            <input
              value={f[k]}
              onChange={set(k)}
              placeholder={k === 'device' ? 'host:gpu0' : k === 'submitter' ? 'alice' : 'train-7'}
              className="mt-0.5 rounded border border-zinc-300 px-2 py-1 font-mono text-sm"
            />
          </label>
        ))}
      </form>
      <ErrorBox error={q.error} />
      {q.isPending ? (
        <Loading what="jobs" />
      ) : jobs.length ? (
        <JobsTable jobs={jobs} />
      ) : filtered ? (
        <Empty action={<Button onClick={() => put({ state: '', device: '', submitter: '', name: '' })}>Clear the filters</Button>}>
          No job matches {filtered}.
        </Empty>
      ) : q.data ? (
        <Empty>
          No jobs yet: <code className="font-mono">rc run -- nvidia-smi</code> runs one on a free GPU.
        </Empty>
      ) : null}
      {q.hasNextPage ? (
        <div className="mt-3">
          <Button onClick={() => q.fetchNextPage()} disabled={q.isFetchingNextPage}>
            {q.isFetchingNextPage ? 'Loading…' : `Older jobs (${jobs.length} shown)`}
          </Button>
        </div>
      ) : null}
    </div>
  );
}
