// rc devices: every device (or the matching ones), its state and holder.
import { selectorOf } from '../placement';
import { formatSize } from '../../core/size';
import { EXIT } from '../../core/exit-codes';
import type { DeviceSummary } from '../../protocol/wire';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import { cut, json, out, table, usage } from '../output';

export const DEVICES_HELP = `usage: rc devices [--select <selector>] [--all] [--json]

Lists every device with its state and holder. States: free; busy (leased);
reserved (free, but held back for a queued job, named in the HOLDER column as
"for <submitter> (<job>)": a multi-GPU job waiting for enough devices on one
host; the jobs behind it in the queue may not take it); off (its host was turned off: no new jobs)
and off (busy) (its job finishes first); offline; unhealthy (quarantined);
removed (only with --all).
  -s, --select <selector>   only devices whose labels match
      --all                 removed hosts' devices too
      --json                the API's JSON: { "devices": [ ... ] } (docs/api.md)
`;

export async function devices(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'devices',
    args,
    [
      { name: 'select', short: 's', type: 'string', repeat: true },
      { name: 'json', type: 'boolean' },
      { name: 'all', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(DEVICES_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length) usage(`rc devices takes no arguments (got ${parsed.rest[0]})`);
  const select = parsed.lists.has('select') ? selectorOf(parsed) : undefined;
  const body = await client.call('GET /api/devices', { query: { select, all: parsed.flags.has('all') ? '1' : undefined } });
  if (parsed.flags.has('json')) {
    json(body);
    return EXIT.ok;
  }
  const rows = body.devices.map((d) => [
    d.name,
    stateText(d),
    d.holder
      ? `${d.holder.submitter} (${d.holder.jobId})`
      : d.reservedFor
        ? `for ${d.reservedFor.submitter} (${d.reservedFor.jobId})`
        : d.unhealthy
          ? `(${cut(d.unhealthy.reason, 50)})`
          : '-',
    d.gpu ? `${d.gpu.utilPct ?? '?'}% ${Math.round(d.gpu.memUsedMiB / 1024)}/${Math.round(d.gpu.memTotalMiB / 1024)}G` : '-',
    summary(d.labels),
  ]);
  out(table(['DEVICE', 'STATE', 'HOLDER', 'GPU', 'LABELS'], rows));
  return EXIT.ok;
}

/** A device's state as people read it: a busy device on a host turned off is "off (busy)". */
export function stateText(d: Pick<DeviceSummary, 'state' | 'hostOff'>): string {
  return d.hostOff && d.state === 'busy' ? 'off (busy)' : d.state;
}

function summary(labels: Record<string, string>): string {
  const parts: string[] = [];
  if (labels.gpu_model) parts.push(`gpu_model=${labels.gpu_model}`);
  if (labels.vram) parts.push(`vram=${/^\d+$/.test(labels.vram) ? formatSize(Number(labels.vram)) : labels.vram}`);
  if (labels.kind) parts.push(`kind=${labels.kind}`);
  return parts.join(' ') || '-';
}
