'use client';
// The browser's terminal: xterm.js on the controller's /tty socket (the same
// protocol as rc run --tty; docs/api.md). The socket signs in with the
// session cookie. Once the job is queued its id goes into the URL, so a reload
// re-attaches to the same terminal and gets its recent screen replayed.
// The protocol's client side is protocol/tty-client.ts, shared with rc run
// --tty; here are the socket, xterm.js, the status line and the URL.
import { useEffect, useRef, useState } from 'react';
import type { Socket } from 'socket.io-client';
import '@xterm/xterm/css/xterm.css';
import { TTY_NAMESPACE, type TtyClientToController, type TtyControllerToClient } from '../protocol/events';
import { listenOnSocket, sendOnSocket, type TtyClientAction, TtyClient } from '../protocol/tty-client';

interface Props {
  device: string | null;
  select: string | null;
  job: string | null;
}

export function TerminalView({ device, select, job }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState('connecting…');

  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    void (async () => {
      const [{ Terminal }, { FitAddon }, { io }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit'), import('socket.io-client')]);
      if (disposed || !box.current) return;
      const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, fontFamily: 'ui-monospace, Menlo, monospace' });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(box.current);
      fit.fit();
      term.focus();
      const client = new TtyClient({ open: { device, selector: select ?? '' }, jobId: job, size: () => ({ cols: term.cols, rows: term.rows }) });
      // The cookie signs the socket in; WebSocket only, so the Origin check always applies.
      const socket: Socket<TtyControllerToClient, TtyClientToController> = io(TTY_NAMESPACE, {
        transports: ['websocket'],
        reconnectionDelay: 500,
        reconnectionDelayMax: 3000,
      });
      const act = (actions: TtyClientAction[]) => {
        for (const a of actions) perform(a);
      };
      const perform = (a: TtyClientAction) => {
        if (sendOnSocket(socket, a)) return;
        switch (a.type) {
          case 'write': {
            const n = a.bytes.length;
            // The ack after xterm has written it is the flow control: a busy page holds the program back.
            return term.write(a.bytes, () => act(client.written(n)));
          }
          case 'queued':
            // In the URL, so a reload re-attaches to this terminal.
            window.history.replaceState(null, '', `/terminal?job=${encodeURIComponent(a.jobId)}`);
            return setStatus(`job ${a.jobId} is waiting for a device (${a.position ?? 0} ahead of it)`);
          case 'started':
            setStatus(`job ${a.jobId} on ${a.devices.join(', ')}`);
            return term.focus();
          case 'exit': {
            const e = a.exit;
            const how = e.exitCode !== null ? `exit ${e.exitCode}` : e.state;
            setStatus(`job ${e.jobId} ended: ${e.state} (${how})${e.reason ? `: ${e.reason}` : ''}`);
            term.write(`\r\n\x1b[2m[rc: the terminal ended: ${e.state}, ${how}]\x1b[0m\r\n`);
            return void socket.close();
          }
          case 'detached':
            setStatus(`detached: ${a.message}`);
            return void socket.close();
          case 'refused':
            return setStatus(`${a.code}: ${a.message}`);
          case 'lost':
            return setStatus('connection lost; reconnecting…');
          case 'stranded':
            return;
          case 'unreachable':
            return setStatus(`cannot connect: ${a.message}`);
        }
      };
      listenOnSocket(socket, client, act);
      term.onData((d) => act(client.input(d)));
      term.onBinary((d) => act(client.input(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff))));
      term.onResize(({ cols, rows }) => act(client.resize({ cols, rows })));
      const onWindowResize = () => fit.fit();
      window.addEventListener('resize', onWindowResize);
      cleanup = () => {
        window.removeEventListener('resize', onWindowResize);
        socket.close();
        term.dispose();
      };
    })();
    return () => {
      disposed = true;
      cleanup();
    };
  }, [device, select, job]);

  return (
    <div>
      <p data-testid="terminal-status" role="status" className="mb-2 text-sm text-zinc-600">
        {status}
      </p>
      <div ref={box} data-testid="terminal" className="h-[75vh] rounded bg-black p-1" />
    </div>
  );
}
