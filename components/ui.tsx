'use client';
// Small shared pieces: state badges, times with their exact value on hover,
// error boxes, buttons. Colour always comes with a word.
import type { ReactNode } from 'react';
import Link from 'next/link';
import { reservedText } from '../core/reserved';
import type { DeviceState, JobState, ReservedFor } from '../protocol/wire';
import { ApiError } from './api-client';
import { agoText, exactTime } from './format';
import { useNow } from './providers';

const DEVICE_COLOURS: Record<DeviceState | 'held', string> = {
  free: 'ring-1 bg-emerald-100 text-emerald-900 ring-emerald-300',
  busy: 'ring-1 bg-sky-100 text-sky-900 ring-sky-300',
  // About to be busy: busy's colour, paler, in a dashed outline.
  reserved: 'bg-sky-50 text-sky-900 outline-1 outline-dashed -outline-offset-1 outline-sky-600',
  held: 'ring-1 bg-violet-100 text-violet-900 ring-violet-300',
  off: 'ring-1 bg-amber-100 text-amber-900 ring-amber-300',
  unhealthy: 'ring-1 bg-red-100 text-red-900 ring-red-300',
  offline: 'ring-1 bg-zinc-200 text-zinc-700 ring-zinc-300',
  removed: 'ring-1 bg-zinc-100 text-zinc-500 ring-zinc-200 line-through',
};

/** A device's state; `hostOff`: its host is turned off, so a busy (or held) one reads "off (busy)": its job finishes, no new one starts. */
export function DeviceBadge({ state, hostOff = false, title }: { state: DeviceState | 'held'; hostOff?: boolean; title?: string }) {
  const draining = hostOff && (state === 'busy' || state === 'held');
  return (
    <span className={`inline-block rounded px-1.5 py-0.5 text-xs font-medium ${DEVICE_COLOURS[draining ? 'off' : state]}`} title={title}>
      {draining ? `off (${state})` : state}
    </span>
  );
}

/** Who a reserved device is held back for: the job (a link) and its submitter, why on hover. */
export function ReservedForLink({ r }: { r: ReservedFor }) {
  return (
    <Link href={`/jobs/${encodeURIComponent(r.jobId)}`} className="hover:underline" title={reservedText(r)} data-reserved-for={r.jobId}>
      for {r.submitter} · <span className="font-mono">{r.jobId}</span>
    </Link>
  );
}

const JOB_COLOURS: Record<string, string> = {
  queued: 'bg-amber-100 text-amber-900 ring-amber-300',
  running: 'bg-sky-100 text-sky-900 ring-sky-300',
  succeeded: 'bg-emerald-100 text-emerald-900 ring-emerald-300',
  failed: 'bg-red-100 text-red-900 ring-red-300',
  lost: 'bg-rose-100 text-rose-900 ring-rose-300',
  preempted: 'bg-orange-100 text-orange-900 ring-orange-300',
};

export function JobBadge({ state }: { state: JobState }) {
  return (
    <span className={`inline-block rounded px-1.5 py-0.5 text-xs font-medium ring-1 ${JOB_COLOURS[state] ?? 'bg-zinc-200 text-zinc-800 ring-zinc-300'}`}>
      {state}
    </span>
  );
}

/** A relative time ("3 min ago"), its exact time on hover; `exact`: said to a screen reader too, where the exact time is the point. */
export function Ago({ at, exact = false }: { at: string | null | undefined; exact?: boolean }) {
  const now = useNow(5000);
  const full = exactTime(at);
  return (
    <time dateTime={at ?? undefined} title={full}>
      {agoText(at, now)}
      {exact && full ? <span className="sr-only"> ({full})</span> : null}
    </time>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? error.code : null;
  return (
    <div role="alert" className="my-2 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-900">
      {code ? <span className="mr-2 font-mono text-xs">{code}</span> : null}
      {message}
    </div>
  );
}

export function Card({ title, children, actions }: { title?: ReactNode; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="mb-4 rounded-lg border border-zinc-200 bg-white shadow-sm">
      {title ? (
        <header className="flex flex-wrap items-center justify-between gap-2 border-b border-zinc-100 px-4 py-2">
          <h2 className="text-sm font-semibold text-zinc-800">{title}</h2>
          {actions}
        </header>
      ) : null}
      <div className="px-4 py-3">{children}</div>
    </section>
  );
}

const BUTTON = {
  primary: 'bg-zinc-900 text-white hover:bg-zinc-700',
  plain: 'bg-white text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-50',
  danger: 'bg-red-700 text-white hover:bg-red-600',
};

export function Button({ kind = 'plain', className = '', ...props }: React.ButtonHTMLAttributes<HTMLButtonElement> & { kind?: keyof typeof BUTTON }) {
  return (
    <button
      type="button"
      {...props}
      className={`rounded px-2.5 py-1 text-sm font-medium focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 disabled:cursor-not-allowed disabled:opacity-50 ${BUTTON[kind]} ${className}`}
    />
  );
}

export function PageTitle({ children, sub }: { children: ReactNode; sub?: ReactNode }) {
  return (
    <div className="mb-4">
      <h1 className="text-xl font-semibold text-zinc-900">{children}</h1>
      {sub ? <p className="mt-0.5 text-sm text-zinc-600">{sub}</p> : null}
    </div>
  );
}

/**
 * What a list shows with nothing in it: what is empty (and, filtered, by
 * which filters) and what to do next: a command that makes one, or `action`
 * (a button that clears the filters).
 */
export function Empty({ children, action }: { children: ReactNode; action?: ReactNode }) {
  return (
    <div data-empty className="rounded-lg border border-dashed border-zinc-300 bg-white px-4 py-6 text-center text-sm text-zinc-600">
      <p>{children}</p>
      {action ? <div className="mt-3">{action}</div> : null}
    </div>
  );
}

/** The filters set, as `key=value` pairs ("state=failed, submitter=alice"), for an empty list's sentence. */
export function filtersText(filters: Record<string, string>): string {
  return Object.entries(filters)
    .filter(([, v]) => v.trim())
    .map(([k, v]) => `${k}=${v.trim()}`)
    .join(', ');
}

export function Loading({ what }: { what: string }) {
  return <p className="text-sm text-zinc-500">Loading {what}…</p>;
}

/** A definition list row: a term and its value. */
export function Field({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div className="flex gap-3 py-0.5 text-sm">
      <dt className="w-32 shrink-0 text-zinc-500">{term}</dt>
      <dd className="min-w-0 break-words text-zinc-900">{children}</dd>
    </div>
  );
}
