// rc admin: operator commands. They need an admin token (RC_TOKEN, or RC_ADMIN=1 in a checkout).
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags, stringFlag } from '../flags';
import { usage } from '../output';

export const ADMIN_HELP = `usage: rc admin <command>

  rc admin host add <name>               register a host; prints its worker credential once
  rc admin token create <name> [--admin] create a client (or admin) token; printed once

These need an admin token: RC_TOKEN=<admin token>, or RC_ADMIN=1 inside a checkout
where npm start wrote .rc/local.json.
`;

export async function admin(client: Client, args: readonly string[]): Promise<number> {
  const [group, verb, ...rest] = args;
  if (!group || group === '--help' || group === '-h') { process.stdout.write(ADMIN_HELP); return EXIT.ok; }
  if (group === 'host' && verb === 'add') {
    const parsed = parseFlags('admin host add', rest, [], false);
    if (parsed.rest.length !== 1) usage('rc admin host add <name>');
    const r = await client.json<{ host: string; credential: string }>('POST', '/api/admin/hosts', { name: parsed.rest[0] });
    process.stdout.write(`host ${r.host} registered. Its worker credential (shown once, only its hash is kept):\n\n  ${r.credential}\n\nOn that host: RC_CONTROLLER=<this controller's URL> RC_HOST_TOKEN=${r.credential} RC_HOST_NAME=${r.host} npx rc-worker\n`);
    return EXIT.ok;
  }
  if (group === 'token' && verb === 'create') {
    const parsed = parseFlags('admin token create', rest, [{ name: 'admin', type: 'boolean' }, { name: 'name', type: 'string' }], false);
    const name = parsed.rest[0] ?? stringFlag(parsed, 'name');
    if (!name || parsed.rest.length > 1) usage('rc admin token create <name> [--admin]');
    const r = await client.json<{ token: string; kind: string }>('POST', '/api/admin/tokens', { name, kind: parsed.flags.has('admin') ? 'admin' : 'client' });
    process.stdout.write(`${r.kind} token for ${name} (shown once, only its hash is kept):\n${r.token}\n`);
    return EXIT.ok;
  }
  usage(`unknown admin command: ${[group, verb].filter(Boolean).join(' ')}; see rc admin --help`);
}
