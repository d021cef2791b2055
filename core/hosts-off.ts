// rc run --explain: the hosts of the matching devices that take no new job
// now, and how many of those devices each has. A device there is listed as
// `off` or `offline` among the others; this says why, per host, at once.
import type { DeviceSummary, HostOff } from '../protocol/wire';

/** The hosts among these devices that are drained (rc admin host off) or not connected, in name order; `reasons`: each drained host's reason, if given. */
export function hostsOff(
  devices: readonly Pick<DeviceSummary, 'hostName' | 'hostOff' | 'hostStatus'>[],
  reasons: ReadonlyMap<string, string | null> = new Map(),
): HostOff[] {
  const byHost = new Map<string, HostOff>();
  for (const d of devices) {
    // Drained wins: a drained host that also lost its worker takes nothing new either way, and an operator chose that.
    const status = d.hostOff ? 'off' : d.hostStatus === 'online' ? null : d.hostStatus;
    if (status === null) continue;
    const seen = byHost.get(d.hostName);
    if (seen) seen.devices += 1;
    else byHost.set(d.hostName, { host: d.hostName, devices: 1, status, reason: status === 'off' ? (reasons.get(d.hostName) ?? null) : null });
  }
  return [...byHost.values()].sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
}

/** One host of hostsOff as a sentence: `host h3 (2 matching devices) is drained (driver upgrade): nothing new starts there until an operator turns it on`. */
export function hostOffText(h: HostOff): string {
  const what = `host ${h.host} (${h.devices} matching device${h.devices === 1 ? '' : 's'})`;
  if (h.status === 'off') {
    return `${what} is drained${h.reason ? ` (${h.reason})` : ''}: nothing new starts there until an operator runs rc admin host on ${h.host}`;
  }
  return h.status === 'away'
    ? `${what} is away: its worker disconnected moments ago; nothing starts there until it is back`
    : `${what} is offline: its worker is not connected; nothing starts there until it is back`;
}
