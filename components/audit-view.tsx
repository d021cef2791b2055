'use client';
// The audit log: who (token and submitter), what, to what, when and from
// where, newest first, filterable, paged back; relative times with the exact
// one on hover, and every entry the filters match exported as CSV or JSON.
import { auditWho } from '../core/audit-who';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useDeferredValue, useState } from 'react';
import type { AuditEntry, AuditQuery } from '../protocol/wire';
import { call } from './api-client';
import { auditCsv, auditJson } from './audit-export';
import { useIsAdmin } from './providers';
import { keys } from './query-keys';
import { Ago, Button, Empty, ErrorBox, filtersText, Loading, PageTitle } from './ui';

const PAGE = 100;
/** The route's largest page: an export reads the whole filtered log in pages of this many. */
const EXPORT_PAGE = 500;

type Filters = { actor: string; action: string; target: string };

function auditQuery(filters: Filters, limit: number, before: string): AuditQuery {
  const query: AuditQuery = { limit: String(limit) };
  for (const [k, v] of Object.entries(filters)) if (v.trim()) query[k as keyof Filters] = v.trim();
  if (before) query.before = before;
  return query;
}

/** Every entry the filters match, not only the pages on screen: paged back to the first. */
async function allEntries(filters: Filters): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for (let before = ''; ; ) {
    const page = (await call('GET /api/audit', { query: auditQuery(filters, EXPORT_PAGE, before) })).entries;
    out.push(...page);
    if (page.length < EXPORT_PAGE) return out;
    before = String(page.at(-1)!.id);
  }
}

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  // The click has handed the blob to the download; a moment later it may go.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function ExportButtons({ filters }: { filters: Filters }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const run = async (format: 'csv' | 'json') => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const entries = await allEntries(filters);
      const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '');
      if (format === 'csv') download(`rc-audit-${stamp}.csv`, 'text/csv;charset=utf-8', auditCsv(entries));
      else download(`rc-audit-${stamp}.json`, 'application/json', auditJson(entries));
      setDone(`${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} exported as ${format.toUpperCase()}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="flex flex-wrap items-end gap-2">
      <Button onClick={() => run('csv')} disabled={busy} title="Every entry the filters match, as CSV (times in UTC)">
        Export CSV
      </Button>
      <Button onClick={() => run('json')} disabled={busy} title="Every entry the filters match, as JSON">
        Export JSON
      </Button>
      <span role="status" className="text-xs text-zinc-500">
        {busy ? 'Exporting…' : done}
      </span>
      <ErrorBox error={error} />
    </div>
  );
}

export function AuditView() {
  const admin = useIsAdmin();
  const [f, setF] = useState<Filters>({ actor: '', action: '', target: '' });
  const filters = useDeferredValue(f);
  const q = useInfiniteQuery({
    queryKey: keys.audit(filters),
    queryFn: ({ pageParam }) => call('GET /api/audit', { query: auditQuery(filters, PAGE, pageParam) }).then((r) => r.entries),
    initialPageParam: '',
    getNextPageParam: (last) => (last.length < PAGE ? undefined : String(last.at(-1)!.id)),
  });
  const entries = q.data?.pages.flat() ?? [];
  return (
    <div>
      <PageTitle
        sub={
          admin
            ? 'Every change made through rc: kills, releases, sheets, quarantines, tokens, copies.'
            : "What this token did (kills, releases, extends, copies) and the controller's own acts on its jobs; an admin token reads the whole log."
        }
      >
        Audit log
      </PageTitle>
      <div className="mb-3 flex flex-wrap items-end justify-between gap-2">
        <form className="flex flex-wrap gap-2" onSubmit={(e) => e.preventDefault()} aria-label="Filter the audit log">
          {(
            [
              ['actor', 'Who', 'alice, admin:ops'],
              ['action', 'What', 'job.kill, sheet.write'],
              ['target', 'Target', 'gpubox-a:gpu0'],
            ] as const
          ).map(([k, label, hint]) => (
            <label key={k} className="flex flex-col text-xs text-zinc-600">
              {label}
              <input
                value={f[k]}
                onChange={(e) => setF((o) => ({ ...o, [k]: e.target.value }))}
                placeholder={hint}
                className="mt-0.5 rounded border border-zinc-300 px-2 py-1 font-mono text-sm"
              />
            </label>
          ))}
        </form>
        <ExportButtons filters={filters} />
      </div>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="the audit log" /> : null}
      {q.data && !entries.length ? (
        filtersText(filters) ? (
          <Empty action={<Button onClick={() => setF({ actor: '', action: '', target: '' })}>Clear the filters</Button>}>
            No entry matches {filtersText({ who: filters.actor, what: filters.action, target: filters.target })}.
          </Empty>
        ) : (
          <Empty>Nothing in the audit log yet: kills, releases, holds, sheets and tokens are written here as they happen.</Empty>
        )
      ) : null}
      {entries.length ? (
        <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">When</th>
                <th className="pr-3 font-medium">Who</th>
                <th className="pr-3 font-medium">What</th>
                <th className="pr-3 font-medium">Target</th>
                <th className="pr-3 font-medium">From</th>
                <th className="pr-3 font-medium">Detail</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <AuditLine key={e.id} e={e} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {q.hasNextPage ? (
        <div className="mt-3">
          <Button onClick={() => q.fetchNextPage()} disabled={q.isFetchingNextPage}>
            Older entries
          </Button>
        </div>
      ) : null}
    </div>
  );
}

function AuditLine({ e }: { e: AuditEntry }) {
  const detail = e.detail ? Object.entries(e.detail).filter(([k]) => !['tokenId', 'kind'].includes(k)) : [];
  return (
    <tr data-audit={e.action} className="border-t border-zinc-100 align-top">
      <td className="whitespace-nowrap px-3 py-1.5 text-xs text-zinc-600">
        <Ago at={e.at} exact />
      </td>
      <td className="max-w-64 pr-3 text-xs">{auditWho(e)}</td>
      <td className="pr-3 font-mono text-xs">{e.action}</td>
      <td className="max-w-48 truncate pr-3 font-mono text-xs" title={e.target ?? undefined}>
        {e.target ?? '–'}
      </td>
      <td className="pr-3 text-xs text-zinc-600">{e.origin ?? 'controller'}</td>
      <td className="max-w-96 pr-3 text-xs text-zinc-600">
        {detail.map(([k, v]) => {
          const text = typeof v === 'string' ? v : JSON.stringify(v);
          return (
            <span key={k} className="mr-2 break-all" title={text.length > 120 ? text : undefined}>
              {k}: <span className="font-mono">{text.length > 120 ? `${text.slice(0, 120)}…` : text}</span>
            </span>
          );
        })}
      </td>
    </tr>
  );
}
