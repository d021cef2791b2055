'use client';
// The Markdown source editor (CodeMirror 6), loaded only on the sheet editor.
import { markdown } from '@codemirror/lang-markdown';
import { basicSetup, EditorView } from 'codemirror';
import { useEffect, useRef } from 'react';

export default function CodeEditor({ value, onChange, label }: { value: string; onChange: (v: string) => void; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;

  // The editor owns its text once made; a reload of the source remounts it (a new key).
  // biome-ignore lint/correctness/useExhaustiveDependencies: made once per mount.
  useEffect(() => {
    if (!box.current) return;
    const v = new EditorView({
      doc: value,
      parent: box.current,
      extensions: [
        basicSetup,
        markdown(),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-label': label }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) change.current(u.state.doc.toString());
        }),
      ],
    });
    view.current = v;
    return () => v.destroy();
  }, []);

  return <div ref={box} className="h-full min-h-64 overflow-auto rounded border border-zinc-300 text-sm" />;
}
