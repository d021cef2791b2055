'use client';
// Every label of a device with where it came from (declared by the operator,
// or detected by which probe), its age, and whether its probe is failing.
import type { LabelView } from '../../protocol/wire';
import { labelText } from '../format';
import { Ago } from '../ui';

export function LabelsTable({ labels }: { labels: readonly LabelView[] }) {
  if (!labels.length) return <p className="text-sm text-zinc-500">No labels.</p>;
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm">
        <thead className="text-xs text-zinc-500">
          <tr>
            <th className="py-1 pr-3 font-medium">Label</th>
            <th className="pr-3 font-medium">Value</th>
            <th className="pr-3 font-medium">Source</th>
            <th className="pr-3 font-medium">Seen</th>
            <th className="font-medium">Status</th>
          </tr>
        </thead>
        <tbody>
          {labels.map((l) => (
            <tr key={`${l.key}:${l.source}:${l.hostWide}`} className={`border-t border-zinc-100 ${l.effective ? '' : 'text-zinc-400'}`}>
              <td className="py-1 pr-3 font-mono text-xs">{l.key}</td>
              <td className="pr-3 font-mono text-xs" title={l.value}>
                {labelText(l.key, l.value)}
              </td>
              <td className="pr-3 text-xs">
                {l.source}
                {l.probe ? ` (${l.probe})` : ''}
                {l.hostWide ? ', host-wide' : ''}
              </td>
              <td className="pr-3 text-xs">
                <Ago at={l.seenAt} />
              </td>
              <td className="text-xs">
                {l.stale ? (
                  <span className="rounded bg-amber-100 px-1 text-amber-900" title={l.stale}>
                    stale: {l.stale}
                  </span>
                ) : l.effective ? (
                  'in effect'
                ) : (
                  'overridden'
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
