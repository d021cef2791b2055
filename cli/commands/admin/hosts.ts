// rc admin host add / off / on / rm, rc admin hosts.
import { EXIT } from '../../../core/exit-codes';
import type { Client } from '../../client';
import { parseFlags, stringFlag } from '../../flags';
import { age, errLine, json, out, table, usage } from '../../output';
import { unknownAdmin } from './unknown';

export async function hostCommand(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  // For commands with no verb (rc admin hosts --all): everything after the group.
  const afterGroup = args.slice(1);
  if (group === 'host' && verb === 'add') {
    const parsed = parseFlags('admin host add', rest, [{ name: 'json', type: 'boolean' }], false);
    if (parsed.rest.length !== 1) usage('rc admin host add <name> [--json]');
    const r = await client.call('POST /api/admin/hosts', { body: { name: parsed.rest[0]! } });
    if (parsed.flags.has('json')) {
      json({ host: r.host, credential: r.credential, command: r.command, warning: r.warning });
      return EXIT.ok;
    }
    out(
      `host ${r.host} registered. On that host, as root, run (the key in it is shown only now; rc keeps only its hash):\n\n  ${r.command}\n\n` +
        'It saves the install script as rc-install.sh and runs it only if its SHA-256 is the one above; the script installs the worker package only if its SHA-256 is RC_SHA256. ' +
        'It installs rc-worker (a systemd unit) and starts it; its devices show in rc devices once it connects. ' +
        'Run the same command again to update the worker while the controller runs this version (after an upgrade, the pins no longer match: rc admin host add prints new ones); sudo sh rc-install.sh uninstall removes it.\n',
    );
    if (r.warning) errLine(`rc: warning: ${r.warning}`);
    return EXIT.ok;
  }
  if (group === 'host' && (verb === 'off' || verb === 'on' || verb === 'rm')) {
    const parsed = parseFlags(`admin host ${verb}`, rest, verb === 'off' ? [{ name: 'reason', type: 'string' }] : [], false);
    const name = parsed.rest[0];
    if (!name || parsed.rest.length !== 1) usage(verb === 'off' ? 'rc admin host off <name> [--reason <text>]' : `rc admin host ${verb} <name>`);
    if (verb === 'off') {
      const r = await client.call('POST /api/admin/hosts/:name/off', { name, body: { reason: stringFlag(parsed, 'reason') } });
      out(
        r.already
          ? `host ${name} was already off (since ${age(r.host.off!.since)} ago, by ${r.host.off!.by}); nothing changed
`
          : `host ${name} is off: no new jobs start there; running ones finish (rc devices shows them off (busy)). rc admin host on ${name} takes jobs again
`,
      );
    } else if (verb === 'on') {
      const r = await client.call('POST /api/admin/hosts/:name/on', { name, body: {} });
      out(
        r.already
          ? `host ${name} was not off; nothing changed
`
          : `host ${name} is on: it takes jobs again
`,
      );
    } else {
      const r = await client.call('DELETE /api/admin/hosts/:name', { name });
      out(
        `host ${name} removed: ${r.revokedTokens === 1 ? 'its credential was' : `its ${r.revokedTokens} credentials were`} revoked and its worker cut off; it stops for good and logs how to uninstall it. rc admin hosts --all still lists it; rc admin host add ${name} registers it again
`,
      );
    }
    return EXIT.ok;
  }
  if (group === 'hosts') {
    const parsed = parseFlags(
      'admin hosts',
      afterGroup,
      [
        { name: 'all', type: 'boolean' },
        { name: 'json', type: 'boolean' },
      ],
      false,
    );
    if (parsed.rest.length) usage('rc admin hosts [--all] [--json]');
    const r = await client.call('GET /api/hosts', { query: { all: parsed.flags.has('all') ? '1' : undefined } });
    if (parsed.flags.has('json')) {
      json(r);
      return EXIT.ok;
    }
    out(
      table(
        ['HOST', 'STATUS', 'SEEN', 'WORKER', 'NOTE'],
        r.hosts.map((h) => [
          h.name,
          h.removed ? 'removed' : h.off ? `${h.status}, off` : h.status,
          h.lastSeenAt ? `${age(h.lastSeenAt)} ago` : 'never',
          h.workerVersion ?? '-',
          h.removed
            ? `removed ${age(h.removed.at)} ago by ${h.removed.by}`
            : h.off
              ? `off ${age(h.off.since)} ago by ${h.off.by}${h.off.reason ? `: ${h.off.reason}` : ''}`
              : '-',
        ]),
      ),
    );
    return EXIT.ok;
  }
  return unknownAdmin(group, verb);
}
