'use client';
// Machines (rc machines): those rented from providers, with state, account,
// GPU, price and cost so far (a simulated price says so), and their total;
// an admin may delete one (with a confirm).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { MachineView } from '../protocol/wire';
import { call } from './api-client';
import { useIsAdmin } from './providers';
import { keys } from './query-keys';
import { Ago, Button, ErrorBox, Loading, PageTitle } from './ui';

const STATE_STYLE: Record<MachineView['state'], string> = {
  provisioning: 'bg-sky-50 text-sky-800 ring-sky-200',
  booting: 'bg-sky-50 text-sky-800 ring-sky-200',
  idle: 'bg-emerald-50 text-emerald-800 ring-emerald-200',
  busy: 'bg-amber-50 text-amber-800 ring-amber-200',
  offline: 'bg-zinc-100 text-zinc-600 ring-zinc-300',
  terminating: 'bg-red-50 text-red-800 ring-red-200',
  terminated: 'bg-zinc-100 text-zinc-500 ring-zinc-200',
};

const dollars = (n: number) => `$${n.toFixed(2)}`;

export function MachinesView() {
  const [all, setAll] = useState(false);
  const q = useQuery({
    queryKey: keys.machines(all),
    queryFn: () => call('GET /api/machines', { query: all ? { all: '1' } : {} }).then((r) => r.machines),
    // Cost so far grows with time and states change with the provider: no live event says so yet.
    refetchInterval: 5000,
  });
  const simulated = q.data?.some((m) => m.simulated) ?? false;
  const total = q.data?.reduce((s, m) => s + m.costSoFar, 0) ?? 0;
  return (
    <div>
      <PageTitle sub="Machines rented from provider accounts, with what each cost so far (its price × the time since its launch).">Machines</PageTitle>
      <label className="mb-3 flex items-center gap-2 text-sm text-zinc-700">
        <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> terminated ones too
      </label>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="machines" /> : null}
      {q.data && q.data.length === 0 ? <p className="text-sm text-zinc-500">No machine{all ? '' : ' is live'}.</p> : null}
      {q.data?.length ? (
        <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">Machine</th>
                <th className="pr-3 font-medium">State</th>
                <th className="pr-3 font-medium">Account</th>
                <th className="pr-3 font-medium">GPU</th>
                <th className="pr-3 text-right font-medium">$/hour</th>
                <th className="pr-3 text-right font-medium">Cost so far</th>
                <th className="pr-3 font-medium">Launched</th>
                <th className="pr-3 font-medium" />
              </tr>
            </thead>
            <tbody>
              {q.data.map((m) => (
                <MachineLine key={m.id} m={m} />
              ))}
            </tbody>
            <tfoot>
              <tr className="border-t border-zinc-200 font-medium">
                <td className="px-3 py-2" colSpan={5}>
                  Total
                </td>
                <td className="pr-3 text-right tabular-nums" data-total>
                  {dollars(total)}
                  {simulated ? '*' : ''}
                </td>
                <td colSpan={2} />
              </tr>
            </tfoot>
          </table>
        </div>
      ) : null}
      {simulated ? <p className="mt-2 text-xs text-zinc-500">* simulated price (the local provider's table): no one is billed for it.</p> : null}
    </div>
  );
}

function MachineLine({ m }: { m: MachineView }) {
  return (
    <tr data-machine={m.id} className="border-t border-zinc-100">
      <td className="px-3 py-2 font-mono text-xs" title={m.instanceName}>
        {m.id}
      </td>
      <td className="pr-3">
        <span className={`rounded px-1.5 py-0.5 text-xs font-medium ring-1 ring-inset ${STATE_STYLE[m.state]}`}>{m.state}</span>
        {m.terminatedWhy ? <span className="ml-1 text-xs text-zinc-500">{m.terminatedWhy}</span> : null}
      </td>
      <td className="pr-3">{m.account}</td>
      <td className="pr-3">
        {m.gpuModel ? `${m.gpuCount}× ${m.gpuModel}` : 'no GPU'}
        {m.spot ? <span className="ml-1 text-xs text-amber-700">spot</span> : null}
      </td>
      <td className="pr-3 text-right tabular-nums">
        {m.pricePerHour.toFixed(2)}
        {m.simulated ? <span title="simulated price">*</span> : null}
      </td>
      <td className="pr-3 text-right tabular-nums" data-cost>
        {dollars(m.costSoFar)}
        {m.simulated ? <span title="simulated price">*</span> : null}
      </td>
      <td className="pr-3 text-xs text-zinc-600">
        <Ago at={m.createdAt} />
      </td>
      <td className="py-1 pr-3">
        <DeleteButton m={m} />
      </td>
    </tr>
  );
}

function DeleteButton({ m }: { m: MachineView }) {
  const admin = useIsAdmin();
  const client = useQueryClient();
  const del = useMutation({
    mutationFn: () => call('DELETE /api/machines/:id', { id: m.id }),
    onSettled: () => void client.invalidateQueries({ queryKey: keys.machines() }),
  });
  if (!admin || m.state === 'terminated' || m.state === 'terminating') return null;
  return (
    <span>
      <Button
        kind="danger"
        disabled={del.isPending}
        aria-label={`Delete machine ${m.id}`}
        onClick={() => {
          if (window.confirm(`Delete machine ${m.id} (${m.account})? A job running on it is lost.`)) del.mutate();
        }}
      >
        Delete
      </Button>
      <ErrorBox error={del.error} />
    </span>
  );
}
