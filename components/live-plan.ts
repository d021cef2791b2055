// What a page fetches again after the live view's changes (server/live.ts):
// pure, so the rule is tested apart from sockets and React. A change on one
// host refetches that host's part of the fleet; a burst over many hosts, or a
// change that names none, refetches the fleet whole.
import type { LiveChange } from '../protocol/events';
import type { Fleet } from '../protocol/wire';

/** Past this many hosts in one batch, one whole fetch is cheaper than one per host. */
export const MAX_HOST_FETCHES = 16;

export interface RefetchPlan {
  /** Fetch the whole fleet again. */
  fleet: boolean;
  /** Or only these hosts' parts of it. */
  hosts: string[];
  /** Query key prefixes to invalidate (react-query refetches those in use). */
  invalidate: string[][];
}

export function planRefetch(changes: readonly LiveChange[]): RefetchPlan {
  let fleet = false;
  const hosts = new Set<string>();
  const keys = new Map<string, string[]>();
  const add = (...key: string[]) => keys.set(JSON.stringify(key), key);
  for (const c of changes) {
    switch (c.what) {
      case 'devices':
        if (c.host) {
          hosts.add(c.host);
          add('host', c.host);
        } else {
          fleet = true;
          add('host');
        }
        add('device');
        add('queue');
        break;
      case 'jobs':
        add('jobs');
        add('queue');
        add('holds');
        add(...(c.jobId ? ['job', c.jobId] : ['job']));
        add('device');
        add('host');
        // A team's GPUs in use and jobs queued.
        add('teams');
        break;
      case 'sheet':
        add(...(c.host ? ['host', c.host] : ['host']));
        add('device');
        break;
      case 'samples':
        // The sparklines, and a host's or device's page ("GPU now"); the fleet's own numbers come from the sparklines' last sample.
        add('samples');
        add('host');
        add('device');
        break;
      case 'audit':
        add('audit');
        // Every change of a team, a membership or a limit is audited.
        add('teams');
        break;
      case 'notices':
        add('notices');
        break;
    }
  }
  if (hosts.size > MAX_HOST_FETCHES) fleet = true;
  return { fleet, hosts: fleet ? [] : [...hosts].sort(), invalidate: [...keys.values()] };
}

/** The fleet with these hosts' parts replaced (a host gone from `parts` is gone), in the server's order: host name, then device index. */
export function patchFleet(old: Fleet, hosts: readonly string[], parts: readonly Fleet[]): Fleet {
  const replaced = new Set(hosts);
  const hostRows = [...old.hosts.filter((h) => !replaced.has(h.name)), ...parts.flatMap((p) => p.hosts)].sort((a, b) => cmp(a.name, b.name));
  const devices = [...old.devices.filter((d) => !replaced.has(d.hostName)), ...parts.flatMap((p) => p.devices)].sort(
    (a, b) => cmp(a.hostName, b.hostName) || a.index - b.index,
  );
  return { hosts: hostRows, devices, queued: parts.at(-1)?.queued ?? old.queued };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
