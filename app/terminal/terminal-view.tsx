'use client';
// The browser's terminal: xterm.js on the controller's /tty socket (the same
// protocol as rc run --tty; docs/api.md). The socket signs in with the
// session cookie. Once the job is queued its id goes into the URL, so a reload
// re-attaches to the same terminal and gets its recent screen replayed.
import { useEffect, useRef, useState } from 'react';
import type { Socket } from 'socket.io-client';
import '@xterm/xterm/css/xterm.css';
import { TTY_NAMESPACE, type TtyClientToController, type TtyControllerToClient, TtyEvent } from '../../protocol/events';

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
      let jobId = job;
      let opened = false;
      let ended = false;
      /** Bytes of output written so far: a reconnect resumes after them. */
      let received = 0;
      // The cookie signs the socket in; WebSocket only, so the Origin check always applies.
      const socket: Socket<TtyControllerToClient, TtyClientToController> = io(TTY_NAMESPACE, {
        transports: ['websocket'],
        reconnectionDelay: 500,
        reconnectionDelayMax: 3000,
      });
      socket.on('connect', () => {
        if (jobId) socket.emit(TtyEvent.open, { jobId, after: received, cols: term.cols, rows: term.rows });
        else if (!opened) {
          opened = true;
          socket.emit(TtyEvent.open, { device, selector: select ?? '', cols: term.cols, rows: term.rows });
        }
      });
      socket.on(TtyEvent.queued, (e) => {
        jobId = e.jobId;
        window.history.replaceState(null, '', `/terminal?job=${encodeURIComponent(e.jobId)}`);
        setStatus(`job ${e.jobId} is waiting for a device (${e.position ?? 0} ahead of it)`);
      });
      socket.on(TtyEvent.started, (e) => {
        jobId = e.jobId;
        received = e.offset;
        setStatus(`job ${e.jobId} on ${e.devices.join(', ')}`);
        term.focus();
      });
      socket.on(TtyEvent.output, (data) => {
        const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
        received += bytes.length;
        // The ack after xterm has written it is the flow control: a busy page holds the program back.
        term.write(bytes, () => socket.emit(TtyEvent.ack, bytes.length));
      });
      socket.on(TtyEvent.exit, (e) => {
        ended = true;
        const how = e.exitCode !== null ? `exit ${e.exitCode}` : e.state;
        setStatus(`job ${e.jobId} ended: ${e.state} (${how})${e.reason ? `: ${e.reason}` : ''}`);
        term.write(`\r\n\x1b[2m[rc: the terminal ended: ${e.state}, ${how}]\x1b[0m\r\n`);
        socket.close();
      });
      socket.on(TtyEvent.error, (e) => {
        setStatus(`${e.code}: ${e.message}`);
        if (e.code === 'detached') socket.close();
      });
      socket.on('connect_error', (err: Error) => setStatus(`cannot connect: ${err.message}`));
      socket.on('disconnect', () => {
        if (!ended) setStatus('connection lost; reconnecting…');
      });
      term.onData((d) => socket.emit(TtyEvent.input, d));
      term.onBinary((d) =>
        socket.emit(
          TtyEvent.input,
          Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff),
        ),
      );
      term.onResize(({ cols, rows }) => socket.emit(TtyEvent.resize, { cols, rows }));
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
      <p data-testid="terminal-status" style={{ fontSize: 13, color: '#555' }}>
        {status}
      </p>
      <div ref={box} data-testid="terminal" style={{ height: '75vh', background: '#000', padding: 4 }} />
    </div>
  );
}
