'use client';
// The frame around every signed-in page: the navigation, who is signed in,
// whether the live view is connected, Sign out, and the controller's notices
// (its database out of disk space) above every page while they last, and the
// theme switch.
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { usePathname } from 'next/navigation';
import type { ReactNode } from 'react';
import { call } from './api-client';
import { useLive } from './live';
import { goToSignIn, useMe } from './providers';
import { keys } from './query-keys';
import { ThemeSwitch } from './theme-switch';

const NAV = [
  { href: '/', label: 'Fleet' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/queue', label: 'Queue' },
  { href: '/holds', label: 'Holds' },
  { href: '/machines', label: 'Machines' },
  { href: '/usage', label: 'Usage' },
  { href: '/teams', label: 'Teams' },
  { href: '/audit', label: 'Audit' },
];

export function Shell({ children }: { children: ReactNode }) {
  const me = useMe();
  const { connected } = useLive();
  const path = usePathname();
  const current = (href: string) => (href === '/' ? path === '/' || path.startsWith('/hosts') || path.startsWith('/devices') : path.startsWith(href));
  const signOut = async () => {
    await call('DELETE /api/session').catch(() => {});
    goToSignIn();
  };
  return (
    <div className="min-h-screen bg-zinc-50 text-zinc-900">
      <header className="border-b border-zinc-200 bg-white">
        <div className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-6 gap-y-2 px-4 py-2">
          <Link href="/" className="font-mono text-lg font-bold tracking-tight">
            rc
          </Link>
          <nav aria-label="Main" className="flex flex-wrap gap-1">
            {NAV.map((n) => (
              <Link
                key={n.href}
                href={n.href}
                aria-current={current(n.href) ? 'page' : undefined}
                className={`rounded px-2 py-1 text-sm ${current(n.href) ? 'bg-zinc-900 text-white' : 'text-zinc-700 hover:bg-zinc-100'}`}
              >
                {n.label}
              </Link>
            ))}
          </nav>
          <div className="ml-auto flex items-center gap-3 text-sm">
            <span
              role="status"
              aria-label={connected ? 'live updates connected' : 'live updates reconnecting'}
              className={`inline-flex items-center gap-1 text-xs ${connected ? 'text-emerald-700' : 'text-amber-700'}`}
            >
              <span className={`h-2 w-2 rounded-full ${connected ? 'bg-emerald-500' : 'animate-pulse bg-amber-500'}`} />
              {connected ? 'live' : 'reconnecting…'}
            </span>
            {me ? (
              <span className="text-zinc-600">
                {me.name} <span className="rounded bg-zinc-100 px-1 text-xs">{me.kind === 'admin' ? 'admin' : 'read-only + own jobs'}</span>
              </span>
            ) : null}
            <ThemeSwitch />
            <button type="button" onClick={signOut} className="rounded px-2 py-1 text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-100">
              Sign out
            </button>
          </div>
        </div>
      </header>
      <Notices />
      <main className="mx-auto max-w-7xl px-4 py-4">{children}</main>
    </div>
  );
}

/** What the controller wants everyone to know now (GET /api/notices); the live view says when it changes. */
function Notices() {
  const q = useQuery({ queryKey: keys.notices, queryFn: () => call('GET /api/notices') });
  const notices = q.data?.notices ?? [];
  if (!notices.length) return null;
  return (
    <div className="border-b border-red-200 bg-red-50">
      {notices.map((n) => (
        <p key={n.code} role="alert" data-notice={n.code} className="mx-auto max-w-7xl px-4 py-2 text-sm text-red-900">
          {n.message}
        </p>
      ))}
    </div>
  );
}
