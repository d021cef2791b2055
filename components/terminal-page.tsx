'use client';
// The terminal page: a terminal on a device, on any device a selector
// matches, or re-attached to one by its job. A new terminal takes a device,
// so it starts only from a button press (components/terminal-intent.ts):
// loading the URL by itself asks for the press first.
import Link from 'next/link';
import { useState } from 'react';
import { webSubmitter } from '../core/web-submitter';
import { useMe } from './providers';
import { takeArmed, terminalHref } from './terminal-intent';
import { TerminalView } from './terminal-view';
import { Button, PageTitle } from './ui';

export function TerminalPage({ device, select, job }: { device: string | null; select: string | null; job: string | null }) {
  const me = useMe();
  const href = terminalHref({ device: device ?? undefined, select: select ?? '' });
  const [go, setGo] = useState(() => job !== null || takeArmed(href));
  const what = job ? `job ${job}` : device ? device : `a device matching ${select ? `'${select}'` : '(any)'}`;
  return (
    <div>
      <p className="mb-1 text-sm">
        <Link href={device ? `/devices/${encodeURIComponent(device)}` : '/'} className="text-sky-800 hover:underline">
          ← {device ?? 'fleet'}
        </Link>
      </p>
      <PageTitle>Terminal: {what}</PageTitle>
      {go ? (
        <TerminalView device={device} select={select} job={job} />
      ) : (
        <div className="rounded-lg border border-zinc-200 bg-white p-4 shadow-sm">
          <p className="mb-3 text-sm text-zinc-700">
            An interactive shell on {what}, as {me ? webSubmitter(me) : '…'}. It takes the device until you close it (or leave the page for a while), and waits
            in the queue if the device is busy.
          </p>
          <Button kind="primary" onClick={() => setGo(true)}>
            Open terminal
          </Button>
        </div>
      )}
    </div>
  );
}
