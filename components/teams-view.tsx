'use client';
// Teams (issue 32): who is in each team, its limits and where it stands against
// them, its fair-share standing, and its GPU-hours per day against its budget
// (GET /api/usage/teams). An admin edits a team's share and limits and moves a
// token to another team here, through the admin routes (each change audited);
// anyone else reads it.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import dynamic from 'next/dynamic';
import { type FormEvent, useState } from 'react';
import { formatDuration } from '../core/duration';
import { hoursText, LIMIT_FLAGS, type LimitField } from '../core/limits';
import type { LimitView, TeamUse } from '../protocol/wire';
import { call } from './api-client';
import { useIsAdmin } from './providers';
import { keys } from './query-keys';
import { Button, ErrorBox, Loading, PageTitle } from './ui';

const TeamChart = dynamic(() => import('./team-chart'), { ssr: false, loading: () => <div className="h-44" /> });
const DAYS = ['7', '14', '30', '90'] as const;

export function TeamsView() {
  const [days, setDays] = useState<(typeof DAYS)[number]>('14');
  const admin = useIsAdmin();
  // Budgets' windows roll on while devices are held: read again every half minute too.
  const q = useQuery({ queryKey: keys.teams(days), queryFn: () => call('GET /api/usage/teams', { query: { days } }), refetchInterval: 30_000 });
  const teams = q.data?.teams ?? [];
  const onlyDefault = teams.length === 1 && teams[0]!.name === 'default' && !hasLimits(teams[0]!.limits);
  return (
    <div>
      <PageTitle sub="Each team's members, its limits and what is left, and its place in fair share: within one priority, a team below its share of recent use goes first.">
        Teams
      </PageTitle>
      <ErrorBox error={q.error} />
      {q.isPending ? <Loading what="teams" /> : null}
      {onlyDefault ? (
        <p data-teams-empty className="mb-4 rounded-lg border border-zinc-200 bg-white p-4 text-sm text-zinc-700 shadow-sm">
          Every token is in the one team, <span className="font-mono">default</span>, and no limit is set: everyone shares the fleet, and the queue shares it
          fairly among tokens. <span className="font-mono">rc admin team create &lt;name&gt;</span> makes a team;{' '}
          <span className="font-mono">rc admin limit set team:&lt;name&gt; --gpus N</span> limits one.
        </p>
      ) : null}
      {teams.length ? <TeamsTable teams={teams} /> : null}
      {teams.length ? (
        <div className="mt-6 mb-2 flex flex-wrap items-center justify-between gap-4">
          <h2 className="text-base font-semibold text-zinc-900">GPU-hours per day (UTC), idle on top</h2>
          <label className="flex items-center gap-2 text-xs text-zinc-600">
            Days
            <select value={days} onChange={(e) => setDays(e.target.value as typeof days)} className="rounded border border-zinc-300 px-2 py-1 text-sm">
              {DAYS.map((d) => (
                <option key={d} value={d}>
                  last {d} days
                </option>
              ))}
            </select>
          </label>
        </div>
      ) : null}
      {teams.map((t) => (
        <TeamCard key={t.name} team={t} admin={admin} teamNames={teams.map((x) => x.name)} />
      ))}
    </div>
  );
}

