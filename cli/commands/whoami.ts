// rc whoami: the token rc uses, its team, and its limits with what is left of each.
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import { json, out, usage } from '../output';

export const WHOAMI_HELP = `usage: rc whoami [--json]

The token rc uses (RC_TOKEN): its id, name and kind, the submitter names it may
act as, the team its use is charged to, and the limits that bind it (its own
and its team's: the stricter wins) with where it stands against each:

  team vision: gpus 3 of 4 in use; 41.5 of 200 GPU-hours this week, 12.0 of them idle
`;

export async function whoami(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('whoami', args, [{ name: 'json', type: 'boolean' }], false);
  if (parsed.rest.length) usage('rc whoami [--json]');
  const r = await client.call('GET /api/whoami');
  if (parsed.flags.has('json')) {
    json(r);
    return EXIT.ok;
  }
  const acts = r.submitter === null ? 'any submitter name' : r.submitter.endsWith('/') ? `only names under ${r.submitter}` : `only as ${r.submitter}`;
  let text = `token ${r.tokenId} (${r.name}, ${r.kind}), acting as ${acts}, in team ${r.team}\n`;
  if (!r.limits.length) text += 'no limits\n';
  for (const s of r.limits) {
    const l = s.limits;
    const ceilings = [
      l.queued !== null && `at most ${l.queued} jobs waiting`,
      l.maxPriority !== null && `--priority up to ${l.maxPriority}`,
      l.maxHoldTtlS !== null && `holds up to ${formatDuration(l.maxHoldTtlS)}`,
      l.maxRuntimeS !== null && `jobs up to ${formatDuration(l.maxRuntimeS)}`,
    ].filter(Boolean);
    text += `${l.scope.replace(':', ' ')}: ${s.text}${ceilings.length ? `; ${ceilings.join(', ')}` : ''}\n`;
  }
  out(text);
  return EXIT.ok;
}
