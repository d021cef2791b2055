'use client';
// The 404 page's body: what was not found (read from the address, so one page
// serves an unknown URL and an unknown job, device, host or array) and the way back.
import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { useEffect, useState } from 'react';
import { ApiError } from './api-client';

const KINDS: Record<string, string> = { jobs: 'job', devices: 'device', hosts: 'host', arrays: 'array' };

/** Whether a query failed because the API knows no such thing: the page shows NotFound instead. */
export function isNotFound(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404;
}

/** `address`: no route matched (the root 404), so the address is all there is to name; else a page's notFound() for one thing. */
export function NotFound({ address = false }: { address?: boolean }) {
  const routed = usePathname() ?? '/';
  // The root 404's server render does not know the address the browser asked for: it is filled in once mounted.
  const [asked, setAsked] = useState('');
  useEffect(() => setAsked(window.location.pathname), []);
  const path = address ? asked : routed;
  const [, first = '', second] = path.split('/');
  const kind = !address && second ? KINDS[first] : undefined;
  const name = second ? decodeURIComponent(second) : '';
  return (
    <section data-not-found className="mx-auto mt-8 max-w-xl rounded-lg border border-zinc-200 bg-white p-6 shadow-sm">
      <p className="font-mono text-sm text-zinc-500">404</p>
      <h1 className="mt-1 text-xl font-semibold text-zinc-900">
        {kind ? (
          <>
            No {kind} <span className="font-mono">{name}</span>
          </>
        ) : (
          'No such page'
        )}
      </h1>
      <p className="mt-2 text-sm text-zinc-600">
        {kind ? (
          <>
            This controller has no {kind} named <span className="font-mono">{name}</span>: check the address, or find it in the lists below.
          </>
        ) : (
          <>
            The dashboard has nothing at <span className="font-mono break-all">{path}</span>.
          </>
        )}
      </p>
      <nav aria-label="Back" className="mt-4 flex flex-wrap gap-2 text-sm">
        <Link href="/" className="rounded bg-zinc-900 px-2.5 py-1 font-medium text-white hover:bg-zinc-700">
          Fleet
        </Link>
        <Link href="/jobs" className="rounded px-2.5 py-1 font-medium text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-50">
          Jobs
        </Link>
        <Link href="/queue" className="rounded px-2.5 py-1 font-medium text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-50">
          Queue
        </Link>
      </nav>
    </section>
  );
}
