// What a queued job waits on when it waits for a provider machine (GET /api/queue,
// rc ps, the Queue page): `booting machine m… (local, 1× H100, $2.10/h simulated)`,
// or the RC_MAX_MACHINES cap. Reads only.
import { machineShapeText } from '../../core/machine-text';
import type { Sql } from '../db';

interface MachineOfJob {
  jobId: string;
  id: string;
  account: string;
  state: string;
  pricePerHour: number;
  simulated: boolean;
  spot: boolean;
  gpuModel: string | null;
  gpuCount: number;
}

const VERB: Record<string, string> = { provisioning: 'launching', booting: 'booting', idle: 'starting on', busy: 'starting on', offline: 'waiting for' };

/** The sentence for each of `jobs` that has a machine, or (a --cloud-only one) waits for one; jobs absent wait on devices as before. */
export async function machineWaits(sql: Sql, jobs: readonly { id: string; placement: string }[], maxMachines: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (!jobs.length) return out;
  const machines = await sql<MachineOfJob[]>`
    select job_id, id, account, state, price_per_hour, simulated, spot, offer->>'gpuModel' as gpu_model, coalesce((offer->>'gpuCount')::int, 0) as gpu_count
    from machines where job_id = any(${jobs.map((j) => j.id)}::text[]) and state <> 'terminated'`;
  for (const m of machines) out.set(m.jobId, `${VERB[m.state] ?? m.state} machine ${m.id} (${machineShapeText(m)})`);
  const cloud = jobs.filter((j) => j.placement === 'cloud' && !out.has(j.id));
  if (!cloud.length) return out;
  const [live] = await sql<{ n: number }[]>`select count(*)::int as n from machines where state <> 'terminated'`;
  const text =
    live!.n >= maxMachines
      ? `waiting for a provider machine: ${live!.n} are live, RC_MAX_MACHINES allows ${maxMachines}`
      : 'waiting for a provider machine that fits (rc offers lists them)';
  for (const j of cloud) out.set(j.id, text);
  return out;
}
