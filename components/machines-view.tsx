'use client';
// Machines (rc machines): those rented from providers, with state, account,
// GPU, price, the job each is for, when an idle one is deleted (IDLE UNTIL)
// and cost so far, and their total; below, what every machine cost so far
// by team (idle time apart, no team's) and the dearest jobs. A simulated
// price says so with a badge. An admin may delete a machine (with a confirm).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { idleUntilText, localClock } from '../core/until-text';
import type { CostView, MachineCosts, MachineView } from '../protocol/wire';
import { call } from './api-client';
import { useIsAdmin, useNow } from './providers';
import { keys } from './query-keys';
import { Ago, Button, Empty, ErrorBox, Loading, PageTitle } from './ui';

const STATE_STYLE: Record<MachineView['state'], string> = {
  provisioning: 'bg-sky-50 text-sky-800 ring-sky-200',
  booting: 'bg-sky-50 text-sky-800 ring-sky-200',
  idle: 'bg-emerald-50 text-emerald-800 ring-emerald-200',
  busy: 'bg-amber-50 text-amber-800 ring-amber-200',
  offline: 'bg-zinc-100 text-zinc-600 ring-zinc-300',
  terminating: 'bg-red-50 text-red-800 ring-red-200',
  terminated: 'bg-zinc-100 text-zinc-500 ring-zinc-200',
};

/** Rounded to cents here, in the view; the sums behind it keep full precision. */
const dollars = (n: number) => `$${n.toFixed(2)}`;

/** Says a price (or a cost with some of it) is simulated: the local provider's table, no one billed. */
function Simulated({ on }: { on: boolean }) {
  if (!on) return null;
  return (
    <span
      className="ml-1.5 rounded bg-violet-50 px-1 py-px align-middle text-[10px] font-medium uppercase tracking-wide text-violet-700 ring-1 ring-inset ring-violet-200"
      title="simulated price (the local provider's table): no one is billed for it"
      data-simulated
    >
      simulated
    </span>
  );
}

/** A cost with its badge: the number alone is in data-cost (tests read it). */
function Cost({ c, total = false }: { c: CostView; total?: boolean }) {
  return (
    <>
      <span className="tabular-nums" {...(total ? { 'data-total': '' } : { 'data-cost': '' })}>
        {dollars(c.cost)}
      </span>
      <Simulated on={c.simulated} />
    </>
  );
}

export function MachinesView() {
  const [all, setAll] = useState(false);
  const q = useQuery({
    queryKey: keys.machines(all),
    queryFn: () => call('GET /api/machines', { query: all ? { all: '1' } : {} }),
    // Cost so far grows with time and states change with the provider: no live event says so yet.
    refetchInterval: 5000,
  });
  const machines = q.data?.machines;
  const simulated = machines?.some((m) => m.simulated) ?? false;
  const total = machines?.reduce((s, m) => s + m.costSoFar, 0) ?? 0;
  return (
    <div>
      <PageTitle sub="Machines rented from provider accounts: the job each is for, when an idle one is deleted, and what each cost so far (its price × the time since its launch).">
        Machines
      </PageTitle>
      <label className="mb-3 flex items-center gap-2 text-sm text-zinc-700">
        <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> terminated ones too
      </label>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="machines" /> : null}
      {machines && machines.length === 0 ? (
        <Empty>
          No machine{all ? '' : ' is live'}. <code className="font-mono">rc run --cloud-only …</code> rents one from a provider account when no host here fits
          {all ? '' : '; tick "terminated ones too" for past ones'}.
        </Empty>
      ) : null}
      {machines?.length ? (
        <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">Machine</th>
                <th className="pr-3 font-medium">State</th>
                <th className="pr-3 font-medium">Account</th>
                <th className="pr-3 font-medium">GPU</th>
                <th className="pr-3 text-right font-medium">$/hour</th>
                <th className="pr-3 font-medium">Job</th>
                <th className="pr-3 font-medium">Idle until</th>
                <th className="pr-3 text-right font-medium">Cost so far</th>
                <th className="pr-3 font-medium">Launched</th>
                <th className="pr-3 font-medium" />
              </tr>
            </thead>
            <tbody>
              {machines.map((m) => (
                <MachineLine key={m.id} m={m} />
              ))}
            </tbody>
            <tfoot>
              <tr className="border-t border-zinc-200 font-medium">
                <td className="px-3 py-2" colSpan={7}>
                  Total of these machines
                </td>
                <td className="whitespace-nowrap pr-3 text-right" data-listed-total>
                  {dollars(total)}
                  <Simulated on={simulated} />
                </td>
                <td colSpan={2} />
              </tr>
            </tfoot>
          </table>
        </div>
      ) : null}
      {q.data ? <CostTables costs={q.data.costs} /> : null}
    </div>
  );
}

