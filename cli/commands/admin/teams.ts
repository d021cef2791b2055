// rc admin team create / set / list: who shares the fleet, and their weight in fair share.
import { EXIT } from '../../../core/exit-codes';
import type { TeamView } from '../../../protocol/wire';
import type { Client } from '../../client';
import { parseFlags, stringFlag } from '../../flags';
import { json, out, table, usage } from '../../output';
import { unknownAdmin } from './unknown';

export async function teamCommand(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  if (verb === 'create' || verb === 'set') {
    const parsed = parseFlags(`admin team ${verb}`, rest, [{ name: 'share', type: 'string' }], false);
    const name = parsed.rest[0];
    const shareText = stringFlag(parsed, 'share');
    if (!name || parsed.rest.length !== 1 || (verb === 'set' && shareText === undefined))
      usage(verb === 'create' ? 'rc admin team create <name> [--share N]' : 'rc admin team set <name> --share N');
    const share = shareText === undefined ? undefined : Number(shareText);
    if (share !== undefined && (shareText!.trim() === '' || !Number.isFinite(share)))
      usage(`--share takes a number more than 0, such as 1 or 2.5; not ${shareText}`);
    // The controller checks the name and the share's range (one rule: protocol/api.ts).
    const r =
      verb === 'create'
        ? await client.call('POST /api/admin/teams', { body: { name, share } })
        : await client.call('PUT /api/admin/teams/:name', { name, body: { share: share! } });
    out(
      verb === 'create'
        ? `team ${r.team.name} created (share ${r.team.share}); rc admin token create <name> --team ${r.team.name} puts a new token in it, rc admin token set <token> --team ${r.team.name} moves one\n`
        : `team ${r.team.name} has share ${r.team.share} now\n`,
    );
    return EXIT.ok;
  }
  if (verb === 'list') {
    const parsed = parseFlags('admin team list', rest, [{ name: 'json', type: 'boolean' }], false);
    if (parsed.rest.length) usage('rc admin team list [--json]');
    const r = await client.call('GET /api/admin/teams');
    if (parsed.flags.has('json')) {
      json(r);
      return EXIT.ok;
    }
    out(
      table(
        ['TEAM', 'SHARE', 'MEMBERS', 'LIMITS'],
        r.teams.map((t: TeamView) => [t.name, String(t.share), String(t.members), t.limits]),
      ),
    );
    return EXIT.ok;
  }
  return unknownAdmin(group, verb);
}
