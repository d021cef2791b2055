// rc admin: operator commands. They need an admin token (RC_TOKEN, or RC_ADMIN=1 in a checkout).
// Each group of commands is a file of this folder; this one has the help and sends each command to its group.
import { EXIT } from '../../../core/exit-codes';
import type { Client } from '../../client';
import { out } from '../../output';
import { fleetCommand } from './fleet';
import { hostCommand } from './hosts';
import { limitCommand } from './limits';
import { teamCommand } from './teams';
import { tokenCommand } from './tokens';
import { unknownAdmin } from './unknown';

export const ADMIN_HELP = `usage: rc admin <command>

  rc admin host add <name> [--json]      register a host; prints the one command that installs its
                                         worker, with the host's key (shown only now), pinning the
                                         SHA-256 of the install script and of the worker package
  rc admin host off <name> [--reason <text>]
                                         no new jobs on it; the running ones finish (off (busy))
  rc admin host on <name>                it takes jobs again
  rc admin host rm <name>                remove it: its credential is revoked and its worker stops
                                         for good (refused while jobs run there: turn it off first)
  rc admin hosts [--all] [--json]        every host: status, off or removed (--all: removed ones too)
  rc admin audit [--limit N] [--since 7d] [--action A] [--json]
                                         the audit log, newest first: who did what, when, from where
  rc admin token create <name> [--admin] create a client (or admin) token; printed once
      [--submitter <name or prefix/>]    bind a client token: it may act only as that name,
                                         or with a trailing /, only as names under it
      [--team <team>]                    the team its use and limits are charged to
                                         (default: default)
  rc admin token set <name or id> --team <team>
                                         move a token to another team (a name must name one
                                         live token; else give its id)
  rc admin tokens                        list tokens (never their secrets) and their teams,
                                         revoked ones too
  rc admin team create <name> [--share N]
                                         a team; --share weighs it in fair share (default 1)
  rc admin team set <name> --share N     change a team's share
  rc admin team list [--json]            every team: share, members (live tokens), limits
  rc admin limit set <scope> [--gpus N] [--gpu-hours H/day|H/week] [--queued N]
      [--max-priority P] [--max-hold-ttl D] [--max-runtime D]
                                         set a team's (team:vision) or a token's (token:agent-a,
                                         token:12) limits; the others are kept, and none clears
                                         one (--gpus none). --gpus: devices leased at once;
                                         --gpu-hours: a rolling budget of device-hours (idle ones
                                         count); --queued: jobs waiting at once; --max-priority,
                                         --max-hold-ttl, --max-runtime: ceilings (a job with no
                                         --max-runtime gets the ceiling). A token's and its
                                         team's limits both apply; past one, a submit is refused
                                         (over_limit)
  rc admin limit show [<scope>] [--json] every scope's limits, or one's
  rc admin token revoke <id>             revoke a token (an id from rc admin tokens); it stops
                                         working at once, and its open connections are cut
  rc admin sheet set <host> <file|->     replace the host's Markdown usage sheet (- reads stdin)
  rc admin sheet clear <host>            remove it
  rc admin note set <host:gpuN> <text>   a note on one device ('' removes it)
  rc admin probe <host>                  ask the host's worker to re-run its probes now
  rc admin clear <host:gpuN> --reason <text>
                                         clear a quarantined (unhealthy) device after you
                                         checked it; audited with your reason

These need an admin token: RC_TOKEN=<admin token>, or RC_ADMIN=1 inside a checkout
where npm start wrote .rc/local.json.
`;

/**
 * The help of one admin subcommand (`admin token create`): ADMIN_HELP's
 * entries for it (an entry is its line and the indented lines under it), or
 * for its group when the verb has none (`admin host`), with the note on tokens.
 */
export function adminHelpFor(command: string): string {
  const [head, body = ''] = ADMIN_HELP.split('\n\n');
  const entries: string[] = [];
  for (const line of body.split('\n')) {
    if (/^ {2}rc /.test(line)) entries.push(line);
    else if (entries.length && line.trim()) entries[entries.length - 1] += `\n${line}`;
  }
  const pick = (prefix: string) => entries.filter((e) => e.slice(2).startsWith(prefix));
  const words = command.split(' ');
  let found: string[] = [];
  let n = words.length;
  for (; n >= 2 && !found.length; n--) found = pick(`rc ${words.slice(0, n).join(' ')}`);
  if (!found.length) return ADMIN_HELP;
  return `${head!.replace('<command>', words.slice(1, n + 1).join(' '))}\n\n${found.join('\n')}\n\n${ADMIN_HELP.split('\n\n').slice(2).join('\n\n')}`;
}

export async function admin(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb] = args;
  if (!group || group === '--help' || group === '-h') {
    out(ADMIN_HELP);
    return EXIT.ok;
  }
  // rc admin token create --help, rc admin host --help: that subcommand's (or group's) lines.
  const helpAt = args.findIndex((a) => a === '--help' || a === '-h');
  if (helpAt >= 0 && !args.slice(0, helpAt).includes('--')) {
    out(adminHelpFor(['admin', ...args.slice(0, helpAt)].join(' ')));
    return EXIT.ok;
  }
  switch (group) {
    case 'host':
    case 'hosts':
      return hostCommand(client, args);
    case 'token':
    case 'tokens':
      return tokenCommand(client, args);
    case 'team':
      return teamCommand(client, args);
    case 'limit':
      return limitCommand(client, args);
    case 'audit':
    case 'sheet':
    case 'note':
    case 'probe':
    case 'clear':
      return fleetCommand(client, args);
    default:
      return unknownAdmin(group, verb);
  }
}
