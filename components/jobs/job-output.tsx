'use client';
// A job's output, live: xterm.js (read-only, ANSI colours) fed from the same
// frame stream rc logs -f reads. It replays from the start, follows until the
// job ends, resumes after the last chunk when the stream breaks (a controller
// restart), and says where stored output was cut short.
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import '@xterm/xterm/css/xterm.css';
import { STREAM_CONTENT_TYPE } from '../../core/frames';
import { routeUrl } from '../api-client';
import { keys } from '../query-keys';
import { FrameReader } from './frame-reader';

export default function JobOutput({ jobId }: { jobId: string }) {
  const box = useRef<HTMLDivElement>(null);
  const client = useQueryClient();
  const [status, setStatus] = useState('loading output…');

  useEffect(() => {
    let disposed = false;
    const abort = new AbortController();
    let cleanup = () => {};
    void (async () => {
      const [{ Terminal }, { FitAddon }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit')]);
      if (disposed || !box.current) return;
      const term = new Terminal({
        disableStdin: true,
        convertEol: true,
        scrollback: 50_000,
        fontSize: 13,
        fontFamily: 'ui-monospace, Menlo, monospace',
        // Dark in both themes, as a terminal is (its wrapper's colour matches: not a theme variable).
        theme: { background: '#18181b' },
      });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(box.current);
      fit.fit();
      const onResize = () => fit.fit();
      window.addEventListener('resize', onResize);
      cleanup = () => {
        window.removeEventListener('resize', onResize);
        term.dispose();
      };
      let after = 0;
      let bytes = 0;
      for (let attempt = 0; !disposed; attempt++) {
        let ended = false;
        try {
          const res = await fetch(routeUrl('GET /api/jobs/:id/stream', { id: jobId, query: { follow: '1', ...(after ? { after } : {}) } }), {
            headers: { accept: STREAM_CONTENT_TYPE },
            signal: abort.signal,
          });
          if (!res.ok || !res.body) {
            const body = await res.text();
            setStatus(body.includes('"message"') ? JSON.parse(body).error.message : `the controller answered ${res.status}`);
            return;
          }
          setStatus(after ? 'following (resumed)' : 'following');
          const reader = new FrameReader();
          const stream = res.body.getReader();
          for (;;) {
            const { value, done } = await stream.read();
            if (done) break;
            for (const item of reader.push(value)) {
              if (item.kind === 'output') {
                after = item.seq;
                bytes += item.data.length;
                term.write(item.stream === 2 ? item.data : item.data);
              } else if (item.event.type === 'notice') {
                term.write(`\r\n\x1b[2m[rc] ${item.event.message}\x1b[0m\r\n`);
              } else if (item.event.type === 'exit') {
                ended = true;
                setStatus(`ended: ${item.event.state}${item.event.exitCode !== null ? `, exit ${item.event.exitCode}` : ''} · ${bytes} bytes shown`);
                void client.invalidateQueries({ queryKey: keys.job(jobId) });
              } else if (item.event.type === 'end') {
                ended = true;
              } else if (item.event.type === 'error') {
                setStatus(item.event.message);
                ended = true;
              }
            }
          }
        } catch {
          if (disposed) return;
        }
        if (ended || disposed) return;
        // The stream broke before the job's end: the controller restarted, or the network dropped.
        setStatus('reconnecting…');
        await new Promise((r) => setTimeout(r, Math.min(3000, 300 * (attempt + 1))));
      }
    })();
    return () => {
      disposed = true;
      abort.abort();
      cleanup();
    };
  }, [jobId, client]);

  return (
    <div>
      <div ref={box} role="log" aria-label="Job output" className="h-96 overflow-hidden rounded bg-[#18181b] p-1" />
      <p className="mt-1 text-xs text-zinc-500" role="status" aria-label="Output status">
        {status}
      </p>
    </div>
  );
}
