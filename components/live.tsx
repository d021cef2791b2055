'use client';
// The live view: one socket.io connection to the controller's `/` namespace
// per tab. Each `changed` it tells invalidates (or, for one host, patches) the
// queries that show it; nothing polls. After a reconnect (a controller that
// restarted) every query is fetched again, since changes may have been missed.
import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react';
import type { Socket } from 'socket.io-client';
import { LIVE_NAMESPACE, LiveEvent, type LiveChange, type LiveControllerToClient } from '../protocol/events';
import type { Fleet } from '../protocol/wire';
import { call } from './api-client';
import { patchFleet, planRefetch } from './live-plan';
import { keys } from './query-keys';

const LiveContext = createContext<{ connected: boolean }>({ connected: false });

export function useLive(): { connected: boolean } {
  return useContext(LiveContext);
}

/** Changes that arrive together are applied together, once. */
const BATCH_MS = 30;

export function LiveProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const [connected, setConnected] = useState(false);

  useEffect(() => {
    let socket: Socket<LiveControllerToClient> | null = null;
    let disposed = false;
    let pending: LiveChange[] = [];
    let timer: ReturnType<typeof setTimeout> | null = null;
    let wasConnected = false;
    const flush = () => {
      timer = null;
      const batch = pending;
      pending = [];
      void apply(client, batch);
    };
    void import('socket.io-client').then(({ io }) => {
      if (disposed) return;
      // WebSocket only: the cookie signs it in, and the Origin check always applies.
      socket = io(LIVE_NAMESPACE, { transports: ['websocket'], reconnectionDelay: 300, reconnectionDelayMax: 2000 });
      socket.on('connect', () => {
        setConnected(true);
        if (wasConnected) void client.invalidateQueries();
        wasConnected = true;
      });
      socket.on('disconnect', (reason) => {
        setConnected(false);
        // The controller cut it (a token revoked): socket.io does not reconnect by itself then. Ask who we are, and try again.
        if (reason === 'io server disconnect') {
          void client.invalidateQueries({ queryKey: keys.whoami });
          setTimeout(() => socket?.connect(), 1000);
        }
      });
      // Refused sign-in (a revoked token, a session signed out elsewhere): whoami says so, and the page goes to the sign-in page.
      socket.on('connect_error', (err) => {
        if (err.message.startsWith('unauthorized')) void client.invalidateQueries({ queryKey: keys.whoami });
      });
      socket.on(LiveEvent.changed, (c) => {
        pending.push(c);
        timer ??= setTimeout(flush, BATCH_MS);
      });
    });
    return () => {
      disposed = true;
      if (timer) clearTimeout(timer);
      socket?.disconnect();
    };
  }, [client]);

  return <LiveContext.Provider value={{ connected }}>{children}</LiveContext.Provider>;
}

async function apply(client: QueryClient, changes: LiveChange[]): Promise<void> {
  const plan = planRefetch(changes);
  for (const key of plan.invalidate) void client.invalidateQueries({ queryKey: key });
  if (plan.fleet) {
    void client.invalidateQueries({ queryKey: keys.fleet });
    return;
  }
  if (!plan.hosts.length || !client.getQueryData(keys.fleet)) return;
  try {
    const parts = await Promise.all(plan.hosts.map((host) => call('GET /api/fleet', { query: { host } })));
    client.setQueryData<Fleet>(keys.fleet, (old) => (old ? patchFleet(old, plan.hosts, parts) : old));
  } catch {
    // A host that was removed, or a controller restarting: fetch it all.
    void client.invalidateQueries({ queryKey: keys.fleet });
  }
}
