// rc admin limit set / show: a team's or a token's limits (core/limits.ts has the rules).
import { formatDuration } from '../../../core/duration';
import { EXIT } from '../../../core/exit-codes';
import type { LimitView, SetLimitsBody } from '../../../protocol/wire';
import type { Client } from '../../client';
import { parseFlags, stringFlag } from '../../flags';
import { json, out, table, usage } from '../../output';
import { unknownAdmin } from './unknown';

/** Each flag of rc admin limit set and the body field it fills (protocol/api.ts SetLimits). */
const FLAGS = [
  ['gpus', 'gpus'],
  ['gpu-hours', 'gpuHours'],
  ['queued', 'queued'],
  ['max-priority', 'maxPriority'],
  ['max-hold-ttl', 'maxHoldTtl'],
  ['max-runtime', 'maxRuntime'],
] as const;

export async function limitCommand(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  if (verb === 'set') {
    const parsed = parseFlags(
      'admin limit set',
      rest,
      FLAGS.map(([name]) => ({ name, type: 'string' as const })),
      false,
    );
    const scope = parsed.rest[0];
    if (!scope || parsed.rest.length !== 1)
      usage(
        'rc admin limit set team:<name>|token:<name or id> [--gpus N] [--gpu-hours H/day|H/week] [--queued N] [--max-priority P] [--max-hold-ttl D] [--max-runtime D]',
      );
    // Passed as written: the controller checks each (one rule: core/limits.ts), its message naming the flag.
    const body: SetLimitsBody = {};
    for (const [flag, field] of FLAGS) {
      const v = stringFlag(parsed, flag);
      if (v !== undefined) body[field] = v;
    }
    const r = await client.call('PUT /api/admin/limits/:scope', { scope, body });
    out(`${r.limits.scope}: ${summary(r.limits)}\n`);
    return EXIT.ok;
  }
  if (verb === 'show') {
    const parsed = parseFlags('admin limit show', rest, [{ name: 'json', type: 'boolean' }], false);
    if (parsed.rest.length > 1) usage('rc admin limit show [team:<name>|token:<name or id>] [--json]');
    const r = await client.call('GET /api/admin/limits', { query: { scope: parsed.rest[0] } });
    if (parsed.flags.has('json')) {
      json(r);
      return EXIT.ok;
    }
    const cell = (v: number | null, f: (n: number) => string = String) => (v === null ? '-' : f(v));
    out(
      table(
        ['SCOPE', 'GPUS', 'GPU-HOURS', 'QUEUED', 'MAX PRIORITY', 'MAX HOLD TTL', 'MAX RUNTIME'],
        r.limits.map((l) => [
          l.scope,
          cell(l.gpus),
          l.gpuHours === null ? '-' : `${l.gpuHours}/${l.period}`,
          cell(l.queued),
          cell(l.maxPriority),
          cell(l.maxHoldTtlS, formatDuration),
          cell(l.maxRuntimeS, formatDuration),
        ]),
      ),
    );
    return EXIT.ok;
  }
  return unknownAdmin(group, verb);
}

function summary(l: LimitView): string {
  const parts = [
    l.gpus !== null && `gpus ${l.gpus}`,
    l.gpuHours !== null && `gpu-hours ${l.gpuHours}/${l.period}`,
    l.queued !== null && `queued ${l.queued}`,
    l.maxPriority !== null && `max-priority ${l.maxPriority}`,
    l.maxHoldTtlS !== null && `max-hold-ttl ${formatDuration(l.maxHoldTtlS)}`,
    l.maxRuntimeS !== null && `max-runtime ${formatDuration(l.maxRuntimeS)}`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no limits';
}
