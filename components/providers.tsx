'use client';
// Every page's context: the query cache, the live view, who is signed in.
import { QueryClient, QueryClientProvider, useQuery } from '@tanstack/react-query';
import { type ReactNode, useEffect, useState } from 'react';
import type { Whoami } from '../protocol/wire';
import { ApiError, call } from './api-client';
import { LiveProvider } from './live';
import { keys } from './query-keys';

export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            // The live view says when data changed: no refetch on a timer or on focus.
            staleTime: Number.POSITIVE_INFINITY,
            refetchOnWindowFocus: false,
            retry: (n, err) => n < 3 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
          },
        },
      }),
  );
  return (
    <QueryClientProvider client={client}>
      <LiveProvider>{children}</LiveProvider>
    </QueryClientProvider>
  );
}

let leaving = false;

/**
 * Goes to the sign-in page, once: signing out ends the session, which also
 * cuts the live socket, and whoami's 401 that follows must not start a second
 * navigation that aborts the first.
 */
export function goToSignIn(): void {
  if (leaving) return;
  leaving = true;
  window.location.assign('/login');
}

/** Who is signed in; a page without a session goes to the sign-in page. */
export function useMe(): Whoami | undefined {
  const q = useQuery({ queryKey: keys.whoami, queryFn: () => call('GET /api/whoami') });
  useEffect(() => {
    if (q.error instanceof ApiError && q.error.status === 401) goToSignIn();
  }, [q.error]);
  return q.data;
}

export function useIsAdmin(): boolean {
  return useMe()?.kind === 'admin';
}

/** Re-renders every `ms`, for "3 min ago" and countdowns. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