/** What every machine cost so far (terminated ones too): by team, with idle apart, and the dearest jobs. */
function CostTables({ costs }: { costs: MachineCosts }) {
  return (
    <section className="mt-6" aria-label="Costs">
      <h2 className="text-sm font-semibold text-zinc-800">
        Every machine so far, terminated ones too: <Cost c={costs.total} total />
      </h2>
      <p className="mb-2 text-xs text-zinc-500">
        A job's part is its machine's price × the time it ran there, charged to its token's team; idle is machine time no job ran in (booting, kept for the next
        job).
      </p>
      <div className="flex flex-wrap items-start gap-4">
        <div className="min-w-56 rounded-lg border border-zinc-200 bg-white shadow-sm" data-costs-by-team>
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">Team</th>
                <th className="px-3 text-right font-medium">Cost</th>
              </tr>
            </thead>
            <tbody>
              {costs.byTeam.map((t) => (
                <tr key={t.team} data-team={t.team} className="border-t border-zinc-100">
                  <td className="px-3 py-1.5">{t.team}</td>
                  <td className="whitespace-nowrap px-3 text-right">
                    <Cost c={t} />
                  </td>
                </tr>
              ))}
              <tr data-team-idle className="border-t border-zinc-100 text-zinc-500">
                <td className="px-3 py-1.5 italic">idle</td>
                <td className="whitespace-nowrap px-3 text-right">
                  <Cost c={costs.idle} />
                </td>
              </tr>
            </tbody>
          </table>
        </div>
        <div className="min-w-96 rounded-lg border border-zinc-200 bg-white shadow-sm" data-costs-by-job>
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500">
              <tr>
                <th className="px-3 py-2 font-medium">The {costs.byJob.length < 20 ? '' : '20 '}dearest jobs</th>
                <th className="pr-3 font-medium">Team</th>
                <th className="px-3 text-right font-medium">Cost</th>
              </tr>
            </thead>
            <tbody>
              {costs.byJob.length === 0 ? (
                <tr className="border-t border-zinc-100">
                  <td className="px-3 py-1.5 text-zinc-500" colSpan={3}>
                    No job has run on a machine yet.
                  </td>
                </tr>
              ) : null}
              {costs.byJob.map((j) => (
                <tr key={j.jobId} data-job-cost={j.jobId} className="border-t border-zinc-100">
                  <td className="px-3 py-1.5">
                    <Link href={`/jobs/${encodeURIComponent(j.jobId)}`} className="font-mono text-xs text-sky-800 hover:underline">
                      {j.jobId}
                    </Link>
                    {j.name ? <span className="ml-2 text-zinc-600">{j.name}</span> : null}
                  </td>
                  <td className="pr-3">{j.team}</td>
                  <td className="whitespace-nowrap px-3 text-right">
                    <Cost c={j} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
    </section>
  );
}

function MachineLine({ m }: { m: MachineView }) {
  const now = useNow(5000);
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
      <td className="whitespace-nowrap pr-3 text-right tabular-nums" data-price>
        {m.pricePerHour.toFixed(2)}
        <Simulated on={m.simulated} />
      </td>
      <td className="pr-3">
        {m.jobId ? (
          <Link href={`/jobs/${encodeURIComponent(m.jobId)}`} className="font-mono text-xs text-sky-800 hover:underline" data-job>
            {m.jobId}
          </Link>
        ) : (
          <span className="text-zinc-400">–</span>
        )}
      </td>
      <td className="whitespace-nowrap pr-3 text-xs text-zinc-700" data-idle-until>
        {m.idleUntil ? idleUntilText(m.idleUntil, now, localClock(now)) : <span className="text-zinc-400">–</span>}
      </td>
      <td className="whitespace-nowrap pr-3 text-right">
        <Cost c={{ cost: m.costSoFar, simulated: m.simulated }} />
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
