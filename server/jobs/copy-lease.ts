// rc cp's short lease on a free device: a running `cp` job and its lease, taken
// by the same claim as any job's (withLeases): refused when the device was
// quarantined, or its host turned off or removed, since it was shown, and by
// the one-active-lease index when another claim took it first. A device held
// back for a job that a preemption frees is not free for a copy either (a
// scheduling pass leaves it alone too). A copy does not wait in the queue: it
// takes seconds, and a free device is free for it even while jobs wait for
// other devices.
import { RcError } from '../../core/errors';
import type { Identity } from '../auth';
import type { Sql } from '../db';
import { withLeases } from './claim';
import { newJobId } from './submit';

export interface CopyDevice {
  id: number;
  name: string;
  hostName: string;
}

export async function takeCopyLease(sql: Sql, identity: Identity, submitter: string, d: CopyDevice, argv: string[]): Promise<{ id: string; fence: number }> {
  const job = await withLeases(
    sql,
    [d],
    (healthy) => sql`
      insert into jobs (id, kind, submitter, token_id, argv, device_name, state, started_at, host_name, devices, fence)
      select ${newJobId()}, 'cp', ${submitter}, ${identity.tokenId}, ${JSON.stringify(argv)}::text::jsonb, ${d.name}, 'running', now(),
        ${d.hostName}, ${JSON.stringify([d.name])}::text::jsonb, nextval('fence_seq')
      where ${healthy} and not exists (
        select 1 from jobs where state = 'queued' and preempt_until > now() and preempt_devices @> ${JSON.stringify([d.id])}::text::jsonb)
      returning *`,
  );
  if (job) return { id: job.id, fence: job.fence! };
  throw await whyNot(sql, d);
}

/** Why the claim took nothing: the device's state now, in the words rc cp's callers get. */
async function whyNot(sql: Sql, d: CopyDevice): Promise<RcError> {
  const [now] = await sql<{ quarantined: boolean; off: boolean }[]>`
    select d.unhealthy_since is not null as quarantined, h.off_since is not null or h.removed_at is not null as off
    from devices d join hosts h on h.name = d.host_name where d.id = ${d.id}`;
  if (now?.quarantined) return new RcError('quarantined', `${d.name} was quarantined just now; pick another device`);
  if (!now || now.off) return new RcError('unavailable', `${d.hostName} was turned off or removed just now; rc devices shows the host's state`);
  return new RcError('busy', `${d.name} was taken just now; rc cp only copies to or from a device that is free or that you hold`);
}
