// rc admin token create / set / revoke, rc admin tokens.
import { EXIT } from '../../../core/exit-codes';
import type { Client } from '../../client';
import { parseFlags, stringFlag } from '../../flags';
import { age, out, table, usage } from '../../output';
import { unknownAdmin } from './unknown';

export async function tokenCommand(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  if (group === 'token' && verb === 'create') {
    const parsed = parseFlags(
      'admin token create',
      rest,
      [
        { name: 'admin', type: 'boolean' },
        { name: 'name', type: 'string' },
        { name: 'submitter', type: 'string' },
        { name: 'team', type: 'string' },
      ],
      false,
    );
    const name = parsed.rest[0] ?? stringFlag(parsed, 'name');
    if (!name || parsed.rest.length > 1) usage('rc admin token create <name> [--admin] [--submitter <name or prefix/>] [--team <team>]');
    // The controller checks the binding (an empty one too) and the team: one rule, protocol/api.ts.
    const r = await client.call('POST /api/admin/tokens', {
      body: { name, kind: parsed.flags.has('admin') ? 'admin' : 'client', submitter: stringFlag(parsed, 'submitter'), team: stringFlag(parsed, 'team') },
    });
    const bound = r.submitter === null ? '' : `, acting only as ${actsAsText(r.submitter)}`;
    const team = r.team === 'default' ? '' : `, in team ${r.team}`;
    out(`${r.kind} token ${r.id} for ${name}${bound}${team} (shown once, only its hash is kept):\n${r.token}\n`);
    return EXIT.ok;
  }
  if (group === 'tokens') {
    if (verb !== undefined) usage('rc admin tokens');
    const r = await client.call('GET /api/admin/tokens');
    // The TEAM column once some token is in a team other than default: until then, the listing of before teams.
    const teams = r.tokens.some((t) => t.kind !== 'host' && t.team !== 'default');
    out(
      table(
        ['ID', 'NAME', 'KIND', ...(teams ? ['TEAM'] : []), 'ACTS AS', 'HOST', 'CREATED', 'REVOKED'],
        r.tokens.map((t) => [
          String(t.id),
          t.name,
          t.kind,
          ...(teams ? [t.kind === 'host' ? '-' : t.team] : []),
          t.kind === 'host' ? '-' : t.submitter === null ? 'anyone' : actsAsText(t.submitter),
          t.hostName ?? '-',
          `${age(t.createdAt)} ago`,
          t.revokedAt ? `${age(t.revokedAt)} ago` : '-',
        ]),
      ),
    );
    return EXIT.ok;
  }
  if (group === 'token' && verb === 'set') {
    const parsed = parseFlags('admin token set', rest, [{ name: 'team', type: 'string' }], false);
    const token = parsed.rest[0];
    const team = stringFlag(parsed, 'team');
    if (!token || parsed.rest.length !== 1 || !team) usage('rc admin token set <name or id> --team <team>');
    const r = await client.call('PUT /api/admin/tokens/:id', { id: token, body: { team } });
    out(
      r.was === r.token.team
        ? `token ${r.token.id} (${r.token.name}) was in team ${r.token.team} already; nothing changed\n`
        : `token ${r.token.id} (${r.token.name}) moved from team ${r.was} to ${r.token.team}: its use and limits are charged there from now on\n`,
    );
    return EXIT.ok;
  }
  if (group === 'token' && verb === 'revoke') {
    const parsed = parseFlags('admin token revoke', rest, [], false);
    const id = parsed.rest[0];
    if (!id || parsed.rest.length !== 1 || !/^[1-9][0-9]*$/.test(id)) usage('rc admin token revoke <id> (the ID column of rc admin tokens)');
    const r = await client.call('POST /api/admin/tokens/:id/revoke', { id });
    const what = `token ${r.revoked.id} (${r.revoked.kind}, ${r.revoked.name})`;
    out(r.already ? `${what} was already revoked\n` : `${what} revoked: it no longer works, and its open connections were cut\n`);
    return EXIT.ok;
  }
  return unknownAdmin(group, verb);
}

/** A binding as people read it: the name, or `claude/…` for a prefix. */
function actsAsText(submitter: string): string {
  return submitter.endsWith('/') ? `${submitter}…` : submitter;
}
