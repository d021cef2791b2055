// rc usage: device-hours leased, split into jobs, terminals and holds, and
// how many of them were idle, by submitter, token, team, host or model; with a key,
// the leases behind it.
import { EXIT } from '../../core/exit-codes';
import { idleSharePct, noSignalText } from '../../core/idle';
import type { UsageBy, UsageRow } from '../../protocol/wire';
import type { Client } from '../client';
import { parseFlags, stringFlag } from '../flags';
import { json, out, table, usage as usageError } from '../output';

export const USAGE_HELP = `usage: rc usage [--since 7d] [--by submitter|token|team|host|model] [--json] [<key>]

Device-hours leased in the window (default the last 7 days), split into jobs,
terminals and holds, and how many of those hours the GPUs were idle
(utilisation at most 1% and no compute process). CPU slots have no GPU signal:
their hours count as leased, never as idle. With a <key> of --by (a
submitter, a token id, a team, a host, a model), the leases behind it, longest
first. --by team charges each lease to the team its job's token is in now.
`;

const BY: readonly UsageBy[] = ['submitter', 'token', 'host', 'model', 'team'];

export async function usage(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'usage',
    args,
    [
      { name: 'since', type: 'string' },
      { name: 'by', type: 'string' },
      { name: 'json', type: 'boolean' },
    ],
    false,
  );
  if (parsed.rest.length > 1) usageError('rc usage takes at most one key: rc usage [--by submitter] [<key>]');
  const by = stringFlag(parsed, 'by');
  if (by !== undefined && !BY.includes(by as UsageBy)) usageError(`--by takes one of ${BY.join(', ')}, not ${by}`);
  const key = parsed.rest[0];
  // The controller checks --since (one rule: server/usage.ts); its message names the query key.
  const r = await client.call('GET /api/usage', { query: { since: stringFlag(parsed, 'since'), by: by as UsageBy | undefined, key } });
  if (parsed.flags.has('json')) {
    json(r);
    return EXIT.ok;
  }
  if (r.leases) {
    out(
      table(
        ['JOB', 'KIND', 'SUBMITTER', 'DEVICE', 'FROM', 'LEASED', 'IDLE'],
        r.leases.map((l) => [
          l.jobId,
          KIND[l.kind],
          l.submitter,
          l.device,
          l.from.replace('T', ' ').slice(0, 16),
          hours(l.leasedS),
          l.idleS === null ? 'no signal' : hours(l.idleS),
        ]),
      ),
    );
    out(`${summary(r.total)}\n`);
    return EXIT.ok;
  }
  const line = (row: UsageRow) => [row.key, hours(row.leasedS), hours(row.jobsS), hours(row.terminalsS), hours(row.holdsS), hours(row.idleS), share(row)];
  out(table([r.by.toUpperCase(), 'LEASED', 'JOBS', 'TERMINALS', 'HOLDS', 'IDLE', 'IDLE%'], [...r.rows.map(line), line({ ...r.total, key: 'TOTAL' })]));
  out(`${summary(r.total)}\n`);
  return EXIT.ok;
}

const KIND = { run: 'job', tty: 'terminal', hold: 'hold' } as const;

/** Device-hours: `12.5h`; under an hour in minutes (`40m`), under a minute in seconds (`7s`); `0` for none. */
export function hours(s: number): string {
  if (s < 0.5) return '0';
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  return `${(s / 3600).toFixed(1)}h`;
}

/** The idle share of the leased time that had a GPU signal; `-` with none. */
export function share(row: Pick<UsageRow, 'leasedS' | 'idleS' | 'noSignalS'>): string {
  const pct = idleSharePct(row);
  return pct === null ? '-' : `${pct}%`;
}

/** The total's line: the idle share, then the time with no GPU signal (CPU slots only where there were some). */
export function summary(t: UsageRow): string {
  const idle = share(t);
  const cpu = noSignalText(t, hours);
  return idle === '-' ? `no GPU time with a signal in this window${cpu}` : `${idle} of the leased GPU time was idle${cpu}`;
}