function TeamsTable({ teams }: { teams: TeamUse[] }) {
  return (
    <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm">
      <table className="w-full text-left text-sm" aria-label="Teams">
        <thead className="text-xs text-zinc-500">
          <tr>
            <th className="px-3 py-2 font-medium">Team</th>
            <th className="pr-3 font-medium">Share</th>
            <th className="pr-3 font-medium">Members</th>
            <th className="pr-3 font-medium">GPUs in use</th>
            <th className="pr-3 font-medium">GPU-hours (budget)</th>
            <th className="pr-3 font-medium">Idle share</th>
            <th className="pr-3 font-medium">Fair share</th>
            <th className="pr-3 font-medium">Queued</th>
          </tr>
        </thead>
        <tbody>
          {teams.map((t) => (
            <TeamLine key={t.name} t={t} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TeamLine({ t }: { t: TeamUse }) {
  const l = t.limits;
  const idle = idlePct(t);
  const fair = fairWords(t);
  return (
    <tr data-team-row={t.name} className="border-t border-zinc-100 align-top">
      <td className="px-3 py-2 font-mono text-xs font-semibold">
        <a href={`#team-${t.name}`} className="text-sky-800 hover:underline">
          {t.name}
        </a>
      </td>
      <td className="py-2 pr-3 tabular-nums">{t.share}</td>
      <td className="py-2 pr-3 text-xs">
        {t.members.length ? (
          <ul>
            {t.members.map((m) => (
              <li key={m.id} data-member={m.name} className="whitespace-nowrap">
                <span className="font-mono">{m.name}</span> <span className="text-zinc-500">{m.kind}</span>
                {m.submitter ? <span className="text-zinc-500"> · acts as {m.submitter}</span> : null}
              </li>
            ))}
          </ul>
        ) : (
          <span className="text-zinc-500">no token</span>
        )}
      </td>
      <td className="py-2 pr-3 tabular-nums" data-gpus>
        {l.gpus === null ? (
          <>
            {t.gpusInUse} <span className="text-xs text-zinc-500">(no limit)</span>
          </>
        ) : (
          <span className={t.gpusInUse >= l.gpus ? 'font-medium text-amber-700' : ''}>
            {t.gpusInUse} of {l.gpus}
          </span>
        )}
      </td>
      <td className="py-2 pr-3 tabular-nums" data-budget>
        {t.budget && l.gpuHours !== null ? (
          <span className={t.budget.usedS >= l.gpuHours * 3600 ? 'font-medium text-red-700' : ''}>
            {(t.budget.usedS / 3600).toFixed(1)} of {hoursText(l.gpuHours)} this {l.period}
            <span className="block text-xs text-zinc-500">{(t.budget.idleS / 3600).toFixed(1)} of them idle</span>
          </span>
        ) : (
          <>
            {(windowS(t) / 3600).toFixed(1)} <span className="text-xs text-zinc-500">(no budget; last {t.daily.length - 1} days)</span>
          </>
        )}
      </td>
      <td className={`py-2 pr-3 tabular-nums ${idle !== null && idle >= 50 ? 'font-medium text-amber-700' : ''}`} data-idle>
        {idle === null ? <span className="text-zinc-500">no use</span> : `${idle}%`}
      </td>
      <td className="py-2 pr-3" data-fair title={fair.detail}>
        <span className={fair.tone}>{fair.words}</span>
        <span className="block text-xs text-zinc-500">{fair.detail}</span>
      </td>
      <td className="py-2 pr-3 tabular-nums">
        {t.queued}
        {l.queued !== null ? <span className="text-xs text-zinc-500"> of {l.queued}</span> : null}
      </td>
    </tr>
  );
}

function TeamCard({ team: t, admin, teamNames }: { team: TeamUse; admin: boolean; teamNames: string[] }) {
  const l = t.limits;
  const perDay = l.gpuHours === null ? null : l.period === 'week' ? l.gpuHours / 7 : l.gpuHours;
  const budgetLabel = l.period === 'week' ? `budget ${hoursText(l.gpuHours!)}/week ÷ 7` : `budget ${hoursText(l.gpuHours ?? 0)}/day`;
  return (
    <section id={`team-${t.name}`} data-team={t.name} className="mb-4 rounded-lg border border-zinc-200 bg-white shadow-sm">
      <header className="flex flex-wrap items-baseline justify-between gap-2 border-b border-zinc-100 px-4 py-2">
        <h3 className="text-sm font-semibold text-zinc-800">
          <span className="font-mono">{t.name}</span> <span className="font-normal text-zinc-500">· share {t.share}</span>
        </h3>
        <span className="text-xs text-zinc-500" data-limits-line>
          limits: {limitsLine(l)}
        </span>
      </header>
      <div className="grid gap-4 px-4 py-3 lg:grid-cols-[minmax(0,1fr)_22rem]">
        <div className="min-w-0">
          {windowS(t) > 0 || perDay !== null ? (
            <TeamChart daily={t.daily} budgetPerDay={perDay} budgetLabel={budgetLabel} />
          ) : (
            <p className="py-6 text-sm text-zinc-500">No GPU was leased by this team in the last {t.daily.length - 1} days.</p>
          )}
        </div>
        <div className="min-w-0">{admin ? <TeamEditor team={t} teamNames={teamNames} /> : <LimitsList l={l} />}</div>
      </div>
    </section>
  );
}

function LimitsList({ l }: { l: LimitView }) {
  const texts = limitTexts(l);
  return (
    <dl className="text-sm" data-limits-readonly>
      {(Object.keys(LIMIT_FLAGS) as LimitField[]).map((k) => (
        <div key={k} className="flex gap-3 py-0.5">
          <dt className="w-32 shrink-0 font-mono text-xs text-zinc-500">{LIMIT_FLAGS[k]}</dt>
          <dd className={texts[k] ? 'text-zinc-900' : 'text-zinc-400'}>{texts[k] || 'none'}</dd>
        </div>
      ))}
    </dl>
  );
}

const PLACEHOLDER: Record<LimitField, string> = {
  gpus: 'e.g. 4',
  gpuHours: 'e.g. 200/week',
  queued: 'e.g. 20',
  maxPriority: 'e.g. 2',
  maxHoldTtl: 'e.g. 8h',
  maxRuntime: 'e.g. 1d',
};

/** An admin's form: the team's share and its limits (empty: none), saved through PUT /api/admin/teams/:name and PUT /api/admin/limits/team:<name>. */
function TeamEditor({ team: t, teamNames }: { team: TeamUse; teamNames: string[] }) {
  const client = useQueryClient();
  // What the form started from (or last saved): only a field changed since is sent, so another admin's change to another field stands.
  const [base, setBase] = useState(() => ({ share: String(t.share), texts: limitTexts(t.limits) }));
  const was = base.texts;
  const [share, setShare] = useState(base.share);
  const [texts, setTexts] = useState<Record<LimitField, string>>(was);
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: async () => {
      if (share.trim() !== base.share) {
        const n = share.trim() === '' ? Number.NaN : Number(share);
        await call('PUT /api/admin/teams/:name', { name: t.name, body: { share: Number.isFinite(n) ? n : (share as unknown as number) } });
      }
      // Only what changed is sent; a field emptied clears its limit.
      const body: Partial<Record<LimitField, string>> = {};
      for (const k of Object.keys(LIMIT_FLAGS) as LimitField[]) if (texts[k].trim() !== was[k]) body[k] = texts[k].trim() || 'none';
      if (Object.keys(body).length) await call('PUT /api/admin/limits/:scope', { scope: `team:${t.name}`, body });
    },
    onSuccess: () => {
      setBase({ share: share.trim(), texts: Object.fromEntries(Object.entries(texts).map(([k, v]) => [k, v.trim()])) as Record<LimitField, string> });
      setSaved(true);
    },
    onSettled: () => client.invalidateQueries({ queryKey: keys.teams() }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    save.mutate();
  };
  const field = 'mt-0.5 w-full rounded border border-zinc-300 px-2 py-1 text-sm';
  return (
    <div>
      <form onSubmit={submit} aria-label={`limits of team ${t.name}`} className="grid grid-cols-2 gap-x-3 gap-y-2 text-xs text-zinc-600">
        <label className="flex flex-col">
          share
          <input name="share" value={share} onChange={(e) => setShare(e.target.value)} className={field} inputMode="decimal" />
        </label>
        {(Object.keys(LIMIT_FLAGS) as LimitField[]).map((k) => (
          <label key={k} className="flex flex-col">
            <span className="font-mono">{LIMIT_FLAGS[k]}</span>
            <input
              name={k}
              value={texts[k]}
              placeholder={PLACEHOLDER[k]}
              onChange={(e) => setTexts({ ...texts, [k]: e.target.value })}
              className={`${field} placeholder:text-zinc-400`}
            />
          </label>
        ))}
        <div className="col-span-2 flex items-center gap-3">
          <Button kind="primary" type="submit" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : 'Save'}
          </Button>
          <span className="text-zinc-500">empty: no limit</span>
          {saved && !save.isPending ? (
            <span role="status" className="text-emerald-700">
              saved
            </span>
          ) : null}
        </div>
      </form>
      <ErrorBox error={save.error} />
      {t.members.length ? <MoveMember team={t} teamNames={teamNames} /> : null}
    </div>
  );
}

/** Moves one of the team's tokens to another team (PUT /api/admin/tokens/:id). */
function MoveMember({ team: t, teamNames }: { team: TeamUse; teamNames: string[] }) {
  const client = useQueryClient();
  const [token, setToken] = useState(String(t.members[0]!.id));
  const others = teamNames.filter((n) => n !== t.name);
  const [to, setTo] = useState(others[0] ?? '');
  const move = useMutation({
    mutationFn: () => call('PUT /api/admin/tokens/:id', { id: token, body: { team: to } }),
    onSettled: () => client.invalidateQueries({ queryKey: keys.teams() }),
  });
  if (!others.length) return null;
  const select = 'rounded border border-zinc-300 px-1.5 py-1 text-sm';
  return (
    <div className="mt-3 border-t border-zinc-100 pt-3 text-xs text-zinc-600">
      <div className="flex flex-wrap items-center gap-2">
        Move
        <select aria-label="token to move" value={token} onChange={(e) => setToken(e.target.value)} className={select}>
          {t.members.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
        </select>
        to
        <select aria-label="team to move it to" value={to} onChange={(e) => setTo(e.target.value)} className={select}>
          {others.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <Button onClick={() => move.mutate()} disabled={move.isPending}>
          Move
        </Button>
      </div>
      <ErrorBox error={move.error} />
    </div>
  );
}

function hasLimits(l: LimitView): boolean {
  return Object.values(limitTexts(l)).some((v) => v !== '');
}

/** The limits as their flags take them (`200/week`, `8h`), '' for none: what the form starts from. */
function limitTexts(l: LimitView): Record<LimitField, string> {
  return {
    gpus: l.gpus === null ? '' : String(l.gpus),
    gpuHours: l.gpuHours === null ? '' : `${hoursText(l.gpuHours)}/${l.period}`,
    queued: l.queued === null ? '' : String(l.queued),
    maxPriority: l.maxPriority === null ? '' : String(l.maxPriority),
    maxHoldTtl: l.maxHoldTtlS === null ? '' : formatDuration(l.maxHoldTtlS),
    maxRuntime: l.maxRuntimeS === null ? '' : formatDuration(l.maxRuntimeS),
  };
}

function limitsLine(l: LimitView): string {
  const t = limitTexts(l);
  const set = (Object.keys(LIMIT_FLAGS) as LimitField[]).filter((k) => t[k]).map((k) => `${LIMIT_FLAGS[k]} ${t[k]}`);
  return set.length ? set.join(', ') : 'none';
}

/** Device-seconds in the chart's days. */
function windowS(t: TeamUse): number {
  return t.daily.reduce((n, d) => n + d.busyS + d.idleS, 0);
}

/** The idle share: of the budget's window with a budget, else of the chart's days; null with no use. */
function idlePct(t: TeamUse): number | null {
  const [used, idle] = t.budget ? [t.budget.usedS, t.budget.idleS] : [windowS(t), t.daily.reduce((n, d) => n + d.idleS, 0)];
  return used > 0 ? Math.round((idle / used) * 100) : null;
}

/** Fair share in plain words: below its share goes first. */
function fairWords(t: TeamUse): { words: string; detail: string; tone: string } {
  const f = t.fairShare;
  if (!f.active) return { words: 'no recent use: goes first', detail: 'no use and nothing queued', tone: 'text-emerald-700' };
  const detail = `${Math.round(f.usePart * 100)}% of recent use for ${Math.round(f.sharePart * 100)}% of the shares`;
  if (Math.abs(f.standing - 1) < 0.05) return { words: 'at its share', detail, tone: 'text-zinc-800' };
  return f.standing < 1
    ? { words: 'below its share: goes first', detail, tone: 'font-medium text-emerald-700' }
    : { words: 'above its share: waits behind', detail, tone: 'font-medium text-amber-700' };
}
