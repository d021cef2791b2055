// rc admin: operator commands. They need an admin token (RC_TOKEN, or RC_ADMIN=1 in a checkout).
import { auditWho } from '../../core/audit-who';
import { readFileSync } from 'node:fs';
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags, stringFlag } from '../flags';
import { age, cut, errLine, json, out, table, usage } from '../output';

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
  rc admin tokens                        list tokens (never their secrets), revoked ones too
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
  const [group, verb, ...rest] = args;
  // For commands with no verb (rc admin hosts --all): everything after the group.
  const afterGroup = args.slice(1);
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
  if (group === 'audit') {
    const parsed = parseFlags(
      'admin audit',
      afterGroup,
      [
        { name: 'limit', type: 'string' },
        { name: 'since', type: 'string' },
        { name: 'action', type: 'string' },
        { name: 'json', type: 'boolean' },
      ],
      false,
    );
    if (parsed.rest.length) usage('rc admin audit [--limit N] [--since 7d] [--action A] [--json]');
    // The controller validates each (one rule: server/audit-log.ts); its message names the flag's query key.
    const r = await client.call('GET /api/audit', {
      query: { limit: stringFlag(parsed, 'limit'), since: stringFlag(parsed, 'since'), action: stringFlag(parsed, 'action') },
    });
    if (parsed.flags.has('json')) {
      json(r);
      return EXIT.ok;
    }
    out(
      table(
        ['WHEN', 'WHO', 'WHAT', 'TARGET', 'FROM', 'DETAIL'],
        r.entries.map((e) => [
          e.at.replace('T', ' ').slice(0, 19),
          auditWho(e),
          e.action,
          e.target ?? '-',
          e.origin ?? '-',
          e.detail ? cut(JSON.stringify(e.detail), 80) : '-',
        ]),
      ),
    );
    return EXIT.ok;
  }
  if (group === 'token' && verb === 'create') {
    const parsed = parseFlags(
      'admin token create',
      rest,
      [
        { name: 'admin', type: 'boolean' },
        { name: 'name', type: 'string' },
        { name: 'submitter', type: 'string' },
      ],
      false,
    );
    const name = parsed.rest[0] ?? stringFlag(parsed, 'name');
    if (!name || parsed.rest.length > 1) usage('rc admin token create <name> [--admin] [--submitter <name or prefix/>]');
    // The controller checks the binding (an empty one too): one rule, protocol/api.ts.
    const r = await client.call('POST /api/admin/tokens', {
      body: { name, kind: parsed.flags.has('admin') ? 'admin' : 'client', submitter: stringFlag(parsed, 'submitter') },
    });
    const bound = r.submitter === null ? '' : `, acting only as ${actsAsText(r.submitter)}`;
    out(`${r.kind} token ${r.id} for ${name}${bound} (shown once, only its hash is kept):\n${r.token}\n`);
    return EXIT.ok;
  }
  if (group === 'tokens') {
    if (verb !== undefined) usage('rc admin tokens');
    const r = await client.call('GET /api/admin/tokens');
    out(
      table(
        ['ID', 'NAME', 'KIND', 'ACTS AS', 'HOST', 'CREATED', 'REVOKED'],
        r.tokens.map((t) => [
          String(t.id),
          t.name,
          t.kind,
          t.kind === 'host' ? '-' : t.submitter === null ? 'anyone' : actsAsText(t.submitter),
          t.hostName ?? '-',
          `${age(t.createdAt)} ago`,
          t.revokedAt ? `${age(t.revokedAt)} ago` : '-',
        ]),
      ),
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
  if (group === 'sheet' && (verb === 'set' || verb === 'clear')) {
    const [host, file, ...extra] = rest;
    if (!host || extra.length || (verb === 'set' ? !file : file)) usage(verb === 'set' ? 'rc admin sheet set <host> <file|->' : 'rc admin sheet clear <host>');
    const body = verb === 'clear' ? '' : readSheetFile(file!);
    await client.call('PUT /api/hosts/:name/sheet', { name: host, body: { body } });
    out(verb === 'clear' ? `usage sheet of ${host} removed\n` : `usage sheet of ${host} replaced (${Buffer.byteLength(body)} bytes)\n`);
    return EXIT.ok;
  }
  if (group === 'note' && verb === 'set') {
    const [device, text, ...extra] = rest;
    if (!device || text === undefined || extra.length) usage('rc admin note set <host:gpuN> <text>');
    await client.call('PUT /api/devices/:name/note', { name: device, body: { body: text } });
    out(text ? `note on ${device} set\n` : `note on ${device} removed\n`);
    return EXIT.ok;
  }
  if (group === 'probe') {
    if (!verb || rest.length) usage('rc admin probe <host>');
    await client.call('POST /api/admin/hosts/:name/probe', { name: verb });
    out(`asked ${verb} to re-run its probes; rc describe shows the new labels in a moment\n`);
    return EXIT.ok;
  }
  if (group === 'clear') {
    const parsed = parseFlags('admin clear', afterGroup, [{ name: 'reason', type: 'string' }], false);
    const device = parsed.rest[0];
    const reason = stringFlag(parsed, 'reason');
    if (!device || parsed.rest.length !== 1 || !reason) usage('rc admin clear <host:gpuN> --reason "what was checked and why it is fine"');
    const r = await client.call('POST /api/admin/devices/:name/clear', { name: device, body: { reason } });
    out(`${r.cleared} cleared; it was quarantined since ${r.was.since}: ${r.was.reason}\n`);
    return EXIT.ok;
  }
  usage(`unknown admin command: ${[group, verb].filter(Boolean).join(' ')}; see rc admin --help`);
}

function readSheetFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    usage(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** A binding as people read it: the name, or `claude/…` for a prefix. */
function actsAsText(submitter: string): string {
  return submitter.endsWith('/') ? `${submitter}…` : submitter;
}
