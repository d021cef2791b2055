// Quarantines a worker reports or implies: a device it reports unhealthy,
// devices where processes of a previous run could not be killed, and GPUs a
// probe says are failing (a `health` label other than ok).
import type { Hello, Quarantine } from '../protocol/worker';
import type { Sql } from './db';
import { loadDevices } from './fleet';
import { quarantineDevice, quarantinesFromLabels } from './quarantine';

export interface WorkerQuarantineDeps {
  sql: Sql;
  log: (msg: string) => void;
  /** The host's devices changed as the pages show them. */
  changed: (hostName: string) => void;
  /** A quarantine wrote an audit row (the dashboard's audit page). */
  audited?: () => void;
}

export class WorkerQuarantines {
  constructor(private readonly deps: WorkerQuarantineDeps) {}

  readonly quarantine = async (hostName: string, q: Quarantine): Promise<void> => {
    if (await quarantineDevice(this.deps.sql, hostName, q, `host:${hostName}`)) {
      this.deps.log(`quarantined ${hostName}:gpu${q.index}: ${q.reason}`);
      this.deps.changed(hostName);
      this.deps.audited?.();
    }
  };

  /**
   * Devices where the worker found processes it could not kill: quarantined before the
   * hello's reconcile ends their jobs and frees their leases, so no job is given them meanwhile.
   */
  async unkillable(hostName: string, hello: Hello): Promise<void> {
    for (const u of hello.unkillable ?? []) {
      const shown = u.pids.slice(0, 10).join(', ') + (u.pids.length > 10 ? ', …' : '');
      const reason = `processes of job ${u.jobId} from the worker's previous run could not be killed (pid ${shown})`;
      for (const index of u.devices) await this.quarantine(hostName, { index, reason, evidence: { jobId: u.jobId, pids: u.pids.slice(0, 100) } });
    }
  }

  /** A probe saying a GPU is failing (a `health` label other than ok) quarantines it. */
  async fromProbes(hostName: string): Promise<void> {
    const devices = await loadDevices(this.deps.sql, { host: hostName });
    for (const { q } of quarantinesFromLabels(devices)) await this.quarantine(hostName, q);
  }
}
