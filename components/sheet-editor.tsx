'use client';
// The usage sheet (or device note) editor, for admins: Markdown source beside
// a live preview. A save names the version it started from, so an edit made
// meanwhile by someone else is not overwritten: the controller refuses it
// (conflict) and the editor offers their version.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import { useState } from 'react';
import type { SheetView } from '../protocol/wire';
import { ApiError, call } from './api-client';
import { Ago, Button, ErrorBox } from './ui';

const CodeEditor = dynamic(() => import('./code-editor'), { ssr: false, loading: () => <p className="text-sm text-zinc-500">Loading the editor…</p> });
const Markdown = dynamic(() => import('./markdown'), { ssr: false });

export function SheetEditor({
  target,
  what,
  current,
  onClose,
}: {
  /** The host (a usage sheet) or the device (a note). */
  target: { host: string } | { device: string };
  what: string;
  current: SheetView | null;
  onClose: () => void;
}) {
  const client = useQueryClient();
  const [base, setBase] = useState(current);
  const [source, setSource] = useState(current?.body ?? '');
  const [generation, setGeneration] = useState(0);
  const save = useMutation({
    mutationFn: () => {
      const body = { body: source, ifUpdatedAt: base?.updatedAt ?? null };
      return 'host' in target
        ? call('PUT /api/hosts/:name/sheet', { name: target.host, body }).then((r) => r.sheet)
        : call('PUT /api/devices/:name/note', { name: target.device, body }).then((r) => r.note);
    },
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['host'] });
      void client.invalidateQueries({ queryKey: ['device'] });
      onClose();
    },
  });
  const conflict = save.error instanceof ApiError && save.error.code === 'conflict';
  const takeTheirs = async () => {
    const fresh =
      'host' in target
        ? (await call('GET /api/hosts/:name/sheet', { name: target.host })).sheet
        : (await call('GET /api/devices/:name', { name: target.device })).note;
    setBase(fresh);
    setSource(fresh?.body ?? '');
    setGeneration((g) => g + 1);
    save.reset();
  };
  return (
    <section aria-label={`Edit the ${what}`} className="rounded-lg border border-sky-300 bg-white p-3 shadow">
      <div className="mb-2 flex flex-wrap items-center justify-between gap-2">
        <h2 className="text-sm font-semibold">Editing the {what}</h2>
        <span className="text-xs text-zinc-500">
          {base ? (
            <>
              editing the version of <Ago at={base.updatedAt} /> by {base.updatedBy}
            </>
          ) : (
            'new'
          )}
        </span>
      </div>
      <div className="grid gap-3 md:grid-cols-2">
        <div className="min-h-64">
          <CodeEditor key={generation} value={source} onChange={setSource} label={`${what} source (Markdown)`} />
        </div>
        <section aria-label="Preview" className="min-h-64 overflow-auto rounded border border-zinc-200 bg-zinc-50 p-3">
          {source.trim() ? <Markdown source={source} /> : <p className="text-sm text-zinc-500">Empty: saving removes the {what}.</p>}
        </section>
      </div>
      <ErrorBox error={save.error} />
      <div className="mt-2 flex gap-2">
        <Button kind="primary" onClick={() => save.mutate()} disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Save'}
        </Button>
        {conflict ? <Button onClick={takeTheirs}>Load their version</Button> : null}
        <Button onClick={onClose}>Cancel</Button>
      </div>
    </section>
  );
}
