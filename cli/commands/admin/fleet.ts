// rc admin audit, sheet set / clear, note set, probe, clear: the fleet's records and devices.
import { readFileSync } from 'node:fs';
import { auditWho } from '../../../core/audit-who';
import { EXIT } from '../../../core/exit-codes';
import type { Client } from '../../client';
import { parseFlags, stringFlag } from '../../flags';
import { cut, json, out, table, usage } from '../../output';
import { unknownAdmin } from './unknown';

export async function fleetCommand(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  // For commands with no verb (rc admin hosts --all): everything after the group.
  const afterGroup = args.slice(1);
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
  return unknownAdmin(group, verb);
}

function readSheetFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    usage(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
