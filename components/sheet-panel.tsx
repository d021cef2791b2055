'use client';
// A usage sheet or a device note, rendered, with "updated 2h ago by …" and,
// for admins, the editor.
import dynamic from 'next/dynamic';
import { useState } from 'react';
import type { SheetView } from '../protocol/wire';
import { useIsAdmin } from './providers';
import { SheetEditor } from './sheet-editor';
import { Ago, Button, Card } from './ui';

const Markdown = dynamic(() => import('./markdown'), { ssr: false, loading: () => <p className="text-sm text-zinc-500">…</p> });

export function SheetPanel({
  title,
  what,
  sheet,
  target,
}: {
  title: string;
  what: string;
  sheet: SheetView | null;
  target: { host: string } | { device: string };
}) {
  const admin = useIsAdmin();
  const [editing, setEditing] = useState(false);
  if (editing) return <SheetEditor target={target} what={what} current={sheet} onClose={() => setEditing(false)} />;
  return (
    <Card
      title={title}
      actions={
        <div className="flex items-center gap-2 text-xs text-zinc-500">
          {sheet ? (
            <span>
              updated <Ago at={sheet.updatedAt} /> by {sheet.updatedBy}
            </span>
          ) : null}
          {admin ? (
            <Button onClick={() => setEditing(true)} aria-label={`Edit the ${what}`}>
              Edit
            </Button>
          ) : null}
        </div>
      }
    >
      {sheet ? <Markdown source={sheet.body} /> : <p className="text-sm text-zinc-500">No {what} yet.</p>}
    </Card>
  );
}
